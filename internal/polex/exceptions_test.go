package polex

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/match"
	"sigs.k8s.io/yaml"
)

func mustExceptions(t testing.TB, docs string) []*api.PolicyException {
	t.Helper()
	ds, err := api.ReadDocuments(strings.NewReader(docs), "test")
	if err != nil {
		t.Fatal(err)
	}
	var out []*api.PolicyException
	for _, d := range ds {
		pe, err := decodeException(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pe)
	}
	return out
}

func mustSet(t testing.TB, docs string, opts ...Option) *Set {
	t.Helper()
	s, err := Compile(mustExceptions(t, docs), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const candidatesDocs = `
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: all-rules, namespace: legacy}
spec:
  exceptions:
  - policyName: pod-hardening
    ruleNames: ["*"]
  match:
    any:
    - resources: {kinds: [Pod], namespaces: [legacy]}
---
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: qualified, namespace: team-a}
spec:
  exceptions:
  - policyName: team-a/disallow-host-namespaces
    ruleNames: [host-namespaces]
  match:
    any:
    - resources: {kinds: [Pod], names: ['tool-a*']}
---
apiVersion: kyverno.io/v2beta1
kind: PolicyException
metadata: {name: unqualified, namespace: team-a}
spec:
  exceptions:
  - policyName: disallow-host-namespaces
    ruleNames: [host-namespaces, 'host-?orts']
  - policyName: disallow-host-namespaces
    ruleNames: [autogen-host-namespaces]
  - policyName: pod-hardening
    ruleNames: [require-labels]
  match:
    any:
    - resources: {kinds: [Pod], names: ['tool-b*']}
`

func TestCandidates(t *testing.T) {
	s := mustSet(t, candidatesDocs)
	tests := []struct {
		set          *Set
		policy, rule string
		want         []string
	}{
		{s, "pod-hardening", "require-labels", []string{"legacy/all-rules", "team-a/unqualified"}},
		{s, "pod-hardening", "disallow-privileged", []string{"legacy/all-rules"}},
		{s, "team-a/disallow-host-namespaces", "host-namespaces", []string{"team-a/qualified"}},
		{s, "disallow-host-namespaces", "host-namespaces", []string{"team-a/unqualified"}},
		{s, "disallow-host-namespaces", "host-ports", []string{"team-a/unqualified"}},
		{s, "disallow-host-namespaces", "host-pids", nil},
		{s, "disallow-host-namespaces", "autogen-host-namespaces", []string{"team-a/unqualified"}},
		{s, "team-a/disallow-host-namespaces", "autogen-host-namespaces", nil},
		{s, "unknown", "x", nil},
	}
	for _, tt := range tests {
		got := keys(tt.set.Candidates(tt.policy, tt.rule))
		if len(got) == 0 {
			got = nil
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Candidates(%q, %q) = %v, want %v", tt.policy, tt.rule, got, tt.want)
		}
	}
	if s.Len() != 3 || len(s.all) != 3 {
		t.Fatalf("Len = %d", s.Len())
	}
}

func TestNamespacesOption(t *testing.T) {
	tests := []struct {
		namespaces []string
		want       int
	}{
		{nil, 3},
		{[]string{"*"}, 3},
		{[]string{"team-a"}, 2},
		{[]string{"leg*"}, 1},
		{[]string{"kyverno"}, 0},
	}
	for _, tt := range tests {
		var opts []Option
		if tt.namespaces != nil {
			opts = append(opts, Namespaces(tt.namespaces...))
		}
		if got := mustSet(t, candidatesDocs, opts...).Len(); got != tt.want {
			t.Errorf("Namespaces(%v): %d exceptions, want %d", tt.namespaces, got, tt.want)
		}
	}
}

func TestExceptionMatches(t *testing.T) {
	s := mustSet(t, `
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: e, namespace: x}
spec:
  background: false
  exceptions:
  - {policyName: p, ruleNames: [r]}
  match:
    any:
    - resources: {kinds: [Pod, Deployment], namespaces: [delta]}
    - subjects: [{kind: User, name: breakglass}]
  exclude:
    any:
    - resources: {names: [keep-*]}
  conditions:
    any:
    - {key: "{{ request.object.metadata.labels.app || '' }}", operator: Equals, value: busybox}
  podSecurity:
  - {controlName: Capabilities, images: ['nginx*']}
`)
	e := s.Candidates("p", "r")[0]
	pod := func(name, ns string) match.Resource {
		return match.Resource{Version: "v1", Kind: "Pod", Name: name, Namespace: ns}
	}
	tests := []struct {
		name string
		res  match.Resource
		req  match.Request
		want bool
	}{
		{"namespace", pod("a", "delta"), match.Request{}, true},
		{"other namespace", pod("a", "gamma"), match.Request{}, false},
		{"excluded", pod("keep-me", "delta"), match.Request{}, false},
		{"user", pod("a", "gamma"), match.Request{Username: "breakglass"}, true},
		{"deployment", match.Resource{Group: "apps", Version: "v1", Kind: "Deployment", Name: "d", Namespace: "delta"}, match.Request{}, true},
	}
	for _, tt := range tests {
		got, err := e.Matches(tt.res, tt.req)
		if err != nil || got != tt.want {
			t.Errorf("%s: Matches = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	if e.Key() != "x/e" || e.Background() || len(e.PodSecurity()) != 1 || e.Conditions == nil || len(e.Conditions.AnyConditions) != 1 {
		t.Fatalf("accessors: %q %v %v %v", e.Key(), e.Background(), e.PodSecurity(), e.Conditions)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		docs string
		want string
	}{
		{name: "user info in background", docs: `
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: e, namespace: x}
spec:
  exceptions: [{policyName: p, ruleNames: [r]}]
  match:
    any:
    - resources: {kinds: [Pod]}
      clusterRoles: [admin]
    - subjects: [{kind: User, name: u}]`,
			want: "PolicyException x/e: spec.match.any[0].clusterRoles: Forbidden: Usage of user info is forbidden; spec.match.any[1].subjects: Forbidden: Usage of user info is forbidden"},
		{name: "user info without background", docs: `
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: e, namespace: x}
spec:
  background: false
  exceptions: [{policyName: p, ruleNames: [r]}]
  match:
    any:
    - subjects: [{kind: User, name: u}]`},
		{name: "policy name required", docs: `
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: e, namespace: x}
spec:
  exceptions: [{ruleNames: [r]}]
  match: {any: [{resources: {kinds: [Pod]}}]}`,
			want: "PolicyException x/e: spec.exceptions[0].policyName: Required value: An exception requires a policy name"},
		{name: "match block", docs: `
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: e, namespace: x}
spec:
  exceptions: [{policyName: p, ruleNames: [r]}]
  match:
    resources: {kinds: [Pod]}
  exclude:
    all: [{resources: {kinds: [Pod], name: a, names: [b]}}]`,
			want: "PolicyException x/e: spec.match.resources: Forbidden: only any and all are supported here; spec.exclude.all[0].resources: Invalid value: Both name and names can not be specified together"},
		{name: "pod security", docs: `
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: e, namespace: x}
spec:
  exceptions: [{policyName: p, ruleNames: [r]}]
  match: {any: [{resources: {kinds: [Pod]}}]}
  podSecurity:
  - controlName: Capabilities
  - controlName: Host Namespaces
    images: [nginx]
  - controlName: Capabilities
    images: ['*']
    restrictedField: spec.containers[*].securityContext.capabilities.add
  - controlName: Seccomp
    values: [a]
  - controlName: Running as Non-root`,
			want: "PolicyException x/e: spec.podSecurity[0].controlName: Invalid value: \"Capabilities\": exclude.images must be specified for the container level control; " +
				"spec.podSecurity[1].controlName: Invalid value: \"Host Namespaces\": exclude.images must not be specified for the pod level control; " +
				"spec.podSecurity[2].values: Forbidden: values is required; " +
				"spec.podSecurity[3].restrictedField: Forbidden: restrictedField is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(mustExceptions(t, tt.docs))
			got := ""
			if err != nil {
				got = err.Error()
				var ve *ValidationError
				if !errors.As(err, &ve) || ve.Name != "e" || ve.Namespace != "x" || len(ve.Errors) == 0 {
					t.Fatalf("not a *ValidationError: %#v", err)
				}
			}
			if got != tt.want {
				t.Fatalf("error:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
	if _, err := Compile([]*api.PolicyException{nil}); err == nil {
		t.Fatal("nil exception accepted")
	}
}

func TestSkipMessage(t *testing.T) {
	if got := SkipMessage("kyverno/privileged-debug-pod"); got != "rule is skipped due to policy exception: kyverno/privileged-debug-pod" {
		t.Fatal(got)
	}
	if got := SkipMessage("a/x", "b/y"); got != "rule is skipped due to policy exception: a/x, b/y" {
		t.Fatal(got)
	}
	s := mustSet(t, `
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: exempt-hostpath-pod}
spec:
  exceptions: [{policyName: p, ruleNames: [r]}]
  match: {any: [{resources: {kinds: [Pod]}}]}`)
	if got := SkipMessage(keys(s.Candidates("p", "r"))...); got != "rule is skipped due to policy exception: exempt-hostpath-pod" {
		t.Fatal(got)
	}
}

// TestSeedCases replays the exception examples of the documentation
// (testdata/seed-cases, a copy of the corpus's seed-cases/exceptions-*:
// upstream CLI tests with their verified results):
// a "skip" must come from an exception that names the rule and matches the
// resource; a pass or fail must not have such an exception, unless its
// conditions (evaluated by the engine) or podSecurity controls decide.
func TestSeedCases(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/seed-cases/exceptions-*")
	if len(dirs) == 0 {
		t.Fatal("no seed cases under testdata/seed-cases")
	}
	checked := 0
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var ct struct {
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
			data, err := os.ReadFile(filepath.Join(dir, "kyverno-test.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(data, &ct); err != nil {
				t.Fatal(err)
			}
			var polexs []*api.PolicyException
			for _, f := range ct.Exceptions {
				for _, d := range readDocs(t, filepath.Join(dir, f)) {
					pe, err := decodeException(d)
					if err != nil {
						t.Fatal(err)
					}
					polexs = append(polexs, pe)
				}
			}
			set, err := Compile(polexs)
			if err != nil {
				t.Fatal(err)
			}
			var objects []map[string]any
			for _, f := range ct.Resources {
				for _, d := range readDocs(t, filepath.Join(dir, f)) {
					objects = append(objects, d.Object)
				}
			}
			for _, r := range ct.Results {
				for _, name := range r.Resources {
					obj := findObject(objects, r.Kind, name)
					if obj == nil {
						t.Fatalf("resource %s %s not found", r.Kind, name)
					}
					res := match.ResourceFromObject(obj, "")
					var matched []*Exception
					for _, e := range set.Candidates(r.Policy, r.Rule) {
						ok, err := e.Matches(res, match.Request{})
						if err != nil {
							t.Fatal(err)
						}
						if ok {
							matched = append(matched, e)
						}
					}
					decidedElsewhere := false
					for _, e := range matched {
						if e.Conditions != nil || len(e.PodSecurity()) > 0 {
							decidedElsewhere = true
						}
					}
					switch {
					case r.Result == "skip" && len(matched) == 0:
						t.Errorf("%s/%s on %s: expected skip, no exception matches", r.Policy, r.Rule, name)
					case r.Result != "skip" && len(matched) > 0 && !decidedElsewhere:
						t.Errorf("%s/%s on %s: expected %s, but %v matches", r.Policy, r.Rule, name, r.Result, keys(matched))
					}
					checked++
				}
			}
		})
	}
	t.Logf("%d results checked", checked)
}

func readDocs(t *testing.T, file string) []api.Document {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := api.ReadDocuments(bytes.NewReader(data), file)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func findObject(objects []map[string]any, kind, name string) map[string]any {
	ns := ""
	if i := strings.Index(name, "/"); i >= 0 {
		ns, name = name[:i], name[i+1:]
	}
	for _, o := range objects {
		meta, _ := o["metadata"].(map[string]any)
		if o["kind"] == kind && meta["name"] == name && (ns == "" || meta["namespace"] == ns) {
			return o
		}
	}
	return nil
}

// decodeException decodes a kyverno.io PolicyException document.
func decodeException(d api.Document) (*api.PolicyException, error) {
	obj, err := api.DecodeObject(d)
	if err != nil {
		return nil, err
	}
	pe, ok := obj.(*api.PolicyException)
	if !ok {
		return nil, fmt.Errorf("%s: not a PolicyException", d)
	}
	return pe, nil
}
