package inmem_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
)

func pod(name, ns string, labels map[string]any) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name, "namespace": ns, "labels": labels}}
}

func TestCluster(t *testing.T) {
	ctx := context.Background()
	c := inmem.New(
		pod("a", "x", map[string]any{"app": "web"}),
		pod("b", "x", map[string]any{"app": "db"}),
		pod("c", "y", nil),
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "x", "labels": map[string]any{"env": "prod"}}},
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "x"}, "data": map[string]any{"k": "v"}},
	)
	if _, err := c.Get(ctx, "v1", "Pod", "x", "zz"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Get missing: %v", err)
	}
	list, err := c.List(ctx, "v1", "Pod", "x", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}})
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %v, %v", list, err)
	}
	labels, err := c.NamespaceLabels(ctx, "x")
	if err != nil || labels["env"] != "prod" {
		t.Errorf("NamespaceLabels = %v, %v", labels, err)
	}
	cm, err := c.GetConfigMap(ctx, "x", "cm")
	if err != nil || cm["data"].(map[string]any)["k"] != "v" {
		t.Errorf("GetConfigMap = %v, %v", cm, err)
	}
	raw, err := c.RawAbsPath(ctx, "/api/v1/namespaces/x/pods", "GET", nil)
	if err != nil {
		t.Fatal(err)
	}
	var l map[string]any
	if err := json.Unmarshal(raw, &l); err != nil || l["kind"] != "PodList" || len(l["items"].([]any)) != 2 {
		t.Errorf("list path = %s, %v", raw, err)
	}
	raw, err = c.RawAbsPath(ctx, "/api/v1/pods?labelSelector=app%3Ddb", "GET", nil)
	if err != nil || json.Unmarshal(raw, &l) != nil || len(l["items"].([]any)) != 1 {
		t.Errorf("selector path = %s, %v", raw, err)
	}
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"fieldSelector=metadata.name%3Da", 1},
		{"fieldSelector=metadata.name==a", 1},
		{"fieldSelector=metadata.name!=a", 1},
		{"fieldSelector=metadata.name%3Dnone", 0},
		{"fieldSelector=metadata.namespace%3Dx,metadata.name!=none&labelSelector=app%3Ddb", 1},
	} {
		raw, err = c.RawAbsPath(ctx, "/api/v1/namespaces/x/pods?"+tc.query, "GET", nil)
		if err != nil || json.Unmarshal(raw, &l) != nil || len(l["items"].([]any)) != tc.want {
			t.Errorf("%s = %s, %v; want %d items", tc.query, raw, err, tc.want)
		}
	}
	if _, err := c.RawAbsPath(ctx, "/api/v1/pods?fieldSelector=spec.nodeName%3Dn", "GET", nil); err == nil {
		t.Error("a field selector on another field must fail")
	}
	if _, err := c.RawAbsPath(ctx, "/api/v1/namespaces/x/pods/a", "GET", nil); err != nil {
		t.Errorf("get path: %v", err)
	}
	// writes
	if _, err := c.Create(ctx, pod("a", "x", nil)); err == nil {
		t.Error("Create of an existing object must fail")
	}
	c.Deny = func(verb string, obj map[string]any) error { return errors.New("forbidden") }
	if _, err := c.Create(ctx, pod("n", "x", nil)); err == nil || err.Error() != "forbidden" {
		t.Errorf("Deny hook: %v", err)
	}
	c.Deny = nil
	got, err := c.Get(ctx, "v1", "Pod", "x", "a")
	if err != nil {
		t.Fatal(err)
	}
	got["metadata"].(map[string]any)["labels"] = map[string]any{"changed": "yes"}
	again, _ := c.Get(ctx, "v1", "Pod", "x", "a")
	if again["metadata"].(map[string]any)["labels"].(map[string]any)["app"] != "web" {
		t.Error("Get must return a copy")
	}
	if err := c.Delete(ctx, "v1", "Pod", "x", "a"); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "v1", "Pod", "x", "a"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("second Delete: %v", err)
	}
}
