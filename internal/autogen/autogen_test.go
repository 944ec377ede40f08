package autogen

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
)

var update = flag.Bool("update", false, "rewrite testdata/*/expected-rules.yaml")

// golden is the content of an expected-rules.yaml file.
type golden struct {
	Controllers []string   `json:"controllers"`
	Rules       []api.Rule `json:"rules"`
}

func loadPolicy(t testing.TB, path string) api.ClassicPolicy {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	docs, err := api.ReadDocuments(f, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if isPolicyDoc(d) {
			p, err := api.DecodePolicy(d)
			if err != nil {
				t.Fatal(err)
			}
			return p.(api.ClassicPolicy)
		}
	}
	t.Fatalf("%s: no policy", path)
	return nil
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/*/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 20 {
		t.Fatalf("found only %d golden cases", len(dirs))
	}
	for _, path := range dirs {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			p := loadPolicy(t, path)
			before := mustJSON(t, p)
			rules, err := Expand(p)
			if err != nil {
				t.Fatalf("Expand: %v", err)
			}
			if after := mustJSON(t, p); !bytes.Equal(before, after) {
				t.Fatalf("policy was modified")
			}
			got, err := yaml.Marshal(golden{
				Controllers: Controllers(p.GetAnnotations(), p.GetSpec()),
				Rules:       rules,
			})
			if err != nil {
				t.Fatal(err)
			}
			want := filepath.Join(dir, "expected-rules.yaml")
			if *update {
				if err := os.WriteFile(want, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			exp, err := os.ReadFile(want)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(exp, got) {
				t.Errorf("output differs from %s (run go test -update to accept):\n%s", want, got)
			}
		})
	}
}

// TestGoldenSharesNothing checks that generated rules do not alias the
// policy: changing every map of the output leaves the policy as it was.
func TestGoldenSharesNothing(t *testing.T) {
	p := loadPolicy(t, "testdata/synth-mutate-targets-and-order/policy.yaml")
	before := mustJSON(t, p)
	rules := Rules(p)
	n := len(p.GetSpec().Rules)
	for i := n; i < len(rules); i++ {
		scribble(rules[i].Mutation.PatchStrategicMerge)
		for _, fe := range rules[i].Mutation.ForEachMutation {
			scribble(fe.PatchStrategicMerge)
			scribble(fe.Preconditions)
		}
		for j := range rules[i].Context {
			rules[i].Context[j].APICall.URLPath = "changed"
		}
	}
	if after := mustJSON(t, p); !bytes.Equal(before, after) {
		t.Fatalf("generated rules alias the policy")
	}
}

func scribble(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			scribble(c)
			t[k] = "changed"
		}
		t["added"] = true
	case []any:
		for i := range t {
			scribble(t[i])
			t[i] = "changed"
		}
	}
}

func TestOriginal(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"require-image-tag", "require-image-tag", false},
		{"autogen-require-image-tag", "require-image-tag", true},
		{"autogen-cronjob-require-image-tag", "require-image-tag", true},
		{"autogen-", "", true},
		{"autogencronjob-x", "autogencronjob-x", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := Original(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Original(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestRuleName(t *testing.T) {
	long := "too-long-this-rule-name-will-be-truncated-to-63-characters"
	tests := []struct{ prefix, name, want string }{
		{"autogen", "valid-rule-name", "autogen-valid-rule-name"},
		{"autogen", long, "autogen-too-long-this-rule-name-will-be-truncated-to-63-charact"},
		{"autogen-cronjob", "valid-rule-name", "autogen-cronjob-valid-rule-name"},
		{"autogen-cronjob", long, "autogen-cronjob-too-long-this-rule-name-will-be-truncated-to-63"},
	}
	for _, tt := range tests {
		if got := ruleName(tt.prefix, tt.name); got != tt.want {
			t.Errorf("ruleName(%q, %q) = %q, want %q", tt.prefix, tt.name, got, tt.want)
		}
	}
}

func TestContainsKind(t *testing.T) {
	tests := []struct {
		list []string
		want bool
	}{
		{[]string{"Pod"}, true},
		{[]string{"v1/Pod"}, true},
		{[]string{"*/Pod"}, true},
		{[]string{"Pod/exec"}, true},
		{[]string{"Pod.status"}, true},
		{[]string{"v1/Pod.status"}, true},
		{[]string{"v1/Pod/status"}, true},
		{[]string{"core/v1/Pod"}, true},
		{[]string{"metrics.k8s.io/v1beta1/Pod/x/y"}, false},
		{[]string{"PodTemplate"}, false},
		{[]string{"Deployment", "Pod"}, true},
		{nil, false},
	}
	for _, tt := range tests {
		if got := containsKind(tt.list, "Pod"); got != tt.want {
			t.Errorf("containsKind(%q, Pod) = %v, want %v", tt.list, got, tt.want)
		}
	}
}

func TestShiftReferences(t *testing.T) {
	tests := []struct {
		name, value, shift, pivot, want string
	}{
		{"none", "no references", "spec/template", "pattern", "no references"},
		{"initial", "$(pattern/spec/x) is bad", "spec/template", "pattern",
			"$(pattern/spec/template/spec/x) is bad"},
		{"inner", "value $(pattern/spec/x)", "spec/template", "pattern",
			"value $(pattern/spec/template/spec/x)"},
		{"escaped", `value \$(pattern/spec/x)`, "spec/template", "pattern", `value \$(pattern/spec/x)`},
		{"relative", "value $(./x)", "spec/template", "pattern", "value $(./x)"},
		{"anyPattern", "v $(anyPattern/1/spec/x) $(anyPattern/1/spec/y)", "spec/template", "anyPattern",
			"v $(anyPattern/1/spec/template/spec/x) $(anyPattern/1/spec/template/spec/y)"},
		{"anyPattern-first-index-wins", "v $(anyPattern/0/a) $(anyPattern/1/b)", "s", "anyPattern",
			"v $(anyPattern/0/s/a) $(anyPattern/1/b)"},
		{"anyPattern-short-no-pivot", "$(x)", "s", "anyPattern", "$(x)"},
		{"twice", "$(deny/a) and $(deny/a)", "s", "deny", "$(deny/s/a) and $(deny/s/a)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := shiftReferences(tt.value, tt.shift, tt.pivot); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRewriteVariables(t *testing.T) {
	tests := []struct {
		in          string
		cronJob     bool
		cel         bool
		want        string
		description string
	}{
		{"request.object.spec", false, false, "request.object.spec.template.spec", "pod spec"},
		{"request.oldObject.spec", false, false, "request.oldObject.spec.template.spec", "pod old spec"},
		{"request.object.metadata", false, false, "request.object.spec.template.metadata", "pod metadata"},
		{"request.oldObject.metadata.x", false, false, "request.oldObject.spec.template.metadata.x", "pod old metadata"},
		{`request."object".metadata`, false, false, `request."object".metadata`, "quoted"},
		{"request.object.spec", true, false, "request.object.spec.jobTemplate.spec.template.spec", "cronjob spec"},
		{"request.oldObject.metadata", true, false, "request.oldObject.spec.jobTemplate.spec.template.metadata", "cronjob metadata"},
		{"object.spec", false, true, "object.spec.template.spec", "cel"},
		{"oldObject.metadata", true, true, "oldObject.spec.jobTemplate.spec.template.metadata", "cel cronjob"},
		{"object.spec", false, false, "object.spec", "not cel"},
		{"request.namespace", false, false, "request.namespace", "untouched"},
	}
	for _, tt := range tests {
		if got := string(rewriteVariables([]byte(tt.in), tt.cronJob, tt.cel)); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.description, got, tt.want)
		}
	}
}

func spec(t testing.TB, rules string) *api.Spec {
	t.Helper()
	var s api.Spec
	if err := yaml.UnmarshalStrict([]byte("rules:\n"+rules), &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

const podRule = `
- name: r
  match:
    any:
    - resources:
        kinds: [Pod]
  validate:
    pattern:
      spec: {}
`

func TestControllers(t *testing.T) {
	all := []string{"CronJob", "DaemonSet", "Deployment", "Job", "ReplicaSet", "ReplicationController", "StatefulSet"}
	tests := []struct {
		name        string
		annotations map[string]string
		rules       string
		want        []string
	}{
		{"default", nil, podRule, all},
		{"none", map[string]string{ControllersAnnotation: "none"}, podRule, nil},
		{"explicit", map[string]string{ControllersAnnotation: "StatefulSet,Deployment"}, podRule, []string{"Deployment", "StatefulSet"}},
		{"cronjob", map[string]string{ControllersAnnotation: "CronJob"}, podRule, []string{"CronJob"}},
		{"all", map[string]string{ControllersAnnotation: "all"}, podRule, all},
		{"custom", map[string]string{ControllersAnnotation: "CloneSet"}, podRule, []string{"CloneSet"}},
		{"custom-with-standard", map[string]string{ControllersAnnotation: "CloneSet,Job"}, podRule, []string{"Job"}},
		{"empty-value", map[string]string{ControllersAnnotation: ""}, podRule, nil},
		{"none-and-cronjob", map[string]string{ControllersAnnotation: "none,CronJob"}, podRule, []string{"CronJob", "none"}},
		{"not-pod", nil, `
- name: r
  match:
    resources:
      kinds: [Namespace]
  validate:
    pattern: {}
`, nil},
		{"controller-kind-is-enough", nil, `
- name: r
  match:
    resources:
      kinds: [Deployment]
  validate:
    pattern: {}
`, all},
		{"selector", nil, `
- name: r
  match:
    resources:
      kinds: [Pod]
      selector:
        matchLabels: {a: b}
  validate:
    pattern: {}
`, nil},
		{"exclude-names", nil, `
- name: r
  match:
    resources:
      kinds: [Pod]
  exclude:
    all:
    - resources:
        names: [x]
  validate:
    pattern: {}
`, nil},
		{"namespace-selector-is-fine", nil, `
- name: r
  match:
    any:
    - resources:
        kinds: [Pod]
        namespaceSelector:
          matchLabels: {a: b}
  validate:
    pattern: {}
`, all},
		{"json6902-in-foreach", nil, podRule + `
- name: m
  match:
    any:
    - resources:
        kinds: [Pod]
  mutate:
    foreach:
    - list: request.object.spec.containers
      patchesJson6902: "[]"
`, nil},
		{"empty-generate-is-ignored", nil, podRule + `
- name: g
  match:
    any:
    - resources:
        kinds: [Namespace]
  generate: {}
`, all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Controllers(tt.annotations, spec(t, tt.rules))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if got := Controllers(nil, nil); got != nil {
		t.Errorf("nil spec: got %q", got)
	}
}

func TestRulesBadInput(t *testing.T) {
	if got := Rules(nil); got != nil {
		t.Errorf("nil policy: %v", got)
	}
	var nilPolicy *api.ClusterPolicy
	if got := Rules(nilPolicy); got != nil {
		t.Errorf("nil *ClusterPolicy: %v", got)
	}
	empty := &api.ClusterPolicy{}
	if got := Rules(empty); len(got) != 0 {
		t.Errorf("empty policy: %v", got)
	}

	// A value without a JSON form: the rule is skipped and reported.
	p := &api.ClusterPolicy{Spec: *spec(t, podRule)}
	p.Name = "bad"
	p.Spec.Rules[0].Validation.Pattern = map[string]any{"x": func() {}}
	rules, err := Expand(p)
	if len(rules) != 1 || rules[0].Name != "r" {
		t.Errorf("rules = %v", rules)
	}
	var ae *Error
	if err == nil || !errors.As(err, &ae) || ae.Rule != "autogen-r" || ae.Path != "spec.rules[0]" || ae.Policy != "bad" {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), `rule "autogen-r"`) {
		t.Errorf("message: %v", err)
	}
}

func TestNumbersOfAnyType(t *testing.T) {
	p := &api.ClusterPolicy{Spec: *spec(t, podRule)}
	p.Spec.Rules[0].Validation.Pattern = map[string]any{
		"spec": map[string]any{"a": 1, "b": int64(2), "c": json.Number("3"), "d": 4.5},
	}
	rules := Rules(p)
	if len(rules) != 3 {
		t.Fatalf("got %d rules", len(rules))
	}
	got := rules[1].Validation.Pattern.(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["spec"]
	want := map[string]any{"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.5}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	p := loadPolicy(t, "testdata/corpus-require-run-as-nonroot/policy.yaml")
	want := mustJSON(t, Rules(p))
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if got := mustJSON(t, Rules(p)); !bytes.Equal(got, want) {
					t.Error("concurrent results differ")
					return
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkRules(b *testing.B) {
	p := loadPolicy(b, "testdata/corpus-require-run-as-nonroot/policy.yaml")
	b.ReportAllocs()
	for b.Loop() {
		if len(Rules(p)) != 3 {
			b.Fatal("unexpected rule count")
		}
	}
}

func BenchmarkRulesNoAutogen(b *testing.B) {
	p := loadPolicy(b, "testdata/corpus-disallow-default-namespace/policy.yaml")
	b.ReportAllocs()
	for b.Loop() {
		Rules(p)
	}
}

// isPolicyDoc reports whether a document is a policy of a kind gavel
// decodes, or fails to decode (so that DecodePolicy reports the error).
func isPolicyDoc(d api.Document) bool {
	obj, err := api.DecodeObject(d)
	switch obj.(type) {
	case *api.PolicyException, *api.CELPolicyException:
		return false
	}
	_, ok := obj.(api.PolicyObject)
	return ok || err != nil
}
