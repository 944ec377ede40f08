package inmem

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkAddOwned: storing objects, each teaching the cluster its
// kind's resource name (once per kind).
func BenchmarkAddOwned(b *testing.B) {
	objs := make([]map[string]any, 1000)
	for i := range objs {
		objs[i] = map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": fmt.Sprint("p", i), "namespace": "shop"}}
	}
	b.ReportAllocs()
	for b.Loop() {
		New().AddOwned(objs...)
	}
}

// BenchmarkGetResource: the CEL resource library's read of a custom kind
// by its resource name.
func BenchmarkGetResource(b *testing.B) {
	c := New(map[string]any{"apiVersion": "cloud.google.com/v1", "kind": "ComputeClass", "metadata": map[string]any{"name": "spot"}})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if obj, err := c.GetResource(ctx, "cloud.google.com/v1", "computeclasses", "", "spot"); obj == nil || err != nil {
			b.Fatal(obj, err)
		}
	}
}
