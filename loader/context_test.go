package loader_test

import (
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
	for i, im := range c.Spec.Images {
		got, err := im.Metadata()
		if err != nil || !reflect.DeepEqual(got, want[i]) {
			t.Errorf("image %d: %#v, %v\nwant %#v", i, got, err, want[i])
		}
	}
}

// The image data of a context file, as image.GetMetadata returns it.
func ExampleContextImage_Metadata() {
	im := loader.ContextImage{Image: "ghcr.io/acme/app:v1", ResolvedImage: "ghcr.io/acme/app:v1@sha256:abc",
		Registry: "ghcr.io", Repository: "acme/app", Tag: "v1", ConfigData: map[string]any{"architecture": "amd64"}}
	md, err := im.Metadata()
	fmt.Println(md, err)
	// Output:
	// map[config:map[architecture:amd64] image:ghcr.io/acme/app:v1 registry:ghcr.io repository:acme/app resolvedImage:ghcr.io/acme/app:v1@sha256:abc tag:v1] <nil>
}
