package dynclient

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/generate"
)

// Client is the engine.Client of generate rules, mutate-existing targets
// and the CEL rules' parameter objects (paramKind, paramRef) and
// namespaceObject, on a dynamic client: kinds are resolved to resources through a RESTMapper,
// objects travel as JSON-like maps. Update retries on conflicts (client-go's
// retry.RetryOnConflict): the object is written again over the latest
// resourceVersion, since the controller's write is the desired state.
// Client also implements generate.ServerSideApplier. It is safe for
// concurrent use.
type Client struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

var (
	_ engine.Client              = (*Client)(nil)
	_ engine.NamespacedKinds     = (*Client)(nil)
	_ generate.ServerSideApplier = (*Client)(nil)
)

// New returns a Client on dyn that resolves kinds with mapper.
func New(dyn dynamic.Interface, mapper meta.RESTMapper) *Client {
	return &Client{dyn: dyn, mapper: mapper}
}

// Mapping resolves a kind to its resource (see mapping).
func (c *Client) Mapping(apiVersion, kind string) (*meta.RESTMapping, error) {
	return c.mapping(apiVersion, kind)
}

// mapping resolves a kind to its resource through the mapper, reading
// discovery again when the kind is unknown (a CRD may have been installed
// since).
//
// An empty apiVersion (a match kind without group and version, such as
// "Deployment") names the kind in whichever group serves it, as upstream
// resolves match kinds through discovery: the mapper's first kind of that
// name, in its group priority (the core group first).
func (c *Client) mapping(apiVersion, kind string) (*meta.RESTMapping, error) {
	m, err := c.lookup(apiVersion, kind)
	if err != nil && meta.IsNoMatchError(err) {
		if rm, ok := c.mapper.(interface{ Reset() }); ok {
			rm.Reset()
			m, err = c.lookup(apiVersion, kind)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: kind %s %s: %w", apiVersion, kind, err)
	}
	return m, nil
}

func (c *Client) lookup(apiVersion, kind string) (*meta.RESTMapping, error) {
	if apiVersion == "" {
		return c.anyGroup(kind)
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	return c.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: kind}, gv.Version)
}

// anyGroup maps a kind given without group and version: the resources
// whose singular name is the kind's lower case (discovery's singularName,
// which defaults to it), keeping the first whose kind is exactly kind.
func (c *Client) anyGroup(kind string) (*meta.RESTMapping, error) {
	gvks, err := c.mapper.KindsFor(schema.GroupVersionResource{Resource: strings.ToLower(kind)})
	if err != nil {
		return nil, err
	}
	for _, gvk := range gvks {
		if gvk.Kind == kind {
			return c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
	}
	return nil, &meta.NoKindMatchError{GroupKind: schema.GroupKind{Kind: kind}}
}

// resource returns the resource interface of a kind, namespaced or not as
// the mapper says.
func (c *Client) resource(apiVersion, kind, namespace string) (dynamic.ResourceInterface, error) {
	m, err := c.mapping(apiVersion, kind)
	if err != nil {
		return nil, err
	}
	ri := c.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return ri.Namespace(namespace), nil
	}
	return ri, nil
}

// ResourceFor implements engine.ResourceMapper: the resource of a kind,
// from the RESTMapper.
func (c *Client) ResourceFor(apiVersion, kind string) (string, error) {
	m, err := c.mapping(apiVersion, kind)
	if err != nil {
		return "", err
	}
	return m.Resource.Resource, nil
}

// IsNamespaced implements engine.NamespacedKinds from the API server's
// discovery: whether the parameter objects of a CEL rule's paramKind
// live in namespaces (custom resources of either scope included).
func (c *Client) IsNamespaced(apiVersion, kind string) (bool, error) {
	m, err := c.mapping(apiVersion, kind)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// WrapNotFound turns a NotFound API error into one that wraps
// engine.ErrNotFound with the API server's text as it is (configmaps "x"
// not found), the text upstream's messages carry.
func WrapNotFound(err error) error {
	if err == nil {
		return nil
	}
	if apierrors.IsNotFound(err) {
		return notFound{err}
	}
	return err
}

type notFound struct{ err error }

func (e notFound) Error() string   { return e.err.Error() }
func (e notFound) Unwrap() []error { return []error{engine.ErrNotFound, e.err} }

// Get implements engine.Client.
func (c *Client) Get(ctx context.Context, apiVersion, kind, namespace, name string) (map[string]any, error) {
	ri, err := c.resource(apiVersion, kind, namespace)
	if err != nil {
		return nil, err
	}
	u, err := ri.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, WrapNotFound(err)
	}
	return u.Object, nil
}

// List implements engine.Client; namespace "" lists every namespace, and
// an empty apiVersion lists the kind of that name in whichever group
// serves it (see mapping).
func (c *Client) List(ctx context.Context, apiVersion, kind, namespace string, selector *metav1.LabelSelector) ([]map[string]any, error) {
	m, err := c.mapping(apiVersion, kind)
	if err != nil {
		return nil, err
	}
	var ri dynamic.ResourceInterface = c.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = c.dyn.Resource(m.Resource).Namespace(namespace)
	}
	var opts metav1.ListOptions
	if selector != nil {
		s, err := metav1.LabelSelectorAsSelector(selector)
		if err != nil {
			return nil, fmt.Errorf("cluster: label selector: %w", err)
		}
		opts.LabelSelector = s.String()
	}
	l, err := ri.List(ctx, opts)
	if err != nil {
		return nil, WrapNotFound(err)
	}
	out := make([]map[string]any, len(l.Items))
	for i := range l.Items {
		obj := l.Items[i].Object
		// items of a list have no apiVersion and kind of their own
		if _, ok := obj["kind"]; !ok {
			obj["kind"] = m.GroupVersionKind.Kind
			obj["apiVersion"] = m.GroupVersionKind.GroupVersion().String()
		}
		out[i] = obj
	}
	return out, nil
}

func (c *Client) objectResource(obj map[string]any) (*unstructured.Unstructured, dynamic.ResourceInterface, error) {
	u := &unstructured.Unstructured{Object: obj}
	if u.GetKind() == "" || u.GetAPIVersion() == "" {
		return nil, nil, errors.New("cluster: object without apiVersion or kind")
	}
	ri, err := c.resource(u.GetAPIVersion(), u.GetKind(), u.GetNamespace())
	return u, ri, err
}

// Create implements engine.Client.
func (c *Client) Create(ctx context.Context, obj map[string]any) (map[string]any, error) {
	u, ri, err := c.objectResource(obj)
	if err != nil {
		return nil, err
	}
	out, err := ri.Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	return out.Object, nil
}

// Update implements engine.Client. On a conflict the latest
// resourceVersion is read and the write is tried again.
func (c *Client) Update(ctx context.Context, obj map[string]any) (map[string]any, error) {
	u, ri, err := c.objectResource(obj)
	if err != nil {
		return nil, err
	}
	u = u.DeepCopy()
	var out *unstructured.Unstructured
	first := true
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first || u.GetResourceVersion() == "" {
			cur, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
			if err != nil {
				return err
			}
			u.SetResourceVersion(cur.GetResourceVersion())
		}
		first = false
		var err error
		out, err = ri.Update(ctx, u, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, WrapNotFound(err)
	}
	return out.Object, nil
}

// Delete implements engine.Client.
func (c *Client) Delete(ctx context.Context, apiVersion, kind, namespace, name string) error {
	ri, err := c.resource(apiVersion, kind, namespace)
	if err != nil {
		return err
	}
	return WrapNotFound(ri.Delete(ctx, name, metav1.DeleteOptions{}))
}

// Apply implements generate.ServerSideApplier with a forced server-side
// apply.
func (c *Client) Apply(ctx context.Context, obj map[string]any, fieldManager string) (map[string]any, error) {
	u, ri, err := c.objectResource(obj)
	if err != nil {
		return nil, err
	}
	u = u.DeepCopy()
	unstructured.RemoveNestedField(u.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	force := true
	out, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
	if err != nil {
		return nil, err
	}
	return out.Object, nil
}

// SplitKind splits "group/version/Kind", "version/Kind" or "Kind".
func SplitKind(s string) (group, version, kind string) {
	parts := strings.Split(s, "/")
	switch len(parts) {
	case 1:
		return "", "", parts[0]
	case 2:
		return "", parts[0], parts[1]
	default:
		return parts[0], parts[1], parts[len(parts)-1]
	}
}
