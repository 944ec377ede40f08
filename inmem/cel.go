package inmem

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/internal/deepcopy"
)

// The hosts of Kyverno's CEL libraries (cel.Libraries): the cluster
// answers the resource library, the registry image.GetMetadata, the
// global context globalContext.Get, and HTTP the http library.
var (
	_ cel.ResourceClient      = (*Cluster)(nil)
	_ cel.ImageDataClient     = (*Registry)(nil)
	_ cel.GlobalContextReader = (*GlobalContext)(nil)
	_ cel.HTTPClient          = (*HTTP)(nil)
)

// splitSubresource splits "pods/status" into the resource and its
// subresource.
func splitSubresource(resource string) (string, string) {
	r, sub, _ := strings.Cut(resource, "/")
	return r, sub
}

// GetResource implements cel.ResourceClient: the object of the resource's
// kind (the resource names of the built-in kinds, and those the cluster
// learns from its CustomResourceDefinitions and objects), or (nil, nil);
// the status subresource is the object itself.
func (c *Cluster) GetResource(ctx context.Context, apiVersion, resource, namespace, name string) (map[string]any, error) {
	resource, sub := splitSubresource(resource)
	if sub != "" && sub != "status" {
		return nil, fmt.Errorf("in-memory cluster: subresource %q of %s is not supported", sub, resource)
	}
	obj, err := c.Get(ctx, apiVersion, c.kindOf(apiVersion, resource), namespace, name)
	if errors.Is(err, engine.ErrNotFound) {
		return nil, nil
	}
	return obj, err
}

// ListResources implements cel.ResourceClient: a list object of the
// objects of the resource's kind and exact API version whose labels hold
// labels, in every namespace when namespace is empty.
func (c *Cluster) ListResources(ctx context.Context, apiVersion, resource, namespace string, labels map[string]string) (map[string]any, error) {
	resource, sub := splitSubresource(resource)
	if sub != "" {
		return nil, fmt.Errorf("in-memory cluster: cannot list subresource %q of %s", sub, resource)
	}
	var sel *metav1.LabelSelector
	if len(labels) > 0 {
		sel = &metav1.LabelSelector{MatchLabels: labels}
	}
	kind := c.kindOf(apiVersion, resource)
	objs, err := c.List(ctx, apiVersion, kind, namespace, sel)
	if err != nil {
		return nil, err
	}
	items := make([]any, len(objs))
	for i, o := range objs {
		items[i] = o
	}
	return map[string]any{"apiVersion": apiVersion, "kind": kind + "List", "metadata": map[string]any{}, "items": items}, nil
}

// PostResource implements cel.ResourceClient: it creates the object (of
// the resource's kind and API version when it names none, in namespace
// when it is set) and returns it.
func (c *Cluster) PostResource(ctx context.Context, apiVersion, resource, namespace string, obj map[string]any) (map[string]any, error) {
	resource, sub := splitSubresource(resource)
	if sub != "" {
		return nil, fmt.Errorf("in-memory cluster: cannot create subresource %q of %s", sub, resource)
	}
	o := deepcopy.Object(obj)
	if o == nil {
		o = map[string]any{}
	}
	if _, ok := o["apiVersion"].(string); !ok {
		o["apiVersion"] = apiVersion
	}
	if _, ok := o["kind"].(string); !ok {
		o["kind"] = c.kindOf(apiVersion, resource)
	}
	if namespace != "" {
		md, ok := o["metadata"].(map[string]any)
		if !ok {
			md = map[string]any{}
			o["metadata"] = md
		}
		md["namespace"] = namespace
	}
	return c.Create(ctx, o)
}

// ToGVR implements cel.ResourceClient with the resource names the
// cluster knows (built-in kinds, its CustomResourceDefinitions), else the
// kind in lower case made plural.
func (c *Cluster) ToGVR(_ context.Context, apiVersion, kind string) (schema.GroupVersionResource, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	if kind == "" {
		return schema.GroupVersionResource{}, fmt.Errorf("in-memory cluster: no resource for an empty kind")
	}
	return gv.WithResource(c.resourceOf(apiVersion, kind)), nil
}

// ImageMetadata implements cel.ImageDataClient: the metadata set for the
// reference (SetMetadata), else the image data set for it (Set) in the
// shape of the CEL libraries: the ClusterPolicy context's configData is
// config, and tag and digest are filled from the reference and the
// resolved image when the data has none.
func (r *Registry) ImageMetadata(ctx context.Context, reference string) (map[string]any, error) {
	r.mu.RLock()
	md, ok := r.metadata[reference]
	r.mu.RUnlock()
	if ok {
		return deepcopy.Object(md), nil
	}
	d, err := r.ImageData(ctx, reference, nil)
	if err != nil {
		return nil, err
	}
	if cfg, ok := d["configData"]; ok {
		if _, has := d["config"]; !has {
			d["config"] = cfg
		}
		delete(d, "configData")
	}
	ref, err := name.ParseReference(reference)
	if err != nil {
		return d, nil
	}
	if _, has := d["tag"]; !has {
		if _, isTag := ref.(name.Tag); isTag {
			d["tag"] = ref.Identifier()
		}
	}
	if _, has := d["digest"]; !has {
		if _, isTag := ref.(name.Tag); !isTag {
			d["digest"] = ref.Identifier()
		} else if resolved, _ := d["resolvedImage"].(string); strings.Contains(resolved, "@") {
			d["digest"] = resolved[strings.LastIndexByte(resolved, '@')+1:]
		}
	}
	return d, nil
}

// GlobalReference implements cel.GlobalContextReader: the entry's value,
// or, with a projection, the value of that key of the entry (an object);
// a missing entry is (nil, nil).
func (g *GlobalContext) GlobalReference(ctx context.Context, name, projection string) (any, error) {
	v, err := g.GlobalContextEntry(ctx, name)
	if errors.Is(err, engine.ErrNotFound) {
		return nil, nil
	}
	if err != nil || projection == "" {
		return v, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("projection %q not found in global context entry %q: stored value is not an object", projection, name)
	}
	p, ok := m[projection]
	if !ok {
		return nil, fmt.Errorf("projection %q not found in global context entry %q", projection, name)
	}
	return p, nil
}

// HTTP is an in-memory HTTP host: responses by method and URL, as the
// upstream CLI's HTTP mocks give them, and optionally a host for the
// requests they do not answer (SetFallback). It serves the CEL http
// library (Do, a cel.HTTPClient) and apiCall service context entries
// (Call, an engine.ServiceCaller) from the same handlers. It is safe for
// concurrent use.
type HTTP struct {
	mu       sync.RWMutex
	handlers map[string]func(cel.HTTPRequest) (cel.HTTPResponse, error)
	fallback cel.HTTPClient
}

var (
	_ cel.HTTPClient       = (*HTTP)(nil)
	_ engine.ServiceCaller = (*HTTP)(nil)
)

// NewHTTP returns an HTTP host without responses.
func NewHTTP() *HTTP {
	return &HTTP{handlers: map[string]func(cel.HTTPRequest) (cel.HTTPResponse, error){}}
}

// Handle sets the handler of requests of method ("" for any method) to
// url.
func (h *HTTP) Handle(method, url string, fn func(cel.HTTPRequest) (cel.HTTPResponse, error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.handlers[strings.ToUpper(method)+" "+url] = fn
}

// SetFallback sends the requests that no handler answers to next (nil:
// none), as the upstream CLI sends the requests its mocks do not answer
// to the network (remote.HTTP is such a host).
func (h *HTTP) SetFallback(next cel.HTTPClient) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fallback = next
}

// Do implements cel.HTTPClient: the handler of the request's method and
// URL, else of its URL, else the fallback host; a request none of them
// answers is an error wrapping engine.ErrNotFound.
func (h *HTTP) Do(ctx context.Context, req cel.HTTPRequest) (cel.HTTPResponse, error) {
	h.mu.RLock()
	fn, ok := h.handlers[strings.ToUpper(req.Method)+" "+req.URL]
	if !ok {
		fn, ok = h.handlers[" "+req.URL]
	}
	next := h.fallback
	h.mu.RUnlock()
	switch {
	case ok:
		return fn(req)
	case next != nil:
		return next.Do(ctx, req)
	}
	return cel.HTTPResponse{}, fmt.Errorf("in-memory HTTP: no response for %s %s: %w", req.Method, req.URL, engine.ErrNotFound)
}

// Call implements engine.ServiceCaller (apiCall service context entries)
// on the handlers and fallback of Do: the request is Do's (method GET when
// it names none), the result the body of a 2xx response; another status
// is an error, as remote.Services gives it.
func (h *HTTP) Call(ctx context.Context, req engine.ServiceRequest) ([]byte, error) {
	method := req.Method
	if method == "" {
		method = "GET"
	}
	resp, err := h.Do(ctx, cel.HTTPRequest{Method: method, URL: req.URL, Headers: req.Headers, Body: req.Body, CABundle: req.CABundle})
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("service %s: HTTP %d", req.URL, resp.StatusCode)
	}
	return resp.Body, nil
}
