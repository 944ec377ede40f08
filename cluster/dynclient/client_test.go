package dynclient

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
)

// A match kind without group and version ("Deployment") is listed in the
// group that serves it: the listing of existing triggers of
// mutateExistingOnPolicyUpdate and generateExisting passes it as it is.
func TestListKindWithoutGroup(t *testing.T) {
	deploy := func(ns, name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": name, "namespace": ns},
		}}
	}
	listKinds := map[schema.GroupVersionResource]string{
		{Group: "apps", Version: "v1", Resource: "deployments"}: "DeploymentList",
		{Version: "v1", Resource: "pods"}:                       "PodList",
	}
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, deploy("a", "one"), deploy("b", "two"))
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	c := New(dyn, mapper)
	ctx := context.Background()

	tests := []struct {
		apiVersion, kind, namespace string
		want                        int
		wantErr                     bool
	}{
		{"", "Deployment", "", 2, false},
		{"", "Deployment", "a", 1, false},
		{"apps/v1", "Deployment", "", 2, false},
		{"v1", "Deployment", "", 0, true}, // the core group has none
		{"", "Pod", "", 0, false},
		{"", "Nothing", "", 0, true},
		{"", "deployment", "", 0, true}, // kinds match exactly
	}
	for _, tt := range tests {
		objs, err := c.List(ctx, tt.apiVersion, tt.kind, tt.namespace, nil)
		if (err != nil) != tt.wantErr || len(objs) != tt.want {
			t.Errorf("List(%q, %q, %q) = %d objects, %v; want %d, error %v", tt.apiVersion, tt.kind, tt.namespace, len(objs), err, tt.want, tt.wantErr)
			continue
		}
		for _, o := range objs {
			if o["apiVersion"] != "apps/v1" || o["kind"] != "Deployment" {
				t.Errorf("List(%q, %q): item %v %v", tt.apiVersion, tt.kind, o["apiVersion"], o["kind"])
			}
		}
	}
	if ns, err := c.IsNamespaced("", "Deployment"); err != nil || !ns {
		t.Errorf("IsNamespaced(Deployment) = %v, %v", ns, err)
	}
}
