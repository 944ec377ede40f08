package dynclient

import (
	"context"
	"errors"
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"

	"github.com/gavelpolicy/gavel/engine"
)

func fakeClient(objs ...runtime.Object) *Client {
	listKinds := map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "configmaps"}: "ConfigMapList",
		{Version: "v1", Resource: "namespaces"}: "NamespaceList",
	}
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	return New(dyn, mapper)
}

func TestDirectReads(t *testing.T) {
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "team", "labels": map[string]any{"env": "prod"}},
	}}
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "limits", "namespace": "team"},
		"data":     map[string]any{"max": "3"},
	}}
	c := fakeClient(ns, cm)
	ctx := context.Background()

	labels, err := c.NamespaceLabels(ctx, "team")
	if err != nil || !maps.Equal(labels, map[string]string{"env": "prod"}) {
		t.Errorf("NamespaceLabels(team) = %v, %v", labels, err)
	}
	if _, err := c.NamespaceLabels(ctx, "none"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("NamespaceLabels(none) error = %v, want ErrNotFound", err)
	}
	obj, err := c.GetConfigMap(ctx, "team", "limits")
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := obj["data"].(map[string]any); d["max"] != "3" {
		t.Errorf("GetConfigMap data = %v", obj["data"])
	}
	if _, err := c.GetConfigMap(ctx, "team", "none"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("GetConfigMap(none) error = %v, want ErrNotFound", err)
	}
}

func TestAPIClientNotConfigured(t *testing.T) {
	var a *APIClient
	if _, err := a.RawAbsPath(context.Background(), "/api/v1", "GET", nil); !errors.Is(err, engine.ErrNotConfigured) {
		t.Errorf("RawAbsPath on nil = %v, want ErrNotConfigured", err)
	}
	if _, err := NewAPIClient(nil).RawAbsPath(context.Background(), "/api/v1", "GET", nil); !errors.Is(err, engine.ErrNotConfigured) {
		t.Errorf("RawAbsPath without REST client = %v, want ErrNotConfigured", err)
	}
}
