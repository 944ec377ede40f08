package unittest_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/loader"
	"github.com/gavelpolicy/gavel/policytest"
)

// policies compiles the policy folder once for every test of the package.
var policies = sync.OnceValues(func() (*engine.PolicySet, error) {
	src, err := loader.Load("testdata/policies")
	if err != nil {
		return nil, err
	}
	eng, err := engine.New()
	if err != nil {
		return nil, err
	}
	return eng.Compile(src.Policies...)
})

func compiled(t *testing.T) *engine.PolicySet {
	t.Helper()
	set, err := policies()
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// pod builds a Pod in a namespace with labels and one container image.
func pod(namespace string, labels map[string]any, image string) map[string]any {
	md := map[string]any{"name": "p", "namespace": namespace}
	if labels != nil {
		md["labels"] = labels
	}
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   md,
		"spec": map[string]any{
			"containers": []any{map[string]any{"name": "c", "image": image}},
		},
	}
}

// statuses maps "policy/rule" to the status of each rule that applied.
func statuses(resp *engine.Response) map[string]engine.Status {
	out := map[string]engine.Status{}
	for p, r := range resp.Rules() {
		out[p.Policy.Source().GetName()+"/"+r.Name] = r.Status
	}
	return out
}

// TestValidate is the table: a resource and the expected status of every
// rule that applies to it (a rule missing from want must not apply).
func TestValidate(t *testing.T) {
	const (
		tag    = "disallow-latest-tag/require-image-tag"
		latest = "disallow-latest-tag/validate-image-tag"
		labels = "require-labels/check-for-labels"
	)
	named := map[string]any{"app.kubernetes.io/name": "web"}
	tests := []struct {
		name    string
		obj     map[string]any
		want    map[string]engine.Status
		blocked bool
	}{
		{
			name: "tagged and labelled",
			obj:  pod("shop", named, "nginx:1.27"),
			want: map[string]engine.Status{tag: engine.StatusPass, latest: engine.StatusPass, labels: engine.StatusPass},
		},
		{
			name:    "latest tag is blocked",
			obj:     pod("shop", named, "nginx:latest"),
			want:    map[string]engine.Status{tag: engine.StatusPass, latest: engine.StatusFail, labels: engine.StatusPass},
			blocked: true,
		},
		{
			name:    "no tag is blocked",
			obj:     pod("shop", named, "nginx"),
			want:    map[string]engine.Status{tag: engine.StatusFail, latest: engine.StatusPass, labels: engine.StatusPass},
			blocked: true,
		},
		{
			name: "missing label is an Audit failure only",
			obj:  pod("shop", nil, "nginx:1.27"),
			want: map[string]engine.Status{tag: engine.StatusPass, latest: engine.StatusPass, labels: engine.StatusFail},
		},
		{
			name: "kube-system is excluded from the label rule",
			obj:  pod("kube-system", nil, "registry.k8s.io/pause:3.9"),
			want: map[string]engine.Status{tag: engine.StatusPass, latest: engine.StatusPass},
		},
		{
			name: "other kinds are not matched",
			obj:  map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "shop"}},
			want: map[string]engine.Status{},
		},
	}
	set := compiled(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: tt.obj})
			if err != nil {
				t.Fatal(err)
			}
			if got := statuses(resp); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("statuses = %v\nwant       %v", got, tt.want)
			}
			if resp.Blocked() != tt.blocked {
				t.Errorf("blocked = %v, want %v", resp.Blocked(), tt.blocked)
			}
		})
	}
}

// TestMessages pins the message a user sees when a rule fails.
func TestMessages(t *testing.T) {
	resp, err := compiled(t).Validate(context.Background(), &engine.Request{Object: pod("shop", nil, "nginx:latest")})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"validate-image-tag": "validation error: Using a mutable image tag e.g. 'latest' is not allowed. rule validate-image-tag failed at path /spec/containers/0/image/",
		"check-for-labels":   "validation error: The label `app.kubernetes.io/name` is required. rule check-for-labels failed at path /metadata/labels/",
	}
	for _, r := range resp.Rules() {
		if w, ok := want[r.Name]; ok && r.Message != w {
			t.Errorf("%s: message\n%q\nwant\n%q", r.Name, r.Message, w)
		}
	}
}

// TestMutate checks the mutated object and the skip by precondition.
func TestMutate(t *testing.T) {
	const rule = "add-default-securitycontext/add-default-securitycontext"
	tests := []struct {
		name   string
		obj    map[string]any
		status engine.Status
		want   string // expected spec.securityContext, as YAML
	}{
		{"adds defaults", pod("shop", nil, "nginx:1.27"), engine.StatusPass, "runAsNonRoot: true\nrunAsUser: 1000\n"},
		{"keeps explicit values", withSecurityContext(pod("shop", nil, "nginx:1.27"), map[string]any{"runAsUser": 2000}), engine.StatusPass, "runAsNonRoot: true\nrunAsUser: 2000\n"},
		{"skips kube-system", pod("kube-system", nil, "nginx:1.27"), engine.StatusSkip, "null\n"},
	}
	set := compiled(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := set.Mutate(context.Background(), &engine.Request{Object: tt.obj})
			if err != nil {
				t.Fatal(err)
			}
			if got := statuses(resp)[rule]; got != tt.status {
				t.Errorf("status = %q, want %q", got, tt.status)
			}
			sc, _ := yaml.Marshal(resp.Resource["spec"].(map[string]any)["securityContext"])
			if string(sc) != tt.want {
				t.Errorf("securityContext:\n%s\nwant:\n%s", sc, tt.want)
			}
		})
	}
}

func withSecurityContext(obj map[string]any, sc map[string]any) map[string]any {
	obj["spec"].(map[string]any)["securityContext"] = sc
	return obj
}

// TestKyvernoTestFile runs the upstream-format test file; "gavel test
// testdata" and "kyverno test testdata" run the same file.
func TestKyvernoTestFile(t *testing.T) {
	test, err := policytest.Load("testdata/kyverno-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := policytest.Run(context.Background(), test, policytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 11 {
		t.Errorf("%d entries, want 11", len(rows))
	}
	for _, r := range rows {
		name := fmt.Sprintf("%s/%s/%s/%s", r.Policy, r.Rule, r.Kind, r.Resource)
		t.Run(name, func(t *testing.T) {
			if !r.Passed {
				t.Errorf("want %s, got %q: %s (%s)", r.Expected, r.Got, r.Reason, r.Message)
			}
		})
	}
}
