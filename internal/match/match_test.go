package match

import (
	"errors"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestDocExamples(t *testing.T) {
	for _, rc := range loadRuleCases(t, "testdata/doc_examples.yaml") {
		t.Run(rc.Name, func(t *testing.T) {
			r, errs := Compile(rc.Match, rc.Exclude, field.NewPath("spec", "rules").Index(0))
			if len(errs) > 0 {
				t.Fatalf("compile: %v", errs.ToAggregate())
			}
			for _, c := range rc.Cases {
				t.Run(c.Name, func(t *testing.T) {
					res := ResourceFromObject(c.Resource, c.Subresource)
					got, reason, err := r.Matches(res, c.request())
					if err != nil {
						t.Fatal(err)
					}
					if got != c.Want {
						t.Fatalf("Matches = %v (%q), want %v", got, reason, c.Want)
					}
					if c.Reason != "" && reason != c.Reason {
						t.Fatalf("reason = %q, want %q", reason, c.Reason)
					}
					if got && reason != "" {
						t.Fatalf("reason %q on a match", reason)
					}
				})
			}
		})
	}
}

func TestRuleMatches(t *testing.T) {
	anon := Request{Operation: "CREATE"}
	user := func(name string, groups ...string) Request {
		return Request{Operation: "CREATE", Username: name, Groups: groups}
	}
	nsLabels := func(l map[string]string) Request {
		return Request{Operation: "CREATE", NamespaceLabels: func() (map[string]string, error) { return l, nil }}
	}
	namespace := Resource{Version: "v1", Kind: "Namespace", Name: "team-a", Labels: map[string]string{"team": "a"}}
	tests := []struct {
		name    string
		match   string
		exclude string
		res     Resource
		req     Request
		want    bool
		reason  string
	}{
		// kinds
		{name: "kind", match: `{any: [{resources: {kinds: [Pod]}}]}`, res: podRes("p", "a", nil), req: anon, want: true},
		{name: "kind is case sensitive", match: `{any: [{resources: {kinds: [pod]}}]}`, res: podRes("p", "a", nil), req: anon, reason: "no resource matched"},
		{name: "kind without subresource", match: `{all: [{resources: {kinds: [Pod]}}]}`,
			res: Resource{Version: "v1", Kind: "Pod", Subresource: "exec"}, req: anon, reason: "kind does not match [Pod]"},
		{name: "Pod selects ephemeralcontainers", match: `{all: [{resources: {kinds: [Pod]}}]}`,
			res: Resource{Version: "v1", Kind: "Pod", Subresource: "ephemeralcontainers"}, req: anon, want: true},
		{name: "v1/Pod selects ephemeralcontainers", match: `{all: [{resources: {kinds: [v1/Pod]}}]}`,
			res: Resource{Version: "v1", Kind: "Pod", Subresource: "ephemeralcontainers"}, req: anon, want: true},
		{name: "Pod/exec", match: `{all: [{resources: {kinds: [Pod/exec]}}]}`,
			res: Resource{Version: "v1", Kind: "Pod", Subresource: "exec"}, req: anon, want: true},
		{name: "Pod.exec", match: `{all: [{resources: {kinds: [Pod.exec]}}]}`,
			res: Resource{Version: "v1", Kind: "Pod", Subresource: "exec"}, req: anon, want: true},
		{name: "*/* selects subresources", match: `{all: [{resources: {kinds: ['*/*']}}]}`,
			res: Resource{Version: "v1", Kind: "Pod", Subresource: "exec"}, req: anon, want: true},
		{name: "group wildcard", match: `{all: [{resources: {kinds: ['apps/*/Deployment']}}]}`,
			res: Resource{Group: "apps", Version: "v1beta2", Kind: "Deployment"}, req: anon, want: true},
		{name: "group mismatch", match: `{all: [{resources: {kinds: ['apps/*/*']}}]}`,
			res: Resource{Group: "batch", Version: "v1", Kind: "Job"}, req: anon, reason: "kind does not match [apps/*/*]"},
		{name: "kind list is ORed", match: `{all: [{resources: {kinds: [Deployment, Pod]}}]}`, res: podRes("p", "a", nil), req: anon, want: true},

		// names
		{name: "name wildcard", match: `{any: [{resources: {kinds: [Pod], name: 'web-*'}}]}`, res: podRes("web-1", "a", nil), req: anon, want: true},
		{name: "name mismatch", match: `{all: [{resources: {kinds: [Pod], name: 'web-?'}}]}`, res: podRes("web-12", "a", nil), req: anon, reason: "name does not match"},
		{name: "names", match: `{all: [{resources: {kinds: [Pod], names: [a, 'b*']}}]}`, res: podRes("bob", "a", nil), req: anon, want: true},
		{name: "none of the names", match: `{all: [{resources: {kinds: [Pod], names: [a, 'b*']}}]}`, res: podRes("carl", "a", nil), req: anon, reason: "none of the names match"},
		{name: "generateName", match: `{all: [{resources: {kinds: [Pod], names: ['web-*']}}]}`,
			res: ResourceFromObject(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"generateName": "web-", "namespace": "a"}}, ""),
			req: anon, want: true},

		// namespaces
		{name: "namespace wildcard", match: `{all: [{resources: {kinds: [Pod], namespaces: ['team-*']}}]}`, res: podRes("p", "team-b", nil), req: anon, want: true},
		{name: "namespace mismatch", match: `{all: [{resources: {kinds: [Pod], namespaces: ['team-*']}}]}`, res: podRes("p", "default", nil), req: anon, reason: "namespace does not match"},
		{name: "a Namespace's namespace is its name", match: `{all: [{resources: {kinds: [Namespace], namespaces: ['team-*']}}]}`, res: namespace, req: anon, want: true},
		{name: "cluster-scoped resource has the empty namespace", match: `{all: [{resources: {kinds: [ClusterRole], namespaces: ['']}}]}`,
			res: Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "admin"}, req: anon, want: true},

		// annotations
		{name: "annotation key and value wildcards", match: `{all: [{resources: {kinds: [Pod], annotations: {'example.com/*': 'ye?'}}}]}`,
			res: Resource{Version: "v1", Kind: "Pod", Annotations: map[string]string{"example.com/skip": "yes"}}, req: anon, want: true},
		{name: "every annotation must hold", match: `{all: [{resources: {kinds: [Pod], annotations: {a: '1', b: '2'}}}]}`,
			res: Resource{Version: "v1", Kind: "Pod", Annotations: map[string]string{"a": "1"}}, req: anon, reason: "annotations does not match"},

		// selector
		{name: "selector matchLabels", match: `{all: [{resources: {kinds: [Pod], selector: {matchLabels: {app: web}}}}]}`, res: podRes("p", "a", map[string]string{"app": "web"}), req: anon, want: true},
		{name: "selector Exists", match: `{all: [{resources: {kinds: [Pod], selector: {matchExpressions: [{key: app, operator: Exists}]}}}]}`, res: podRes("p", "a", nil), req: anon, reason: "selector does not match"},
		{name: "selector wildcard value", match: `{all: [{resources: {kinds: [Pod], selector: {matchLabels: {app: 'web-*'}}}}]}`, res: podRes("p", "a", map[string]string{"app": "web-1"}), req: anon, want: true},
		{name: "selector wildcard key and value", match: `{all: [{resources: {kinds: [Pod], selector: {matchLabels: {'*': '*'}}}}]}`, res: podRes("p", "a", map[string]string{"x": "y"}), req: anon, want: true},
		{name: "wildcards need at least one label", match: `{all: [{resources: {kinds: [Pod], selector: {matchLabels: {'*': '*'}}}}]}`, res: podRes("p", "a", nil), req: anon, reason: "selector does not match"},
		{name: "wildcard pattern that cannot be a label fails to parse", match: `{all: [{resources: {kinds: [Pod], selector: {matchLabels: {app: 'a b*'}}}}]}`,
			res: podRes("p", "a", map[string]string{"app": "web"}), req: anon,
			reason: `failed to parse selector: values[0][app]: Invalid value: "a b0": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},

		// namespaceSelector
		{name: "namespaceSelector", match: `{all: [{resources: {kinds: [Pod], namespaceSelector: {matchLabels: {env: prod}}}}]}`,
			res: podRes("p", "a", nil), req: nsLabels(map[string]string{"env": "prod"}), want: true},
		{name: "namespaceSelector wildcard", match: `{all: [{resources: {kinds: [Pod], namespaceSelector: {matchLabels: {env: 'pr*'}}}}]}`,
			res: podRes("p", "a", nil), req: nsLabels(map[string]string{"env": "prod"}), want: true},
		{name: "namespaceSelector without labels", match: `{all: [{resources: {kinds: [Pod], namespaceSelector: {matchLabels: {env: prod}}}}]}`,
			res: podRes("p", "a", nil), req: anon, reason: "namespace selector does not match labels"},
		{name: "namespaceSelector on a Namespace never holds", match: `{all: [{resources: {kinds: [Namespace], namespaceSelector: {matchLabels: {team: a}}}}]}`,
			res: namespace, req: nsLabels(map[string]string{"team": "a"}), reason: "namespace selector is not applicable for namespace resource"},
		{name: "empty namespaceSelector holds", match: `{all: [{resources: {kinds: [Pod], namespaceSelector: {}}}]}`, res: podRes("p", "a", nil), req: anon, want: true},

		// operations
		{name: "operation", match: `{all: [{resources: {kinds: [Pod], operations: [DELETE]}}]}`, res: podRes("p", "a", nil), req: Request{Operation: "DELETE"}, want: true},
		{name: "operation mismatch", match: `{all: [{resources: {kinds: [Pod], operations: [DELETE]}}]}`, res: podRes("p", "a", nil), req: anon, reason: "operation does not match"},
		{name: "background is CREATE", match: `{all: [{resources: {kinds: [Pod], operations: [CREATE]}}]}`, res: podRes("p", "a", nil), req: Request{}, want: true},
		{name: "background is not UPDATE", match: `{all: [{resources: {kinds: [Pod], operations: [UPDATE]}}]}`, res: podRes("p", "a", nil), req: Request{}, reason: "operation does not match"},
		{name: "no operations: all operations", match: `{all: [{resources: {kinds: [Pod]}}]}`, res: podRes("p", "a", nil), req: Request{Operation: "CONNECT"}, want: true},

		// subjects, roles, cluster roles
		{name: "user", match: `{any: [{resources: {kinds: [Pod]}, subjects: [{kind: User, name: 'dev-*'}]}]}`, res: podRes("p", "a", nil), req: user("dev-anna"), want: true},
		{name: "user mismatch", match: `{all: [{resources: {kinds: [Pod]}, subjects: [{kind: User, name: 'dev-*'}]}]}`, res: podRes("p", "a", nil), req: user("ops"), reason: "user info does not match subject for the given conditionBlock"},
		{name: "group", match: `{all: [{resources: {kinds: [Pod]}, subjects: [{kind: Group, name: 'system:masters'}]}]}`, res: podRes("p", "a", nil), req: user("x", "system:authenticated", "system:masters"), want: true},
		{name: "service account", match: `{all: [{resources: {kinds: [Pod]}, subjects: [{kind: ServiceAccount, name: builder, namespace: ci}]}]}`,
			res: podRes("p", "a", nil), req: user("system:serviceaccount:ci:builder"), want: true},
		{name: "service account of another namespace", match: `{all: [{resources: {kinds: [Pod]}, subjects: [{kind: ServiceAccount, name: builder, namespace: ci}]}]}`,
			res: podRes("p", "a", nil), req: user("system:serviceaccount:dev:builder"), reason: "user info does not match subject for the given conditionBlock"},
		{name: "service account wildcard", match: `{all: [{resources: {kinds: [Pod]}, subjects: [{kind: ServiceAccount, name: '*', namespace: 'kube-*'}]}]}`,
			res: podRes("p", "a", nil), req: user("system:serviceaccount:kube-system:x"), want: true},
		{name: "role", match: `{all: [{resources: {kinds: [Pod]}, roles: ['a:editor']}]}`, res: podRes("p", "a", nil), req: Request{Username: "u", Roles: []string{"a:editor"}}, want: true},
		{name: "role names are exact", match: `{all: [{resources: {kinds: [Pod]}, roles: ['a:edit*']}]}`, res: podRes("p", "a", nil), req: Request{Username: "u", Roles: []string{"a:editor"}},
			reason: "user info does not match roles for the given conditionBlock"},
		{name: "cluster role", match: `{all: [{resources: {kinds: [Pod]}, clusterRoles: [admin, view]}]}`, res: podRes("p", "a", nil), req: Request{Username: "u", ClusterRoles: []string{"view"}}, want: true},
		{name: "cluster role mismatch", match: `{all: [{resources: {kinds: [Pod]}, clusterRoles: [admin]}]}`, res: podRes("p", "a", nil), req: Request{Username: "u", ClusterRoles: []string{"view"}},
			reason: "user info does not match clustersRoles for the given conditionBlock"},
		{name: "without user info, match ignores user criteria", match: `{all: [{resources: {kinds: [Pod]}, clusterRoles: [admin]}]}`, res: podRes("p", "a", nil), req: anon, want: true},

		// any, all, legacy
		{name: "all needs every filter", match: `{all: [{resources: {kinds: [Pod]}}, {resources: {kinds: ['*'], namespaces: [b]}}]}`, res: podRes("p", "a", nil), req: anon, reason: "namespace does not match"},
		{name: "all", match: `{all: [{resources: {kinds: [Pod]}}, {resources: {kinds: [Pod], namespaces: [a]}}]}`, res: podRes("p", "a", nil), req: anon, want: true},
		{name: "legacy", match: `{resources: {kinds: [Pod], namespaces: [a]}}`, res: podRes("p", "a", nil), req: anon, want: true},
		{name: "legacy mismatch", match: `{resources: {kinds: [Pod], namespaces: [b]}}`, res: podRes("p", "a", nil), req: anon, reason: "namespace does not match"},

		// exclude
		{name: "exclude any", match: `{any: [{resources: {kinds: [Pod]}}]}`, exclude: `{any: [{resources: {namespaces: [x]}}, {resources: {names: [p]}}]}`,
			res: podRes("p", "a", nil), req: anon, reason: "resource excluded since one of the criteria excluded it"},
		{name: "exclude all needs every filter", match: `{any: [{resources: {kinds: [Pod]}}]}`, exclude: `{all: [{resources: {namespaces: [x]}}, {resources: {names: [p]}}]}`,
			res: podRes("p", "a", nil), req: anon, want: true},
		{name: "exclude all", match: `{any: [{resources: {kinds: [Pod]}}]}`, exclude: `{all: [{resources: {namespaces: [a]}}, {resources: {names: [p]}}]}`,
			res: podRes("p", "a", nil), req: anon, reason: "resource excluded since the combination of all criteria exclude it"},
		{name: "exclude legacy", match: `{resources: {kinds: [Pod]}}`, exclude: `{resources: {namespaces: [a]}}`,
			res: podRes("p", "a", nil), req: anon, reason: "resource excluded since one of the criteria excluded it"},
		{name: "exclude checks user criteria even without user info", match: `{any: [{resources: {kinds: [Pod]}}]}`, exclude: `{any: [{subjects: [{kind: User, name: '*'}]}]}`,
			res: podRes("p", "a", nil), req: anon, reason: "resource excluded since one of the criteria excluded it"},
		{name: "exclude by group", match: `{any: [{resources: {kinds: [Pod]}}]}`, exclude: `{any: [{subjects: [{kind: Group, name: 'system:nodes'}]}]}`,
			res: podRes("p", "a", nil), req: user("node-1", "system:nodes"), reason: "resource excluded since one of the criteria excluded it"},
		{name: "exclude by operation", match: `{any: [{resources: {kinds: [Pod]}}]}`, exclude: `{any: [{resources: {operations: [DELETE]}}]}`,
			res: podRes("p", "a", nil), req: Request{Operation: "DELETE"}, reason: "resource excluded since one of the criteria excluded it"},
		{name: "exclude by operation does not hit other operations", match: `{any: [{resources: {kinds: [Pod]}}]}`, exclude: `{any: [{resources: {operations: [DELETE]}}]}`,
			res: podRes("p", "a", nil), req: anon, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustRule(t, tt.match, tt.exclude)
			got, reason, err := r.Matches(tt.res, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || reason != tt.reason {
				t.Fatalf("Matches = %v, %q; want %v, %q", got, reason, tt.want, tt.reason)
			}
		})
	}
}

func TestNamespaceLabelsLazyAndErrors(t *testing.T) {
	calls := 0
	boom := errors.New("boom")
	req := Request{Operation: "CREATE", NamespaceLabels: func() (map[string]string, error) {
		calls++
		return nil, boom
	}}
	r := mustRule(t, `{any: [{resources: {kinds: [Deployment], namespaceSelector: {matchLabels: {a: b}}}}, {resources: {kinds: [Pod]}}]}`, "")
	if ok, _, err := r.Matches(podRes("p", "a", nil), req); err != nil || !ok || calls != 0 {
		t.Fatalf("got %v %v calls=%d; namespace labels must not be read when the kind does not match", ok, err, calls)
	}
	r = mustRule(t, `{any: [{resources: {kinds: [Pod], namespaceSelector: {matchLabels: {a: b}}}}]}`, "")
	_, _, err := r.Matches(podRes("p", "a", nil), req)
	var nle *NamespaceLabelsError
	if !errors.As(err, &nle) || !errors.Is(err, boom) || nle.Namespace != "a" {
		t.Fatalf("err = %v", err)
	}

	calls = 0
	req.NamespaceLabels = func() (map[string]string, error) {
		calls++
		return map[string]string{"a": "b"}, nil
	}
	r = mustRule(t, `{all: [{resources: {kinds: [Pod], namespaceSelector: {matchLabels: {a: b}}}}, {resources: {kinds: [Pod], namespaceSelector: {matchExpressions: [{key: a, operator: Exists}]}}}]}`,
		`{any: [{resources: {namespaceSelector: {matchLabels: {a: c}}}}]}`)
	if ok, _, err := r.Matches(podRes("p", "a", nil), req); err != nil || !ok || calls != 1 {
		t.Fatalf("got %v %v calls=%d; want one call", ok, err, calls)
	}
}

func TestFilterMatches(t *testing.T) {
	anon := Request{Operation: "CREATE"}
	tests := []struct {
		name  string
		block string
		res   Resource
		req   Request
		want  bool
	}{
		{name: "any", block: `{any: [{resources: {kinds: [Deployment]}}, {resources: {kinds: [Pod], names: ['tool-*']}}]}`, res: podRes("tool-a", "a", nil), req: anon, want: true},
		{name: "any mismatch", block: `{any: [{resources: {kinds: [Pod], names: ['tool-*']}}]}`, res: podRes("other", "a", nil), req: anon},
		{name: "all", block: `{all: [{resources: {kinds: [Pod]}}, {resources: {namespaces: [a]}}]}`, res: podRes("p", "a", nil), req: anon, want: true},
		{name: "all mismatch", block: `{all: [{resources: {kinds: [Pod]}}, {resources: {namespaces: [b]}}]}`, res: podRes("p", "a", nil), req: anon},
		{name: "no any or all matches nothing", block: `{}`, res: podRes("p", "a", nil), req: anon},
		{name: "operations-only filter is empty", block: `{any: [{resources: {operations: [CREATE]}}]}`, res: podRes("p", "a", nil), req: anon},
		{name: "user criteria are checked without user info", block: `{any: [{resources: {kinds: [Pod]}, subjects: [{kind: User, name: dave}]}]}`, res: podRes("p", "a", nil), req: anon},
		{name: "user criteria", block: `{any: [{resources: {kinds: [Pod]}, subjects: [{kind: User, name: dave}]}]}`, res: podRes("p", "a", nil), req: Request{Username: "dave"}, want: true},
		{name: "namespaceSelector skipped for Namespace objects", block: `{any: [{resources: {kinds: [Namespace], namespaceSelector: {matchLabels: {a: b}}}}]}`,
			res: Resource{Version: "v1", Kind: "Namespace", Name: "n"}, req: anon, want: true},
		{name: "namespaceSelector", block: `{any: [{resources: {kinds: [Pod], namespaceSelector: {matchLabels: {a: b}}}}]}`,
			res: podRes("p", "a", nil), req: anon},
		{name: "operations", block: `{any: [{resources: {kinds: [Pod], operations: [UPDATE]}}]}`, res: podRes("p", "a", nil), req: Request{Operation: "UPDATE"}, want: true},
		{name: "ephemeral containers", block: `{any: [{resources: {kinds: [Pod]}}]}`, res: Resource{Version: "v1", Kind: "Pod", Subresource: "ephemeralcontainers"}, req: anon, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mustFilter(t, tt.block).Matches(tt.res, tt.req)
			if err != nil || got != tt.want {
				t.Fatalf("Matches = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestResourceFromObject(t *testing.T) {
	obj := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]any{
			"name":        "web",
			"namespace":   "prod",
			"labels":      map[string]any{"app": "web"},
			"annotations": map[string]any{"n": 1.0},
		},
	}
	r := ResourceFromObject(obj, "scale")
	if r.Group != "apps" || r.Version != "v1" || r.Kind != "Deployment" || r.Subresource != "scale" ||
		r.Name != "web" || r.Namespace != "prod" || r.Labels["app"] != "web" || r.Annotations != nil {
		t.Fatalf("%+v", r)
	}
	r.Labels["app"] = "changed"
	if obj["metadata"].(map[string]any)["labels"].(map[string]any)["app"] != "web" {
		t.Fatal("input modified")
	}
	core := ResourceFromObject(map[string]any{"apiVersion": "v1", "kind": "Pod"}, "")
	if core.Group != "" || core.Version != "v1" {
		t.Fatalf("%+v", core)
	}
	if !reflect.DeepEqual(ResourceFromObject(nil, ""), Resource{}) {
		t.Fatal("nil object")
	}
}

func TestNamespacedPolicyApplies(t *testing.T) {
	tests := []struct {
		policyNS string
		res      Resource
		want     bool
	}{
		{"", podRes("p", "a", nil), true},
		{"a", podRes("p", "a", nil), true},
		{"a", podRes("p", "b", nil), false},
		{"a", Resource{Version: "v1", Kind: "Namespace", Name: "a"}, false},
	}
	for _, tt := range tests {
		if got := NamespacedPolicyApplies(tt.policyNS, tt.res); got != tt.want {
			t.Errorf("NamespacedPolicyApplies(%q, %+v) = %v", tt.policyNS, tt.res, got)
		}
	}
}

func TestRuleKinds(t *testing.T) {
	r := mustRule(t, `{any: [{resources: {kinds: [Pod, apps/v1/Deployment]}}, {resources: {kinds: [Pod, '*/scale']}}]}`, `{any: [{resources: {kinds: [Secret]}}]}`)
	want := []KindSelector{
		{Group: "*", Version: "*", Kind: "Pod"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "*", Version: "*", Kind: "*", Subresource: "scale"},
	}
	got := r.Kinds()
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%v", got)
		}
	}
	got[0].Kind = "changed"
	if r.Kinds()[0].Kind != "Pod" {
		t.Fatal("Kinds is not a copy")
	}
}

func TestConcurrentMatches(t *testing.T) {
	r := mustRule(t, `{any: [{resources: {kinds: [Pod], selector: {matchLabels: {'app*': '*'}}, namespaceSelector: {matchLabels: {env: prod}}}}]}`,
		`{any: [{subjects: [{kind: Group, name: 'system:nodes'}]}]}`)
	done := make(chan bool)
	for g := 0; g < 8; g++ {
		go func(g int) {
			ok := true
			for i := 0; i < 200; i++ {
				req := Request{Operation: "CREATE", Username: "u", NamespaceLabels: func() (map[string]string, error) {
					return map[string]string{"env": "prod"}, nil
				}}
				if g%2 == 1 {
					req.Groups = []string{"system:nodes"}
				}
				got, _, err := r.Matches(podRes("p", "a", map[string]string{"app": "x"}), req)
				ok = ok && err == nil && got == (g%2 == 0)
			}
			done <- ok
		}(g)
	}
	for g := 0; g < 8; g++ {
		if !<-done {
			t.Error("concurrent Matches gave a wrong result")
		}
	}
}
