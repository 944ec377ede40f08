package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"

	"github.com/gavelpolicy/gavel/cluster/dynclient"
	"github.com/gavelpolicy/gavel/engine"
)

// fakeCluster is a cluster of client-go fakes whose lists are paged as
// the API server pages them (limit and continue), recording each call.
type fakeCluster struct {
	live  *liveCluster
	mu    sync.Mutex
	calls []string // resource namespace limit continue
}

func obj(apiVersion, kind, namespace, name string, labels map[string]any) *unstructured.Unstructured {
	md := map[string]any{"name": name}
	if namespace != "" {
		md["namespace"] = namespace
	}
	if labels != nil {
		md["labels"] = labels
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}}
}

func newFakeCluster(t *testing.T, objs ...runtime.Object) *fakeCluster {
	t.Helper()
	listKinds := map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "pods"}:                                             "PodList",
		{Version: "v1", Resource: "configmaps"}:                                       "ConfigMapList",
		{Version: "v1", Resource: "namespaces"}:                                       "NamespaceList",
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}: "ClusterRoleList",
		{Group: "kyverno.io", Version: "v2", Resource: "policyexceptions"}:            "PolicyExceptionList",
	}
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)
	fc := &fakeCluster{}
	res := func(name, kind string, namespaced bool) metav1.APIResource {
		return metav1.APIResource{Name: name, Kind: kind, Namespaced: namespaced, Verbs: metav1.Verbs{"get", "list"}}
	}
	rc := serveDiscovery(t, []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			res("pods", "Pod", true), res("pods/status", "Pod", true), res("configmaps", "ConfigMap", true), res("namespaces", "Namespace", false),
		}},
		{GroupVersion: "rbac.authorization.k8s.io/v1", APIResources: []metav1.APIResource{res("clusterroles", "ClusterRole", false)}},
		{GroupVersion: "kyverno.io/v2", APIResources: []metav1.APIResource{res("policyexceptions", "PolicyException", true)}},
	})
	fc.live = newLiveCluster(pagingDynamic{dyn, fc}, rc)
	return fc
}

// serveDiscovery serves the discovery documents of lists (each group's
// first version preferred) on a test server and returns a REST client on it.
func serveDiscovery(t *testing.T, lists []*metav1.APIResourceList) rest.Interface {
	t.Helper()
	docs := map[string]any{}
	core := &metav1.APIVersions{}
	groups := &metav1.APIGroupList{}
	docs["/api"], docs["/apis"] = core, groups
	for _, l := range lists {
		gv, _ := schema.ParseGroupVersion(l.GroupVersion)
		if gv.Group == "" {
			core.Versions = append(core.Versions, gv.Version)
			docs["/api/"+gv.Version] = l
			continue
		}
		docs["/apis/"+l.GroupVersion] = l
		v := metav1.GroupVersionForDiscovery{GroupVersion: l.GroupVersion, Version: gv.Version}
		i := slices.IndexFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == gv.Group })
		if i < 0 {
			groups.Groups = append(groups.Groups, metav1.APIGroup{Name: gv.Group, PreferredVersion: v})
			i = len(groups.Groups) - 1
		}
		groups.Groups[i].Versions = append(groups.Groups[i].Versions, v)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(srv.Close)
	rc, err := dynclient.NewRESTClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// pagingDynamic pages the lists of a fake dynamic client (which ignores
// limit and continue) as the API server does, recording each call.
type pagingDynamic struct {
	dynamic.Interface
	fc *fakeCluster
}

func (p pagingDynamic) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return pagingResource{p.Interface.Resource(gvr), p.fc, gvr}
}

type pagingResource struct {
	dynamic.NamespaceableResourceInterface
	fc  *fakeCluster
	gvr schema.GroupVersionResource
}

func (r pagingResource) Namespace(ns string) dynamic.ResourceInterface {
	return pagedList{r.NamespaceableResourceInterface.Namespace(ns), r.fc, r.gvr, ns}
}

func (r pagingResource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return pagedList{r.NamespaceableResourceInterface, r.fc, r.gvr, ""}.List(ctx, opts)
}

type pagedList struct {
	dynamic.ResourceInterface
	fc  *fakeCluster
	gvr schema.GroupVersionResource
	ns  string
}

func (p pagedList) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	p.fc.mu.Lock()
	p.fc.calls = append(p.fc.calls, fmt.Sprintf("%s %s %d %q", p.gvr.Resource, p.ns, opts.Limit, opts.Continue))
	p.fc.mu.Unlock()
	l, err := p.ResourceInterface.List(ctx, metav1.ListOptions{LabelSelector: opts.LabelSelector})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(l.Items, func(a, b unstructured.Unstructured) int {
		return cmp.Or(strings.Compare(a.GetNamespace(), b.GetNamespace()), strings.Compare(a.GetName(), b.GetName()))
	})
	from, _ := strconv.Atoi(opts.Continue)
	to := len(l.Items)
	if opts.Limit > 0 && from+int(opts.Limit) < to {
		to = from + int(opts.Limit)
		l.SetContinue(strconv.Itoa(to))
	}
	l.Items = l.Items[from:to]
	return l, nil
}

// useFakeCluster makes the runs of the test reach fc.
func useFakeCluster(t *testing.T, fc *fakeCluster) {
	old := connect
	connect = func(applyFlags) (*liveCluster, error) { return fc.live, nil }
	t.Cleanup(func() { connect = old })
}

func TestParseKindSelector(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want kindSelector
		ok   bool
	}{
		{"Pod", kindSelector{group: "*", version: "*", kind: "Pod"}, true},
		{"v1/Pod", kindSelector{group: "*", version: "v1", kind: "Pod"}, true},
		{"apps/v1/Deployment", kindSelector{group: "apps", version: "v1", kind: "Deployment"}, true},
		{"*", kindSelector{group: "*", version: "*", kind: "*"}, true},
		{"Pod/status", kindSelector{}, false},
		{"apps/v1/Deployment/scale", kindSelector{}, false},
	} {
		got, ok := parseKindSelector(tt.in)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("parseKindSelector(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestListTasks(t *testing.T) {
	fc := newFakeCluster(t)
	all := []kindSelector{{group: "*", version: "*", kind: "*"}}
	for _, tt := range []struct {
		name        string
		sels        []kindSelector
		namespace   string
		clusterWide bool
		want        []string
	}{
		{"every kind, every namespace", all, "", false, []string{"configmaps/", "namespaces/", "pods/", "policyexceptions/", "clusterroles/"}},
		{"namespace: namespaced kinds there", all, "team", false, []string{"configmaps/team", "pods/team", "policyexceptions/team"}},
		{"cluster-wide: cluster-scoped kinds", all, "", true, []string{"namespaces/", "clusterroles/"}},
		{"cluster-wide and namespace", all, "team", true, []string{"configmaps/team", "namespaces/", "pods/team", "policyexceptions/team", "clusterroles/"}},
		{"one kind", []kindSelector{{group: "*", version: "*", kind: "Pod"}}, "", false, []string{"pods/"}},
		{"group", []kindSelector{{group: "rbac.authorization.k8s.io", version: "v1", kind: "*"}}, "", false, []string{"clusterroles/"}},
		{"wrong version", []kindSelector{{group: "*", version: "v2", kind: "Pod"}}, "", false, nil},
		{"a resource (CEL kinds)", []kindSelector{{group: "", version: "v1", resource: "pods"}}, "", false, []string{"pods/"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tasks, err := fc.live.listTasks(t.Context(), tt.sels, tt.namespace, tt.clusterWide)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, task := range tasks {
				got = append(got, task.gvr.Resource+"/"+task.namespace)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("tasks = %v, want %v", got, tt.want)
			}
		})
	}
}

// clusterPolicy is the policy of the cluster runs: Pods need a team label.
const clusterPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team
spec:
  validationFailureAction: Enforce
  background: true
  rules:
  - name: team
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: the team label is required
      pattern:
        metadata:
          labels:
            team: "?*"
`

func TestApplyCluster(t *testing.T) {
	var objs []runtime.Object
	for i := range 250 {
		ns := "a"
		if i%2 == 1 {
			ns = "b"
		}
		objs = append(objs, obj("v1", "Pod", ns, fmt.Sprintf("good-%03d", i), map[string]any{"team": "x"}))
	}
	objs = append(objs,
		obj("v1", "Pod", "b", "bad", nil),
		obj("v1", "ConfigMap", "a", "cm", nil),
		obj("v1", "Namespace", "", "a", nil),
	)
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(clusterPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
		calls  []string
	}{
		{name: "every pod, in pages of 100", args: []string{"-c"}, code: 1,
			stdout: []string{"Applying 3 policy rule(s) to 251 resource(s)...", "policy require-team -> resource b/Pod/bad failed:", "pass: 250, fail: 1, warn: 0, error: 0, skip: 0"},
			calls:  []string{`pods  100 ""`, `pods  100 "100"`, `pods  100 "200"`}},
		{name: "namespace", args: []string{"-c", "-n", "a", "--batch-size", "200"}, code: 0,
			stdout: []string{"to 125 resource(s)", "pass: 125, fail: 0"},
			calls:  []string{`pods a 200 ""`}},
		{name: "names", args: []string{"-c", "-r", "bad", "-r", "good-001"}, code: 1,
			stdout: []string{"to 2 resource(s)", "pass: 1, fail: 1"}},
		{name: "name not found", args: []string{"-c", "-r", "nothere"}, code: 1,
			stderr: []string{"nothere not found in cluster"}},
		{name: "cluster-wide: no cluster-scoped kind matched", args: []string{"-c", "--cluster-wide-resources"}, code: 0,
			stdout: []string{"to 0 resource(s)"}},
		{name: "report", args: []string{"-c", "-n", "b", "-p", "--concurrent", "4"}, code: 1,
			stdout: []string{"kind: ClusterReport", "name: bad"}, stderr: []string{"pass: 125, fail: 1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t, objs...)
			useFakeCluster(t, fc)
			code, stdout, stderr := runGavel(append([]string{"apply", policy}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			if tt.calls != nil && !slices.Equal(fc.calls, tt.calls) {
				t.Errorf("list calls = %q, want %q", fc.calls, tt.calls)
			}
		})
	}
}

// The engine reads the cluster: namespace labels for namespaceSelector,
// and PolicyExceptions with --exceptions-with-resources.
func TestApplyClusterReads(t *testing.T) {
	const policy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: prod-team
spec:
  validationFailureAction: Enforce
  rules:
  - name: team
    match:
      any:
      - resources:
          kinds: [Pod]
          namespaceSelector:
            matchLabels:
              env: prod
    validate:
      message: the team label is required
      pattern:
        metadata:
          labels:
            team: "?*"
`
	exc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kyverno.io/v2", "kind": "PolicyException",
		"metadata": map[string]any{"name": "allow-legacy", "namespace": "prod"},
		"spec": map[string]any{
			"exceptions": []any{map[string]any{"policyName": "prod-team", "ruleNames": []any{"team"}}},
			"match":      map[string]any{"any": []any{map[string]any{"resources": map[string]any{"kinds": []any{"Pod"}, "names": []any{"legacy"}}}}},
		},
	}}
	objs := []runtime.Object{
		obj("v1", "Namespace", "", "prod", map[string]any{"env": "prod"}),
		obj("v1", "Namespace", "", "dev", map[string]any{"env": "dev"}),
		obj("v1", "Pod", "prod", "noteam", nil),
		obj("v1", "Pod", "prod", "legacy", nil),
		obj("v1", "Pod", "dev", "noteam", nil),
		exc,
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	fc := newFakeCluster(t, objs...)
	useFakeCluster(t, fc)

	code, stdout, stderr := runGavel("apply", path, "-c")
	if code != 1 || !strings.Contains(stdout, "prod/Pod/noteam failed") || !strings.Contains(stdout, "prod/Pod/legacy failed") || strings.Contains(stdout, "dev/Pod/noteam failed") {
		t.Errorf("namespace labels: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runGavel("apply", path, "-c", "--exceptions-with-resources")
	if code != 1 || !strings.Contains(stdout, "with 1 exception(s)") || strings.Contains(stdout, "prod/Pod/legacy failed") || !strings.Contains(stdout, "skip: 1") {
		t.Errorf("cluster exceptions: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

type countingLabeler struct{ calls int }

func (c *countingLabeler) NamespaceLabels(_ context.Context, ns string) (map[string]string, error) {
	c.calls++
	if ns == "none" {
		return nil, fmt.Errorf("namespace %s: %w", ns, engine.ErrNotFound)
	}
	return map[string]string{"name": ns}, nil
}

// A run reads each namespace's labels once.
func TestRunLabels(t *testing.T) {
	src := &countingLabeler{}
	r := &runLabels{src: src}
	for range 3 {
		for _, ns := range []string{"a", "b", "none"} {
			l, err := r.NamespaceLabels(t.Context(), ns)
			if ns == "none" {
				if !errors.Is(err, engine.ErrNotFound) {
					t.Errorf("none: %v", err)
				}
				continue
			}
			if err != nil || l["name"] != ns {
				t.Errorf("%s: %v, %v", ns, l, err)
			}
		}
	}
	if src.calls != 3 {
		t.Errorf("%d reads, want 3", src.calls)
	}
}
