package cluster

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gavelpolicy/gavel/engine"
)

func TestConfigMapsAndNamespaceLabels(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	h, _ := fakeHost(t, []runtime.Object{cm, namespace("team-a", map[string]string{"team": "a"})}, nil, nil)
	ctx := t.Context()

	got, err := h.GetConfigMap(ctx, "default", "cfg")
	if err != nil {
		t.Fatal(err)
	}
	if got["kind"] != "ConfigMap" || got["data"].(map[string]any)["k"] != "v" {
		t.Errorf("GetConfigMap = %v", got)
	}
	if _, err := h.GetConfigMap(ctx, "default", "missing"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("missing ConfigMap: %v, want ErrNotFound", err)
	}
	labels, err := h.NamespaceLabels(ctx, "team-a")
	if err != nil || labels["team"] != "a" {
		t.Errorf("NamespaceLabels = %v, %v", labels, err)
	}

	// a ConfigMap created later is seen through the informer
	cm2 := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: "default"}}
	if _, err := h.kube.CoreV1().ConfigMaps("default").Create(ctx, cm2, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new ConfigMap", func() bool {
		_, err := h.GetConfigMap(ctx, "default", "later")
		return err == nil
	})
}

func exception(ns, name, policy string, valid bool) *unstructured.Unstructured {
	spec := map[string]any{
		"exceptions": []any{map[string]any{"policyName": policy, "ruleNames": []any{"r"}}},
		"match":      map[string]any{"any": []any{map[string]any{"resources": map[string]any{"kinds": []any{"Pod"}}}}},
	}
	if !valid {
		spec["exceptions"] = []any{map[string]any{"ruleNames": []any{"r"}}} // no policyName
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kyverno.io/v2", "kind": "PolicyException",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
}

func TestExceptionsCompiledWhenTheyChange(t *testing.T) {
	h, dyn := fakeHost(t, nil, []runtime.Object{exception("gavel", "e1", "p1", true)}, func(h *Host) {
		h.opts.ExceptionNamespaces = []string{"gavel"}
	})
	ctx := t.Context()
	count := func() int {
		set, err := h.Exceptions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return set.Len()
	}
	if n := count(); n != 1 {
		t.Fatalf("exceptions at start = %d, want 1", n)
	}
	ri := dyn.Resource(PolicyExceptions)
	// another namespace is not allowed
	if _, err := ri.Namespace("other").Create(ctx, exception("other", "e2", "p1", true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// an invalid one is left out and reported, the valid ones stay
	if _, err := ri.Namespace("gavel").Create(ctx, exception("gavel", "bad", "p1", false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the invalid exception's error", func() bool { return h.exceptionsError() != nil })
	if n := count(); n != 1 {
		t.Errorf("exceptions = %d, want 1", n)
	}
	if _, err := ri.Namespace("gavel").Create(ctx, exception("gavel", "e3", "p2", true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "two exceptions", func() bool { return count() == 2 })
	if err := ri.Namespace("gavel").Delete(ctx, "e1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "one exception", func() bool { return count() == 1 })
}

func TestClientUpdateRetriesConflicts(t *testing.T) {
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "default"},
		"data":     map[string]any{"a": "1"},
	}}
	h, dyn := fakeHost(t, nil, []runtime.Object{cm}, nil)
	conflicts := 2
	dyn.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "c", errors.New("stale"))
		}
		return false, nil, nil
	})
	c := h.client
	ctx := context.Background()
	obj, err := c.Get(ctx, "v1", "ConfigMap", "default", "c")
	if err != nil {
		t.Fatal(err)
	}
	obj["data"] = map[string]any{"a": "2"}
	if _, err := c.Update(ctx, obj); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if conflicts != 0 {
		t.Errorf("conflicts left %d", conflicts)
	}
	got, _ := c.Get(ctx, "v1", "ConfigMap", "default", "c")
	if got["data"].(map[string]any)["a"] != "2" {
		t.Errorf("after Update: %v", got["data"])
	}
	if err := c.Delete(ctx, "v1", "ConfigMap", "default", "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "v1", "ConfigMap", "default", "c"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Get after Delete: %v", err)
	}
	if _, err := c.Get(ctx, "v1", "Widget", "default", "c"); err == nil {
		t.Error("unknown kind: no error")
	}
}

// A subresource request gets its resource's kind from the mapper.
func TestSetResourceKind(t *testing.T) {
	h, _ := fakeHost(t, nil, nil, nil)
	for _, tt := range []struct {
		req  engine.Request
		want string
	}{
		{engine.Request{SubResource: "exec", Kind: schema.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"},
			Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}}, "Pod"},
		{engine.Request{Kind: schema.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}}, ""},
		{engine.Request{SubResource: "scale", Resource: schema.GroupVersionResource{Group: "unknown.io", Version: "v1", Resource: "things"}}, ""},
	} {
		h.SetResourceKind(&tt.req)
		if tt.req.ResourceKind.Kind != tt.want {
			t.Errorf("%s/%s: ResourceKind %q, want %q", tt.req.Resource.Resource, tt.req.SubResource, tt.req.ResourceKind.Kind, tt.want)
		}
	}
}
