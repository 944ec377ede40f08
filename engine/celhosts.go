package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gavelpolicy/gavel/cel"
	icel "github.com/gavelpolicy/gavel/internal/cel"
)

// This file adapts the engine's hosts to Kyverno's CEL libraries (package
// cel's Libraries), for the CEL policy types.

// WithCELLibraries sets hosts of Kyverno's CEL libraries, which the CEL
// policy types (ValidatingPolicy and its siblings) call: chiefly HTTP (the
// http library: remote.HTTP on the network, inmem.HTTP offline), Random
// (random()) and AllowHTTPInNamespacedPolicies. The hosts it leaves nil
// come from the engine's own: Resource from the Client (when it addresses
// objects by resource: cel.ResourceClient, as inmem.Cluster and the
// cluster's client do), ImageData from the RegistryClient, GlobalContext
// from the GlobalContext, Now from WithClock and HostCallTimeout from the
// Limits. A library whose host is still missing fails with an error
// wrapping ErrNotConfigured. The generator and image verification hosts
// are the engine's, per GeneratingPolicy and ImageValidatingPolicy
// evaluation.
func WithCELLibraries(l cel.Libraries) Option {
	return func(c *config) error { c.celLibs = l; return nil }
}

// celLibraries returns the host side of the CEL libraries: WithCELLibraries
// completed with the engine's hosts. Every host is set (a missing one is
// an unconfigured stub naming the option that provides it).
func (c *config) celLibraries() *icel.Libraries {
	p := c.celLibs
	l := icel.Libraries{Resource: p.Resource, HTTP: p.HTTP, ImageData: p.ImageData, GlobalContext: p.GlobalContext,
		Now: p.Now, Random: p.Random, HostCallTimeout: p.HostCallTimeout, AllowHTTPInNamespacedPolicies: p.AllowHTTPInNamespacedPolicies}
	if l.Resource == nil {
		if rc, ok := c.client.(cel.ResourceClient); ok {
			l.Resource = rc
		} else if c.client != nil {
			l.Resource = celUnconfigured("resource library: the Client does not address objects by resource (it is no cel.ResourceClient; engine.WithCELLibraries)")
		} else {
			l.Resource = celUnconfigured("resource library: no Client (engine.WithClient)")
		}
	}
	if l.ImageData == nil {
		switch r := c.registry.(type) {
		case cel.ImageDataClient:
			l.ImageData = r
		case nil:
			l.ImageData = celUnconfigured("imagedata library: no RegistryClient (engine.WithRegistryClient)")
		default:
			l.ImageData = imageMetadata{r}
		}
	}
	if l.GlobalContext == nil {
		if c.globalContext != nil {
			l.GlobalContext = globalReferences{c.globalContext}
		} else {
			l.GlobalContext = celUnconfigured("globalcontext library: no GlobalContext (engine.WithGlobalContext)")
		}
	}
	if l.HTTP == nil {
		l.HTTP = celUnconfigured("http library: no HTTP client (engine.WithCELLibraries)")
	}
	if l.Generator == nil {
		l.Generator = celUnconfigured("generator library: no generator (GeneratingPolicy evaluation)")
	}
	if l.Now == nil {
		l.Now = c.now
	}
	if l.HostCallTimeout == 0 {
		l.HostCallTimeout = c.limits.HostCallTimeout
	}
	return &l
}

// celUnconfigured is a missing host of the CEL libraries.
type celUnconfigured string

func (u celUnconfigured) err() error { return fmt.Errorf("%s: %w", string(u), ErrNotConfigured) }

func (u celUnconfigured) GetResource(context.Context, string, string, string, string) (map[string]any, error) {
	return nil, u.err()
}

func (u celUnconfigured) ListResources(context.Context, string, string, string, map[string]string) (map[string]any, error) {
	return nil, u.err()
}

func (u celUnconfigured) PostResource(context.Context, string, string, string, map[string]any) (map[string]any, error) {
	return nil, u.err()
}

func (u celUnconfigured) ToGVR(context.Context, string, string) (schema.GroupVersionResource, error) {
	return schema.GroupVersionResource{}, u.err()
}

func (u celUnconfigured) Do(context.Context, cel.HTTPRequest) (cel.HTTPResponse, error) {
	return cel.HTTPResponse{}, u.err()
}

func (u celUnconfigured) ImageMetadata(context.Context, string) (map[string]any, error) {
	return nil, u.err()
}

func (u celUnconfigured) GlobalReference(context.Context, string, string) (any, error) {
	return nil, u.err()
}

func (u celUnconfigured) GenerateResources(context.Context, string, []map[string]any) error {
	return u.err()
}

// imageMetadata answers image.GetMetadata from a RegistryClient's image
// data (the ClusterPolicy context's shape): configData is config; tag and
// digest come from the reference and the resolved image.
type imageMetadata struct{ r RegistryClient }

func (m imageMetadata) ImageMetadata(ctx context.Context, reference string) (map[string]any, error) {
	d, err := m.r.ImageData(ctx, reference, nil)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(d)+2)
	for k, v := range d {
		out[k] = v
	}
	if cfg, ok := out["configData"]; ok {
		out["config"] = cfg
		delete(out, "configData")
	}
	ref, err := name.ParseReference(reference)
	if err != nil {
		return out, nil
	}
	if _, isTag := ref.(name.Tag); isTag {
		out["tag"] = ref.Identifier()
		if resolved, _ := out["resolvedImage"].(string); strings.Contains(resolved, "@") {
			out["digest"] = resolved[strings.LastIndexByte(resolved, '@')+1:]
		}
	} else {
		out["digest"] = ref.Identifier()
	}
	return out, nil
}

// globalReferences answers globalContext.Get from the GlobalContext: a
// missing entry is null, a projection a key of the entry's object.
type globalReferences struct{ g GlobalContext }

func (r globalReferences) GlobalReference(ctx context.Context, name, projection string) (any, error) {
	v, err := r.g.GlobalContextEntry(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil || projection == "" {
		return v, err
	}
	if m, ok := v.(map[string]any); ok {
		if p, ok := m[projection]; ok {
			return p, nil
		}
	}
	return nil, fmt.Errorf("projection %q not found", projection)
}
