package autogen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
)

// TestValidatingPolicyGolden compares the variants of the ValidatingPolicies
// of testdata/vpol with expected-variants.json (-update rewrites them).
func TestValidatingPolicyGolden(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/vpol/*")
	if len(dirs) == 0 {
		t.Fatal("no cases")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			f, err := os.Open(filepath.Join(dir, "policy.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			docs, err := api.ReadDocuments(f, "policy.yaml")
			if err != nil {
				t.Fatal(err)
			}
			p, err := api.DecodePolicy(docs[0])
			if err != nil {
				t.Fatal(err)
			}
			spec := &p.(*api.ValidatingPolicy).Spec
			before, _ := json.Marshal(spec)
			variants, err := ValidatingPolicy(spec)
			if err != nil {
				t.Fatal(err)
			}
			if after, _ := json.Marshal(spec); string(after) != string(before) {
				t.Error("the policy's spec was modified")
			}
			got, err := json.MarshalIndent(variants, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "expected-variants.json")
			if *update {
				if err := os.WriteFile(file, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if string(want) != string(got)+"\n" {
				t.Errorf("variants differ from %s:\n%s", file, got)
			}
		})
	}
}

func TestCanGenerate(t *testing.T) {
	pods := admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}
	named := pods
	named.ResourceNames = []string{"a"}
	deployments := pods
	deployments.APIGroups, deployments.Resources = []string{"apps"}, []string{"deployments"}
	tests := []struct {
		name string
		m    *admissionregistrationv1.MatchResources
		want bool
	}{
		{"nil", nil, false},
		{"pods", &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{pods}}, true},
		{"empty object selector", &admissionregistrationv1.MatchResources{ObjectSelector: &metav1.LabelSelector{},
			ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{pods}}, true},
		{"object selector", &admissionregistrationv1.MatchResources{ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
			ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{pods}}, false},
		{"exclusions", &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{pods},
			ExcludeResourceRules: []admissionregistrationv1.NamedRuleWithOperations{pods}}, false},
		{"two rules", &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{pods, pods}}, false},
		{"resource names", &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{named}}, false},
		{"not pods", &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{deployments}}, false},
	}
	for _, tt := range tests {
		if got := CanGenerate(tt.m); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}
