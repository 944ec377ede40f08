package cluster

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// upstreamFilters are entries of upstream's chart defaults, joined as the
// chart joins them.
const upstreamFilters = `[Event,*,*][*/*,kube-system,*][*/*,kube-public,*][Node,*,*][Node/?*,*,*]` +
	`[APIService,*,*][Pod/binding,*,*][ReplicaSet,*,*][ReplicaSet/?*,*,*]` +
	`[ConfigMap,kyverno,kyverno][Deployment,kyverno,kyverno-admission-controller][Pod,kyverno,kyverno-admission-controller-*]`

func TestResourceFilters(t *testing.T) {
	cfg := ParseConfig(map[string]string{ConfigResourceFilters: upstreamFilters +
		` [apps/v1/Deployment/scale,*,*] [v1/Secret,team-*,token-?] [Lease]`})
	gvk := func(g, v, k string) schema.GroupVersionKind {
		return schema.GroupVersionKind{Group: g, Version: v, Kind: k}
	}
	pod, node, ns := gvk("", "v1", "Pod"), gvk("", "v1", "Node"), gvk("", "v1", "Namespace")
	for _, tc := range []struct {
		name                 string
		kind                 schema.GroupVersionKind
		sub, namespace, objn string
		want                 bool
	}{
		{"kind, any namespace", gvk("", "v1", "Event"), "", "default", "e", true},
		{"kind, cluster-scoped", node, "", "", "n1", true},
		{"subresource needs ?*", node, "status", "", "n1", true},
		{"namespace wildcard kind", pod, "", "kube-system", "p", true},
		{"other namespace", pod, "", "default", "p", false},
		{"Namespace by its name", ns, "", "", "kube-system", true},
		{"other Namespace", ns, "", "", "team-a", false},
		{"kind subresource", pod, "binding", "default", "p", true},
		{"kind without its subresource", pod, "exec", "default", "p", false},
		{"name wildcard", pod, "", "kyverno", "kyverno-admission-controller-abc", true},
		{"name mismatch", pod, "", "kyverno", "other", false},
		{"exact name", gvk("", "v1", "ConfigMap"), "", "kyverno", "kyverno", true},
		{"group/version/kind/subresource", gvk("apps", "v1", "Deployment"), "scale", "default", "d", true},
		{"other group", gvk("extensions", "v1", "Deployment"), "scale", "default", "d", false},
		{"version/kind and patterns", gvk("", "v1", "Secret"), "", "team-a", "token-1", true},
		{"? is one character", gvk("", "v1", "Secret"), "", "team-a", "token-12", false},
		{"missing parts match only empty values", gvk("coordination.k8s.io", "v1", "Lease"), "", "default", "l", false},
		{"missing parts, empty values", gvk("coordination.k8s.io", "v1", "Lease"), "", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cfg.Filtered(tc.kind, tc.sub, tc.namespace, tc.objn); got != tc.want {
				t.Errorf("Filtered(%v, %q, %q, %q) = %v, want %v", tc.kind, tc.sub, tc.namespace, tc.objn, got, tc.want)
			}
		})
	}
	if n := len(ParseResourceFilters("[a,b,c,d] [Pod] junk [Pod,x")); n != 1 {
		t.Errorf("malformed entries: %d filters, want 1 ([Pod])", n)
	}
	var zero *Config
	if zero.Filtered(pod, "", "kube-system", "p") || (&Config{}).Filtered(pod, "", "kube-system", "p") {
		t.Error("the zero Config filters")
	}
}

func TestExclusions(t *testing.T) {
	cfg := ParseConfig(map[string]string{
		ConfigExcludeGroups:       "system:nodes, system:serviceaccounts:*",
		ConfigExcludeUsernames:    "system:kube-scheduler, !system:serviceaccounts:kube-system:replicaset-controller, !",
		ConfigExcludeRoles:        "team-a:viewer",
		ConfigExcludeClusterRoles: "cluster-*",
	})
	for _, tc := range []struct {
		name          string
		user          string
		groups, roles []string
		clusterRoles  []string
		want          bool
	}{
		{"excluded username", "system:kube-scheduler", nil, nil, nil, true},
		{"excluded group", "kubelet", []string{"system:authenticated", "system:nodes"}, nil, nil, true},
		{"group wildcard", "sa", []string{"system:serviceaccounts:team-a"}, nil, nil, true},
		{"inclusion wins", "system:serviceaccounts:kube-system:replicaset-controller", []string{"system:serviceaccounts:kube-system"}, nil, nil, false},
		{"role", "alice", nil, []string{"team-a:viewer"}, nil, true},
		{"cluster role", "bob", nil, nil, []string{"cluster-admin"}, true},
		{"nothing matches", "carol", []string{"system:authenticated"}, []string{"team-b:viewer"}, []string{"edit"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cfg.ExcludedUser(tc.user, tc.groups, tc.roles, tc.clusterRoles); got != tc.want {
				t.Errorf("ExcludedUser = %v, want %v", got, tc.want)
			}
		})
	}
	req := &engine.Request{Operation: api.Create, Kind: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: "default", Name: "p",
		UserInfo: api.UserInfoData{Username: "system:kube-scheduler"}}
	if !cfg.SkipsRequest(req) {
		t.Error("SkipsRequest: an excluded user's request is evaluated")
	}
	req.UserInfo.Username = "alice"
	if cfg.SkipsRequest(req) {
		t.Error("SkipsRequest: alice's request is skipped")
	}
}

// The host reads its configuration ConfigMap as it changes: filters
// apply without a restart, and a deleted ConfigMap filters nothing.
func TestHostConfigReload(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kyverno", Namespace: "kyverno"},
		Data: map[string]string{ConfigResourceFilters: "[Node,*,*]"}}
	h, _ := fakeHostWith(t, Options{ConfigMap: "kyverno/kyverno"}, []runtime.Object{cm}, nil, nil)
	node := schema.GroupVersionKind{Version: "v1", Kind: "Node"}
	nodeReq := &engine.Request{Operation: api.Update, Kind: node, Name: "n1"}
	if !h.Config().SkipsRequest(nodeReq) {
		t.Fatal("the Node filter of the initial ConfigMap is not in force")
	}
	ctx := t.Context()
	cm.Data[ConfigResourceFilters] = "[APIService,*,*]"
	if _, err := h.kube.CoreV1().ConfigMaps("kyverno").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the updated filters", func() bool { return !h.Config().SkipsRequest(nodeReq) })
	if !h.filtered(schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}, "", "", "v1.apps") {
		t.Error("the engine's filter does not read the new configuration")
	}
	if err := h.kube.CoreV1().ConfigMaps("kyverno").Delete(ctx, "kyverno", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the configuration unloaded", func() bool { return len(h.Config().ResourceFilters) == 0 })
}

func TestHostConfigOption(t *testing.T) {
	for _, bad := range []string{"kyverno", "/kyverno", "kyverno/", "a/b/c"} {
		if _, err := NewForClients(kubefake.NewClientset(), nil, nil, Options{Namespace: "gavel", ConfigMap: bad}); err == nil {
			t.Errorf("ConfigMap %q accepted", bad)
		}
	}
}

// The filters of every admission request: upstream's defaults, the
// request matching none (the common case, every filter tried).
func BenchmarkConfigFiltered(b *testing.B) {
	cfg := ParseConfig(map[string]string{ConfigResourceFilters: upstreamFilters +
		`[ClusterRole,*,gavel][ClusterRole,*,gavel:*][ClusterRoleBinding,*,gavel][ServiceAccount,gavel,gavel]` +
		`[Role,gavel,gavel][RoleBinding,gavel,gavel][Deployment/?*,gavel,gavel][Pod/?*,gavel,gavel-*]`})
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	b.ReportAllocs()
	for b.Loop() {
		if cfg.Filtered(pod, "", "default", "web-7d4b9c-x2x5k") {
			b.Fatal("filtered")
		}
	}
}

// generateSuccessEvents and successEventActions, as upstream parses them:
// a malformed boolean is an error and leaves success events off.
func TestSuccessEventKeys(t *testing.T) {
	for _, tc := range []struct {
		data    map[string]string
		on      bool
		actions []string
		errs    int
	}{
		{map[string]string{}, false, nil, 0},
		{map[string]string{ConfigGenerateSuccess: "true", ConfigSuccessEventActions: " Resource Mutated, ,Resource Generated"}, true, []string{"Resource Mutated", "Resource Generated"}, 0},
		{map[string]string{ConfigGenerateSuccess: "False"}, false, nil, 0},
		{map[string]string{ConfigGenerateSuccess: "yes"}, false, nil, 1},
	} {
		cfg := ParseConfig(tc.data)
		if cfg.GenerateSuccessEvents != tc.on || !slices.Equal(cfg.SuccessEventActions, tc.actions) || len(cfg.Errors) != tc.errs {
			t.Errorf("%v: %v %q, errors %v", tc.data, cfg.GenerateSuccessEvents, cfg.SuccessEventActions, cfg.Errors)
		}
	}
}

// updateRequestThreshold, as upstream parses it: an integer; a value of 0
// or less skips every request; a malformed one is ignored and noted.
func TestUpdateRequestThresholdKey(t *testing.T) {
	cases := []struct {
		value string // "": the key absent
		want  int64  // urThreshold
		errs  int
	}{
		{"", DefaultUpdateRequestThreshold, 0},
		{"5000", 5000, 0},
		{" 20 ", 20, 0},
		{"0", -1, 0},
		{"-3", -1, 0},
		{"1k", DefaultUpdateRequestThreshold, 1},
	}
	for _, tc := range cases {
		data := map[string]string{}
		if tc.value != "" {
			data[ConfigURThreshold] = tc.value
		}
		cfg := ParseConfig(data)
		if got := cfg.urThreshold(); got != tc.want || len(cfg.Errors) != tc.errs {
			t.Errorf("%q: threshold %d, errors %v; want %d, %d errors", tc.value, got, cfg.Errors, tc.want, tc.errs)
		}
	}
}
