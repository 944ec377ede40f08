package podsecurity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"sigs.k8s.io/yaml"
)

// The conformance cases under testdata/conformance are copies of the
// project's conformance corpus: kyverno/policies pod-security/subrule (CLI
// tests and chainsaw manifests) and the seed cases exceptions-psa-*, whose
// expected results were produced by the upstream CLI.

type cliTest struct {
	Policies   []string `json:"policies"`
	Resources  []string `json:"resources"`
	Exceptions []string `json:"exceptions"`
	Results    []struct {
		Policy    string   `json:"policy"`
		Rule      string   `json:"rule"`
		Kind      string   `json:"kind"`
		Resources []string `json:"resources"`
		Result    string   `json:"result"`
	} `json:"results"`
}

type testPolicy struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Rules []struct {
			Name     string `json:"name"`
			Validate struct {
				PodSecurity *api.PodSecurity `json:"podSecurity"`
			} `json:"validate"`
		} `json:"rules"`
	} `json:"spec"`
}

type testException struct {
	Spec struct {
		Exceptions []struct {
			PolicyName string   `json:"policyName"`
			RuleNames  []string `json:"ruleNames"`
		} `json:"exceptions"`
		Match struct {
			Any []struct {
				Resources struct {
					Kinds      []string `json:"kinds"`
					Namespaces []string `json:"namespaces"`
				} `json:"resources"`
			} `json:"any"`
		} `json:"match"`
		PodSecurity []api.PodSecurityStandard `json:"podSecurity"`
	} `json:"spec"`
}

func decodeInto(t *testing.T, obj map[string]any, out any) {
	t.Helper()
	raw, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// exceptionExcludes returns the podSecurity exemptions of the exceptions
// matching the policy, rule and resource. The match is the small subset the
// corpus uses (kinds and namespaces); full matching is the engine's job.
func exceptionExcludes(excs []testException, policy, rule string, obj map[string]any) []api.PodSecurityStandard {
	kind, _ := obj["kind"].(string)
	ns, _, _ := nested(obj, []string{"metadata", "namespace"})
	nsName, _ := ns.(string)
	var out []api.PodSecurityStandard
	for _, ex := range excs {
		named := false
		for _, e := range ex.Spec.Exceptions {
			if e.PolicyName == policy && contains(e.RuleNames, rule) {
				named = true
			}
		}
		if !named {
			continue
		}
		matched := false
		for _, any := range ex.Spec.Match.Any {
			r := any.Resources
			if (len(r.Kinds) == 0 || contains(r.Kinds, kind)) && (len(r.Namespaces) == 0 || contains(r.Namespaces, nsName)) {
				matched = true
			}
		}
		if matched {
			out = append(out, ex.Spec.PodSecurity...)
		}
	}
	return out
}

func findResource(objs []map[string]any, kind, ref string) map[string]any {
	ns, name := "", ref
	if i := strings.Index(ref, "/"); i >= 0 {
		ns, name = ref[:i], ref[i+1:]
	}
	for _, o := range objs {
		k, _ := o["kind"].(string)
		n, _, _ := nested(o, []string{"metadata", "name"})
		s, _, _ := nested(o, []string{"metadata", "namespace"})
		if k == kind && n == name && (ns == "" || s == ns) {
			return o
		}
	}
	return nil
}

func TestConformanceCLI(t *testing.T) {
	dirs, err := filepath.Glob("testdata/conformance/*/*/kyverno-test.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no conformance cases: %v", err)
	}
	for _, testFile := range dirs {
		dir := filepath.Dir(testFile)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			data, err := os.ReadFile(testFile)
			if err != nil {
				t.Fatal(err)
			}
			var ct cliTest
			if err := yaml.Unmarshal(data, &ct); err != nil {
				t.Fatal(err)
			}
			checks := map[string]*Check{}
			for _, p := range ct.Policies {
				for _, obj := range mustReadObjects(t, filepath.Join(dir, p)) {
					var pol testPolicy
					decodeInto(t, obj, &pol)
					for _, r := range pol.Spec.Rules {
						if r.Validate.PodSecurity != nil {
							checks[pol.Metadata.Name+"/"+r.Name] = mustCompile(t, *r.Validate.PodSecurity, r.Name)
						}
					}
				}
			}
			var resources []map[string]any
			for _, r := range ct.Resources {
				resources = append(resources, mustReadObjects(t, filepath.Join(dir, r))...)
			}
			var excs []testException
			for _, e := range ct.Exceptions {
				for _, obj := range mustReadObjects(t, filepath.Join(dir, e)) {
					var ex testException
					decodeInto(t, obj, &ex)
					excs = append(excs, ex)
				}
			}
			n := 0
			for _, want := range ct.Results {
				chk := checks[want.Policy+"/"+want.Rule]
				if chk == nil {
					t.Fatalf("no rule %s/%s", want.Policy, want.Rule)
				}
				for _, ref := range want.Resources {
					obj := findResource(resources, want.Kind, ref)
					if obj == nil {
						t.Fatalf("no resource %s %s", want.Kind, ref)
					}
					res := mustEvaluate(t, chk, obj, exceptionExcludes(excs, want.Policy, want.Rule, obj))
					if got := res.status(); got != want.Result {
						t.Errorf("%s: got %s, want %s\n%s", ref, got, want.Result, res.Message)
					}
					n++
				}
			}
			if n == 0 {
				t.Fatal("no result checked")
			}
		})
	}
}

// TestConformanceChainsaw runs the chainsaw manifests of the subrule
// policies: every good Pod or controller passes, every bad one fails.
func TestConformanceChainsaw(t *testing.T) {
	files, err := filepath.Glob("testdata/conformance/subrule/*/chainsaw-*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no chainsaw manifests: %v", err)
	}
	for _, f := range files {
		dir := filepath.Dir(f)
		var pol testPolicy
		decodeInto(t, mustReadObjects(t, filepath.Join(dir, "policy.yaml"))[0], &pol)
		rule := pol.Spec.Rules[0]
		chk := mustCompile(t, *rule.Validate.PodSecurity, rule.Name)
		want := "pass"
		if strings.HasSuffix(f, "-bad.yaml") {
			want = "fail"
		}
		for _, obj := range mustReadObjects(t, f) {
			name, _, _ := nested(obj, []string{"metadata", "name"})
			t.Run(filepath.Base(dir)+"/"+obj["kind"].(string)+"/"+name.(string), func(t *testing.T) {
				res := mustEvaluate(t, chk, obj, nil)
				if got := res.status(); got != want {
					t.Errorf("got %s, want %s\n%s", got, want, res.Message)
				}
			})
		}
	}
}
