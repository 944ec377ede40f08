package engine

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
)

// ResourceMapper is an optional interface of a Client: the resource (the
// plural name, "deployments") of a kind, which the matchConstraints of
// CEL policy kinds select. Without it, or for a Request that gives its
// Resource, the engine takes the Request's Resource, else guesses the
// plural from the kind as upstream's CLI does (lower case, "s", "es" or
// "ies").
type ResourceMapper interface {
	ResourceFor(apiVersion, kind string) (string, error)
}

// metadataNameLabel is the label the API server puts on every Namespace:
// its name (namespace selectors may select it).
const metadataNameLabel = "kubernetes.io/metadata.name"

// kindData is what the CEL policy kinds read of a request, built once per
// request (and again after a mutation changed the object, gen).
type kindData struct {
	gen   int
	attrs celpolicy.Attributes
	// request is the request variable of ValidatingPolicy (with its
	// objects), built on first use
	request map[string]any
	// namespace is the Namespace of the request, read once (nsDone)
	namespace map[string]any
	nsDone    bool
	nsErr     error
}

// kindData returns the request's data for CEL policy kinds.
func (rs *reqState) kindData() *kindData {
	if kd := rs.kinds; kd != nil && kd.gen == rs.gen {
		return kd
	}
	kd := &kindData{gen: rs.gen}
	ci := rs.celData()
	g, v, res := rs.resource()
	name := rs.req.Name
	if name == "" {
		md, _ := rs.obj["metadata"].(map[string]any)
		name, _ = md["name"].(string)
	}
	op := string(rs.op)
	if rs.req.Background {
		op = string(api.Create)
	}
	kd.attrs = celpolicy.Attributes{Group: g, Version: v, Resource: res, Subresource: rs.req.SubResource,
		Operation: op, Namespace: rs.matchRes.Namespace, Name: name, Object: ci.object, OldObject: ci.oldObject,
		NamespaceLabels: rs.celNamespaceLabels}
	rs.kinds = kd
	return kd
}

// resource returns the group, version and resource of the request: the
// Request's, else the Client's (ResourceMapper), else guessed.
func (rs *reqState) resource() (group, version, resource string) {
	if r := rs.req.Resource; r.Resource != "" {
		return r.Group, r.Version, r.Resource
	}
	k := rs.gvk
	av := k.Version
	if k.Group != "" {
		av = k.Group + "/" + k.Version
	}
	if m, ok := rs.e.cfg.client.(ResourceMapper); ok {
		if r, err := m.ResourceFor(av, k.Kind); err == nil && r != "" {
			return k.Group, k.Version, r
		}
	}
	return k.Group, k.Version, guessResource(k.Kind)
}

// guessResource is upstream's guess of a kind's resource (apimachinery's
// UnsafeGuessKindToResource), with the irregular plurals of the built-in
// kinds.
func guessResource(kind string) string {
	switch kind {
	case "Endpoints":
		return "endpoints"
	case "":
		return ""
	}
	gvr, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Kind: kind})
	return gvr.Resource
}

// celNamespaceLabels are the labels of the request's namespace for
// namespace selectors: the request's or the NamespaceLabeler's, else
// those of its Namespace object; the API server's metadata.name label is
// always there.
func (rs *reqState) celNamespaceLabels() (map[string]string, error) {
	ns := rs.matchRes.Namespace
	labels, err := rs.namespaceLabels()
	if err != nil {
		return nil, err
	}
	if labels == nil {
		obj, err := rs.kindNamespace()
		if err != nil {
			return nil, err
		}
		md, _ := obj["metadata"].(map[string]any)
		if l, ok := md["labels"].(map[string]any); ok {
			labels = make(map[string]string, len(l)+1)
			for k, v := range l {
				if s, ok := v.(string); ok {
					labels[k] = s
				}
			}
		}
	}
	if _, ok := labels[metadataNameLabel]; !ok && ns != "" {
		out := make(map[string]string, len(labels)+1)
		for k, v := range labels {
			out[k] = v
		}
		out[metadataNameLabel] = ns
		labels = out
	}
	return labels, nil
}

// kindNamespace returns the Namespace of the request for the CEL policy
// kinds (namespaceObject): the Request's NamespaceObject, else the
// Namespace read through the Client; nil for cluster-scoped objects and
// Namespaces, and when it is not known (no Client, not found), as
// upstream's resolver gives null.
func (rs *reqState) kindNamespace() (map[string]any, error) {
	kd := rs.kinds
	if kd == nil || kd.gen != rs.gen {
		kd = rs.kindData()
	}
	if kd.nsDone {
		return kd.namespace, kd.nsErr
	}
	kd.nsDone = true
	ns := rs.matchRes.Namespace
	if ns == "" || (rs.gvk.Kind == "Namespace" && rs.gvk.Group == "" && rs.gvk.Version == "v1") {
		return nil, nil
	}
	if o := rs.req.NamespaceObject; o != nil {
		kd.namespace = o
		return o, nil
	}
	c := rs.e.cfg.client
	if c == nil {
		return nil, nil
	}
	ctx, done := rs.hostContext()
	obj, err := c.Get(ctx, "v1", "Namespace", "", ns)
	err = done(err)
	switch {
	case err == nil:
		kd.namespace = obj
	case !errors.Is(err, ErrNotFound):
		kd.nsErr = fmt.Errorf("namespace %q: %w", ns, err)
	}
	return kd.namespace, kd.nsErr
}

// kindRequest is the request variable of ValidatingPolicy: the admission
// request with its objects (null when absent).
func (rs *reqState) kindRequest() map[string]any {
	kd := rs.kindData()
	if kd.request != nil {
		return kd.request
	}
	r := rs.celRequest()
	ci := rs.celData()
	r["object"], r["oldObject"] = anyMap(ci.object), anyMap(ci.oldObject)
	if _, ok := r["uid"]; !ok {
		r["uid"] = ""
	}
	kd.request = r
	return r
}

// anyMap returns m, or a nil interface for a nil map (null).
func anyMap(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

// validationIndexProperty is the property upstream gives the failing and
// erroring results of CEL policy kinds: the position of the validation.
const validationIndexProperty = "cel.validationIndex"

// celKindResult appends a result of a CEL policy kind to the request's
// results.
func (rs *reqState) celKindResult(name string, status Status, msg string, err error, props map[string]string) *RuleResult {
	res := rs.nextResult()
	*res = RuleResult{Name: name, Type: Validation, Status: status, Message: msg, Properties: props}
	if status == StatusError {
		if err == nil {
			err = errors.New(msg)
		}
		res.Err = resultErr(celLimit(err))
	}
	return res
}

// joinKeys joins exception keys for messages.
func joinKeys(keys []string) string { return strings.Join(keys, ", ") }
