package inmem

import (
	"github.com/gavelpolicy/gavel/internal/deepcopy"

	"context"
	"reflect"
	"testing"
)

func TestAddOwned(t *testing.T) {
	obj := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cm", "namespace": "default"},
		"data":     map[string]any{"k": "v"},
	}
	before := deepcopy.Object(obj)
	c := New()
	c.AddOwned(obj)
	if !reflect.DeepEqual(obj, before) {
		t.Fatalf("AddOwned modified the object: %v", obj)
	}
	got, err := c.Get(context.Background(), "v1", "ConfigMap", "default", "cm")
	if err != nil {
		t.Fatal(err)
	}
	if got["data"].(map[string]any)["k"] != "v" {
		t.Fatalf("got %v", got)
	}
	md := got["metadata"].(map[string]any)
	if md["resourceVersion"] == nil {
		t.Fatalf("no resourceVersion: %v", got)
	}
	// what Get hands out is a copy
	got["data"].(map[string]any)["k"] = "changed"
	again, _ := c.Get(context.Background(), "v1", "ConfigMap", "default", "cm")
	if again["data"].(map[string]any)["k"] != "v" {
		t.Fatalf("the stored object changed: %v", again)
	}
}
