package loader

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/inmem"
)

// Context is the upstream CLI's context file (kind Context of
// cli.kyverno.io/v1alpha1, read by kyverno apply --context-file and by a
// test's context field): objects CEL policies read as if from the cluster,
// and image data.
type Context struct {
	APIVersion string         `json:"apiVersion,omitempty"`
	Kind       string         `json:"kind,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	Spec       ContextSpec    `json:"spec"`
}

// ContextSpec is the content of a Context.
type ContextSpec struct {
	Resources []map[string]any `json:"resources,omitempty"`
	Images    []ContextImage   `json:"images,omitempty"`
}

// ContextImage is the data of one image, as upstream's ImageData.
type ContextImage struct {
	Image         string `json:"image"`
	ResolvedImage string `json:"resolvedImage"`
	Registry      string `json:"registry"`
	Repository    string `json:"repository"`
	Tag           string `json:"tag,omitempty"`
	Digest        string `json:"digest,omitempty"`
	ImageIndex    any    `json:"imageIndex,omitempty"`
	Manifest      any    `json:"manifest,omitempty"`
	ConfigData    any    `json:"config,omitempty"`
}

// LoadContext reads a context file. Unknown fields are errors naming
// them, as for the other files of the upstream CLI; a kind other than
// Context is refused. The resources keep the numbers of a resource file.
func LoadContext(path string) (*Context, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	docs, err := api.ReadDocuments(f, path)
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("%s: %d documents, want one Context", path, len(docs))
	}
	d := docs[0]
	if k := d.Kind(); k != "" && k != "Context" {
		return nil, fmt.Errorf("%s: kind %s, want Context (cli.kyverno.io/v1alpha1)", path, k)
	}
	var c Context
	if err := api.DecodeStrict(d, &c); err != nil {
		return nil, err
	}
	// the objects as decoded from the file, not through encoding/json
	spec, _ := d.Object["spec"].(map[string]any)
	res, _ := spec["resources"].([]any)
	c.Spec.Resources = c.Spec.Resources[:0]
	for i, r := range res {
		obj, ok := r.(map[string]any)
		if k, _ := obj["kind"].(string); !ok || k == "" {
			return nil, fmt.Errorf("%s: spec.resources[%d] has no kind", path, i)
		}
		c.Spec.Resources = append(c.Spec.Resources, obj)
	}
	for _, im := range c.Spec.Images {
		if _, err := im.metadata(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return &c, nil
}

// Registry returns an in-memory registry holding the context's images:
// their data as the engine's imageRegistry context entries read it from a
// registry (inmem.Registry.Set), and their metadata as the upstream CLI
// gives it to the CEL image.GetMetadata (inmem.Registry.SetMetadata: the
// entry's fields by their JSON names, tag, digest, imageIndex, manifest
// and config only when set, numbers as float64).
func (c *Context) Registry() *inmem.Registry {
	reg := inmem.NewRegistry()
	for _, im := range c.Spec.Images {
		reg.Set(im.Image, im.registryData())
		if md, err := im.metadata(); err == nil { // LoadContext checked it
			reg.SetMetadata(im.Image, md)
		}
	}
	return reg
}

// registryData is the image's data as the engine's imageRegistry context
// entries read it from a registry (inmem.Registry.Set).
func (im ContextImage) registryData() map[string]any {
	id := im.Tag
	if im.Digest != "" {
		id = im.Digest
	}
	d := map[string]any{
		"image": im.Image, "resolvedImage": im.ResolvedImage, "registry": im.Registry,
		"repository": im.Repository, "identifier": id,
	}
	if im.Manifest != nil {
		d["manifest"] = im.Manifest
	}
	if im.ConfigData != nil {
		d["configData"] = im.ConfigData
	}
	return d
}

// metadata is the image's data as the upstream CLI gives it to the CEL
// image.GetMetadata from a context file: the entry's fields by their JSON
// names (tag, digest, imageIndex, manifest and config only when set), as
// encoding/json decodes them (numbers are float64).
func (im ContextImage) metadata() (map[string]any, error) {
	raw, err := json.Marshal(im)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", im.Image, err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("image %s: %w", im.Image, err)
	}
	return out, nil
}
