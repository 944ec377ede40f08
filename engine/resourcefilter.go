package engine

import "k8s.io/apimachinery/pkg/runtime/schema"

// WithResourceFilter sets the host's resource filter, upstream's
// resourceFilters (the kyverno ConfigMap): filtered reports whether a
// resource is left out of evaluation; kind is the resource's (for a
// subresource request its parent's, Request.ResourceKind), subresource
// the request's ("" for the resource itself). Validate, Mutate and
// Generate (and so Scan) answer a request whose object or old object it
// filters with an empty response (the object unchanged, no results), and
// the background pass of MutatingPolicies (MutateExisting and the targets
// of a trigger) leaves out the targets it filters. It is called on every
// evaluation and must be cheap and safe for concurrent use. Without it
// nothing is filtered.
func WithResourceFilter(filtered func(kind schema.GroupVersionKind, subresource, namespace, name string) bool) Option {
	return func(c *config) error { c.filter = filtered; return nil }
}

// filtered reports whether the host's filter leaves the request out: its
// object or its old object (upstream checks both), by their own name and
// namespace (the request's when the object has none, as for a namespaced
// object created without one).
func (e *Engine) filtered(req *Request, object, oldObject map[string]any) bool {
	f := e.cfg.filter
	if f == nil {
		return false
	}
	for _, obj := range [2]map[string]any{object, oldObject} {
		if obj == nil {
			continue
		}
		name, ns := objectMeta(obj)
		if name == "" {
			name = req.Name
		}
		if ns == "" {
			ns = req.Namespace
		}
		if f(req.gvk(obj), req.SubResource, ns, name) {
			return true
		}
	}
	return false
}

// filteredObject reports whether the host's filter leaves out an object
// evaluated on its own (a target of a background pass).
func (e *Engine) filteredObject(obj map[string]any) bool {
	if e.cfg.filter == nil {
		return false
	}
	return e.filtered(&Request{}, obj, nil)
}

// filteredResponse is the answer to a filtered request: the object as it
// came (the old object for a deletion), no results.
func filteredResponse(object, oldObject map[string]any) *Response {
	if object == nil {
		object = oldObject
	}
	return &Response{Resource: object}
}
