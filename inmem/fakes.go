package inmem

import (
	"context"
	"fmt"
	"sync"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/internal/deepcopy"
)

// Registry is an in-memory engine.RegistryClient: image data by reference.
// It also answers the CEL image.GetMetadata (cel.ImageDataClient): the
// metadata set for a reference (SetMetadata), else the image data in the
// CEL libraries' shape.
type Registry struct {
	mu       sync.RWMutex
	images   map[string]map[string]any
	metadata map[string]map[string]any
}

var _ engine.RegistryClient = (*Registry)(nil)

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{images: map[string]map[string]any{}, metadata: map[string]map[string]any{}}
}

// Set stores the image data returned for reference (upstream's ImageData
// shape: image, resolvedImage, registry, repository, identifier, manifest,
// configData).
func (r *Registry) Set(reference string, data map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.images[reference] = deepcopy.Object(data)
}

// SetMetadata stores the metadata image.GetMetadata returns for
// reference, as it is (upstream's shape: image, resolvedImage, registry,
// repository, tag, digest, imageIndex, manifest, config), in place of the
// one derived from the image data.
func (r *Registry) SetMetadata(reference string, data map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.metadata[reference] = deepcopy.Object(data)
}

// ImageData implements engine.RegistryClient.
func (r *Registry) ImageData(_ context.Context, reference string, _ *api.ImageRegistryCredentials) (map[string]any, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	d, ok := r.images[reference]
	if !ok {
		return nil, fmt.Errorf("image %s: %w", reference, engine.ErrNotFound)
	}
	return deepcopy.Object(d), nil
}

// GlobalContext is an in-memory engine.GlobalContext.
type GlobalContext struct {
	mu      sync.RWMutex
	entries map[string]any
}

var _ engine.GlobalContext = (*GlobalContext)(nil)

// NewGlobalContext returns an empty global context.
func NewGlobalContext() *GlobalContext { return &GlobalContext{entries: map[string]any{}} }

// Set stores an entry.
func (g *GlobalContext) Set(name string, v any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.entries[name] = deepcopy.Value(v)
}

// GlobalContextEntry implements engine.GlobalContext.
func (g *GlobalContext) GlobalContextEntry(_ context.Context, name string) (any, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	v, ok := g.entries[name]
	if !ok {
		return nil, fmt.Errorf("global context entry %s: %w", name, engine.ErrNotFound)
	}
	return deepcopy.Value(v), nil
}
