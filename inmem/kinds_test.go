package inmem

import (
	"context"
	"strings"
	"testing"
)

func TestKinds(t *testing.T) {
	for res, kind := range map[string]string{"pods": "Pod", "networkpolicies": "NetworkPolicy", "widgets": "Widget", "policies": "Policy", "ingresses": "Ingress"} {
		if got := kindFor(res); got != kind {
			t.Errorf("kindFor(%s) = %s, want %s", res, got, kind)
		}
	}
}

func TestResourceFor(t *testing.T) {
	for kind, res := range map[string]string{"Pod": "pods", "NetworkPolicy": "networkpolicies", "Widget": "widgets", "Gateway": "gateways",
		"Ingress": "ingresses", "Proxy": "proxies", "Box": "boxes", "Endpoints": "endpoints"} {
		if got := resourceFor(kind); got != res {
			t.Errorf("resourceFor(%s) = %s, want %s", kind, got, res)
		}
	}
}

// TestLearnedResourceNames: resource names of custom kinds come from the
// cluster's CRDs (irregular plurals included) and from its objects' kinds,
// per group; API paths and the CEL resource library read them.
func TestLearnedResourceNames(t *testing.T) {
	ctx := context.Background()
	crd := map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "octopi.sea.example.com"},
		"spec": map[string]any{"group": "sea.example.com", "scope": "Cluster",
			"names": map[string]any{"plural": "octopi", "singular": "octopus", "kind": "Octopus"}}}
	c := New(crd,
		map[string]any{"apiVersion": "sea.example.com/v1", "kind": "Octopus", "metadata": map[string]any{"name": "paul"}},
		map[string]any{"apiVersion": "cloud.google.com/v1", "kind": "ComputeClass", "metadata": map[string]any{"name": "spot"}, "spec": map[string]any{"a": "b"}})
	for _, tc := range []struct{ apiVersion, resource, name string }{
		{"sea.example.com/v1", "octopi", "paul"},
		{"cloud.google.com/v1", "computeclasses", "spot"},
	} {
		obj, err := c.GetResource(ctx, tc.apiVersion, tc.resource, "", tc.name)
		if err != nil || obj == nil {
			t.Fatalf("GetResource(%s, %s): %v, %v", tc.apiVersion, tc.resource, obj, err)
		}
		g, _ := splitAPIVersion(tc.apiVersion)
		raw, err := c.RawAbsPath(ctx, "/apis/"+tc.apiVersion+"/"+tc.resource+"/"+tc.name, "GET", nil)
		if err != nil || !strings.Contains(string(raw), `"name":"`+tc.name+`"`) {
			t.Errorf("RawAbsPath of %s/%s: %s, %v", g, tc.resource, raw, err)
		}
	}
	// another group's "computeclasses" is not the ComputeClass kind
	if obj, err := c.GetResource(ctx, "other.example.com/v1", "computeclasses", "", "spot"); err != nil || obj != nil {
		t.Errorf("another group: %v, %v", obj, err)
	}
	gvr, err := c.ToGVR(ctx, "sea.example.com/v1", "Octopus")
	if err != nil || gvr.Resource != "octopi" {
		t.Errorf("ToGVR(Octopus) = %v, %v; want octopi from the CRD", gvr, err)
	}
	list, err := c.ListResources(ctx, "cloud.google.com/v1", "computeclasses", "", nil)
	if items, _ := list["items"].([]any); err != nil || len(items) != 1 || list["kind"] != "ComputeClassList" {
		t.Errorf("ListResources(computeclasses) = %v, %v", list, err)
	}
}
