package loader_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gavelpolicy/gavel/loader"
)

// TestContextImageMetadata: a context file's image is given to
// image.GetMetadata as upstream's CLI gives it: its fields by their JSON
// names, optional ones only when set, numbers as encoding/json decodes
// them.
func TestContextImageMetadata(t *testing.T) {
	dir := write(t, map[string]string{"context.yaml": `apiVersion: cli.kyverno.io/v1alpha1
kind: Context
metadata:
  name: context
spec:
  images:
  - image: ghcr.io/acme/app:v1
    resolvedImage: ghcr.io/acme/app:v1@sha256:abc
    registry: ghcr.io
    repository: acme/app
    tag: v1
    manifest:
      schemaVersion: 2
    config:
      config:
        User: "1000"
  - image: ghcr.io/acme/bare@sha256:def
    resolvedImage: ghcr.io/acme/bare@sha256:def
    registry: ghcr.io
    repository: acme/bare
`})
	c, err := loader.LoadContext(filepath.Join(dir, "context.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{
		"image": "ghcr.io/acme/app:v1", "resolvedImage": "ghcr.io/acme/app:v1@sha256:abc",
		"registry": "ghcr.io", "repository": "acme/app", "tag": "v1",
		"manifest": map[string]any{"schemaVersion": float64(2)},
		"config":   map[string]any{"config": map[string]any{"User": "1000"}},
	}, {
		"image": "ghcr.io/acme/bare@sha256:def", "resolvedImage": "ghcr.io/acme/bare@sha256:def",
		"registry": "ghcr.io", "repository": "acme/bare",
	}}
	reg := c.Registry()
	for i, im := range c.Spec.Images {
		got, err := reg.ImageMetadata(t.Context(), im.Image)
		if err != nil || !reflect.DeepEqual(got, want[i]) {
			t.Errorf("image %d: %#v, %v\nwant %#v", i, got, err, want[i])
		}
	}
}

// The image data of a context file, as image.GetMetadata returns it.
func ExampleContext_Registry() {
	c := &loader.Context{Spec: loader.ContextSpec{Images: []loader.ContextImage{{Image: "ghcr.io/acme/app:v1",
		ResolvedImage: "ghcr.io/acme/app:v1@sha256:abc", Registry: "ghcr.io", Repository: "acme/app", Tag: "v1",
		ConfigData: map[string]any{"architecture": "amd64"}}}}}
	md, err := c.Registry().ImageMetadata(context.Background(), "ghcr.io/acme/app:v1")
	fmt.Println(md, err)
	// Output:
	// map[config:map[architecture:amd64] image:ghcr.io/acme/app:v1 registry:ghcr.io repository:acme/app resolvedImage:ghcr.io/acme/app:v1@sha256:abc tag:v1] <nil>
}

// TestNamespacer: resources of namespaced kinds without a namespace are in
// "default", as the upstream CLI loads them; cluster-scoped built-in kinds
// and the kinds of cluster-scoped CRDs keep none; an existing namespace
// stays.
func TestNamespacer(t *testing.T) {
	crd := func(kind, scope string) map[string]any {
		return map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"spec": map[string]any{"group": "sea.test", "scope": scope, "names": map[string]any{"kind": kind}}}
	}
	n := loader.NewNamespacer(crd("Ocean", "Cluster"), crd("Fish", "Namespaced"))
	for _, tc := range []struct {
		apiVersion, kind, namespace, want string
	}{
		{"v1", "Pod", "", "default"},
		{"v1", "Pod", "shop", "shop"},
		{"apps/v1", "Deployment", "", "default"},
		{"v1", "Namespace", "", ""},
		{"rbac.authorization.k8s.io/v1", "ClusterRole", "", ""},
		{"storage.k8s.io/v1", "StorageClass", "", ""},
		// the group counts: a Namespace kind of another group is namespaced
		{"other.test/v1", "Namespace", "", "default"},
		{"sea.test/v1", "Ocean", "", ""},
		{"sea.test/v1", "Fish", "", "default"},
		{"sea.test/v1", "Crab", "", "default"},
		{"kyverno.io/v1", "ClusterPolicy", "", "default"},
	} {
		md := map[string]any{"name": "x"}
		if tc.namespace != "" {
			md["namespace"] = tc.namespace
		}
		obj := map[string]any{"apiVersion": tc.apiVersion, "kind": tc.kind, "metadata": md}
		n.Default(obj)
		if got, _ := md["namespace"].(string); got != tc.want {
			t.Errorf("%s %s in %q: namespace %q, want %q", tc.apiVersion, tc.kind, tc.namespace, got, tc.want)
		}
	}
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}
	n.Default(obj)
	if md, _ := obj["metadata"].(map[string]any); md["namespace"] != "default" {
		t.Errorf("no metadata: %v", obj)
	}
}

// Resources read from files without a namespace are in "default", as the
// upstream CLI loads them, unless their kind is cluster-scoped.
func ExampleNamespacer() {
	n := loader.NewNamespacer()
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web"}}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop"}}
	n.Default(pod)
	n.Default(ns)
	fmt.Println(pod["metadata"], ns["metadata"])
	// Output:
	// map[name:web namespace:default] map[name:shop]
}
