package manifests

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"

	"github.com/gavelpolicy/gavel/api"
)

func flatJSON(t testing.TB, s string) map[string]any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	ravel(v, "", out)
	return out
}

// TestDiff: upstream's comparison of a signed manifest (before) with the
// resource (after), as DiffJSON reports it.
func TestDiff(t *testing.T) {
	tests := []struct{ name, before, after, want string }{
		{"equal", `{"a":{"b":[1,"x",true]}}`, `{"a":{"b":[1,"x",true]}}`, ``},
		{"nulls and empty containers are no leaves", `{"a":null,"b":{},"c":[],"d":1}`, `{"d":1,"e":{}}`, ``},
		{"changed, added, removed", `{"a":1,"b":"x"}`, `{"a":2,"c":true}`,
			`{"items":[{"key":"a","values":{"after":2,"before":1}},{"key":"b","values":{"after":null,"before":"x"}},{"key":"c","values":{"after":true,"before":null}}]}`},
		{"type changed", `{"a":true}`, `{"a":"true"}`, `{"items":[{"key":"a","values":{"after":"(type: string) true","before":"(type: bool) %!s(bool=true)"}}]}`},
		{"list elements moved", `{"s":{"c":[{"x":"1"},{"y":"2"}]}}`, `{"s":{"c":[{"y":"2"},{"x":"1"}]}}`,
			// upstream drops a leaf removed at one index and added at
			// another with the same value
			``},
		{"list element inserted", `{"s":{"c":[{"n":"a"}]}}`, `{"s":{"c":[{"n":"b"},{"n":"a"}]}}`,
			// but compares the leaves at one index otherwise
			`{"items":[{"key":"s.c.0.n","values":{"after":"b","before":"a"}},{"key":"s.c.1.n","values":{"after":"a","before":null}}]}`},
		{"dotted keys", `{"metadata":{"annotations":{"a.io/x":"1"}}}`, `{"metadata":{"annotations":{"a.io/x":"2"}}}`,
			`{"items":[{"key":"metadata.annotations.a.io/x","values":{"after":"2","before":"1"}}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DiffJSON(diffFlat(flatJSON(t, tt.before), flatJSON(t, tt.after)))
			if got != tt.want {
				t.Errorf("diff\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestIgnoredFields: fields match as upstream's patterns, a
// regular expression with * as .* found anywhere in the key; bindings
// select objects by group, version, kind, name and namespace patterns.
func TestIgnoredFields(t *testing.T) {
	b, err := CompileIgnore(api.ObjectFieldBinding{Fields: []string{"spec.replicas", "spec.containers.*.image", "status"},
		Objects: []api.ManifestObjectReference{{Kind: "Deployment", Group: "apps"}, {Kind: "Pod", Name: "web-*"}}})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]bool{
		"spec.replicas": true, "spec.replicasX": true, "spec.containers.0.image": true, "spec.containers.0.name": false,
		"status.phase": true, "metadata.labels.status": true, "spec.template": false,
	} {
		if got := slices.ContainsFunc(b.fields, func(re *regexp.Regexp) bool { return re.MatchString(key) }); got != want {
			t.Errorf("%s ignored = %v", key, got)
		}
	}
	obj := func(apiVersion, kind, name string) map[string]any {
		return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "namespace": "prod"}}
	}
	for _, tt := range []struct {
		obj  map[string]any
		want bool
	}{
		{obj("apps/v1", "Deployment", "x"), true},
		{obj("v1", "Deployment", "x"), false},
		{obj("v1", "Pod", "web-1"), true},
		{obj("v1", "Pod", "db-1"), false},
	} {
		if got := len(Ignored([]IgnoreBinding{b}, tt.obj)) > 0; got != tt.want {
			t.Errorf("%v selected = %v", tt.obj, got)
		}
	}
	for pattern, want := range map[string]bool{"": true, "*": true, "-": false, "we*": true, "db,web": true, "x": false} {
		if got := matchRefPattern(pattern, "web"); got != want {
			t.Errorf("matchRefPattern(%q, web) = %v", pattern, got)
		}
	}
	if _, err := CompileIgnore(api.ObjectFieldBinding{Fields: []string{"a[", "b"}}); err == nil {
		t.Error("a bad pattern compiled")
	}
	defaults, err := DefaultIgnore("example.com")
	if err != nil || len(defaults) != 15 {
		t.Errorf("%d default bindings, %v", len(defaults), err)
	}
	last := Ignored(defaults[14:], map[string]any{"kind": "Pod"})
	if len(last) != 5 || !last[1].MatchString("metadata.annotations.example.com/signature_1") {
		t.Errorf("the domain's signature annotations: %v", last)
	}
}

// TestFind: the signed document that stands for the resource.
func TestFind(t *testing.T) {
	doc := func(apiVersion, kind, name, ns, v string) map[string]any {
		m := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}, "data": map[string]any{"v": v}}
		if ns != "" {
			m["metadata"].(map[string]any)["namespace"] = ns
		}
		return m
	}
	docs := []map[string]any{
		doc("v1", "ConfigMap", "a", "", "1"), doc("v1", "ConfigMap", "b", "dev", "2"), doc("v1", "ConfigMap", "b", "prod", "3"),
		doc("v1", "Secret", "a", "", "1"),
	}
	name := func(found []map[string]any) []string {
		var out []string
		for _, d := range found {
			out = append(out, d["metadata"].(map[string]any)["name"].(string)+"/"+d["data"].(map[string]any)["v"].(string))
		}
		return out
	}
	for _, tt := range []struct {
		obj  map[string]any
		want []string
	}{
		{doc("v1", "ConfigMap", "a", "prod", "9"), []string{"a/1"}},
		{doc("v1", "ConfigMap", "b", "prod", "9"), []string{"b/3"}},
		{doc("v1", "ConfigMap", "b", "qa", "9"), []string{"b/2"}},
		{doc("v1", "ConfigMap", "renamed", "", "2"), []string{"b/2"}},
		{doc("v1", "ConfigMap", "renamed", "", "9"), []string{"a/1", "b/2", "b/3"}},
		{doc("v1", "Service", "a", "", "1"), nil},
	} {
		if got := name(Find(docs, tt.obj, nil)); !slices.Equal(got, tt.want) {
			t.Errorf("%v: found %v, want %v", tt.obj, got, tt.want)
		}
	}
}

// FuzzDiff: any two JSON documents compare without panic; a
// document equals itself; the differences are sorted and encode.
func FuzzDiff(f *testing.F) {
	f.Add(`{"a":{"b":[1,"x",true,null]}}`, `{"a":{"b":[2,"x"]},"c":{"d":[]}}`)
	f.Add(`{"spec":{"c":[{"n":"a"},{"n":"b"}]}}`, `{"spec":{"c":[{"n":"b"},{"n":"a"}]}}`)
	f.Add(`[1,2]`, `"x"`)
	f.Fuzz(func(t *testing.T, a, b string) {
		var va, vb any
		if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
			return
		}
		// encoding/json decodes to canonical values
		ca, cb := va, vb
		fa, fb := map[string]any{}, map[string]any{}
		ravel(ca, "", fa)
		ravel(cb, "", fb)
		if d := diffFlat(fa, fa); len(d) != 0 {
			t.Fatalf("%s differs from itself: %v", a, d)
		}
		d := diffFlat(fa, fb)
		if !slices.IsSortedFunc(d, func(x, y Diff) int {
			if x.Key < y.Key {
				return -1
			}
			if x.Key > y.Key {
				return 1
			}
			return 0
		}) {
			t.Fatalf("unsorted %v", d)
		}
		if len(d) > 0 && DiffJSON(d) == "" {
			t.Fatalf("no JSON for %v", d)
		}
		dropIgnored(dropCanonicalImages(d), []*regexp.Regexp{regexp.MustCompile("a.*")})
		if m, ok := cb.(map[string]any); ok {
			if m2, ok := ca.(map[string]any); ok {
				Find([]map[string]any{m2}, m, nil)
			}
		}
	})
}

// TestCompareDryRun: the dry run's copy is renamed (and moved to the dry
// run's namespace) without changing the manifest, and the names it
// changed are not compared.
func TestCompareDryRun(t *testing.T) {
	deploy := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "prod"}, "spec": map[string]any{"replicas": 2.0}}
	crd := map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.com"},
		"spec":     map[string]any{"names": map[string]any{"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"}}}
	before, _ := json.Marshal([]any{deploy, crd})
	tests := []struct {
		manifest, obj map[string]any
		name, ns      any
		created       func(map[string]any) map[string]any
		want          string
	}{
		{deploy, deploy, "web-dry-run", "kyverno-dryrun", nil, ``},
		{deploy, deploy, "web-dry-run", "kyverno-dryrun", func(m map[string]any) map[string]any {
			m["spec"] = map[string]any{"replicas": 2.0, "paused": false}
			return m
		}, `{"items":[{"key":"spec.paused","values":{"after":null,"before":false}}]}`},
		{crd, crd, "simwidgets.example.com", nil, nil, ``},
	}
	for _, tt := range tests {
		sim := DryRunObject(tt.manifest, tt.obj, "kyverno-dryrun")
		meta := sim["metadata"].(map[string]any)
		if meta["name"] != tt.name || meta["namespace"] != tt.ns {
			t.Errorf("dry-run object named %v in %v, want %v in %v", meta["name"], meta["namespace"], tt.name, tt.ns)
		}
		created := sim
		if tt.created != nil {
			created = tt.created(sim)
		}
		if got := DiffJSON(CompareDryRun(created, tt.obj, nil)); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
	if k := DryRunObject(crd, crd, "x")["spec"].(map[string]any)["names"].(map[string]any)["kind"]; k != "SimWidget" {
		t.Errorf("CRD kind %v", k)
	}
	after, _ := json.Marshal([]any{deploy, crd})
	if string(before) != string(after) {
		t.Errorf("the manifests changed:\n%s\n%s", before, after)
	}
}
