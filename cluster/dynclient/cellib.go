package dynclient

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/gavelpolicy/gavel/cel"
)

// Client answers the CEL resource library as upstream's does: by API
// version and resource (plural name, "pods/status" for a subresource) on
// the dynamic client, without a RESTMapper; ToGVR maps kinds through it.
var _ cel.ResourceClient = (*Client)(nil)

// byResource returns the interface of a resource (and its subresources).
func (c *Client) byResource(apiVersion, resource, namespace string) (dynamic.ResourceInterface, []string, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, nil, err
	}
	parts := strings.Split(resource, "/")
	ri := c.dyn.Resource(gv.WithResource(parts[0]))
	if namespace != "" {
		return ri.Namespace(namespace), parts[1:], nil
	}
	return ri, parts[1:], nil
}

// GetResource implements cel.ResourceClient.
func (c *Client) GetResource(ctx context.Context, apiVersion, resource, namespace, name string) (map[string]any, error) {
	ri, sub, err := c.byResource(apiVersion, resource, namespace)
	if err != nil {
		return nil, err
	}
	u, err := ri.Get(ctx, name, metav1.GetOptions{}, sub...)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return u.Object, nil
}

// ListResources implements cel.ResourceClient; namespace "" lists every
// namespace.
func (c *Client) ListResources(ctx context.Context, apiVersion, resource, namespace string, l map[string]string) (map[string]any, error) {
	ri, sub, err := c.byResource(apiVersion, resource, namespace)
	if err != nil {
		return nil, err
	}
	if len(sub) > 0 {
		return nil, fmt.Errorf("cluster: cannot list subresource %s", resource)
	}
	var opts metav1.ListOptions
	if len(l) > 0 {
		opts.LabelSelector = labels.SelectorFromSet(l).String()
	}
	list, err := ri.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	return list.UnstructuredContent(), nil
}

// PostResource implements cel.ResourceClient.
func (c *Client) PostResource(ctx context.Context, apiVersion, resource, namespace string, obj map[string]any) (map[string]any, error) {
	ri, sub, err := c.byResource(apiVersion, resource, namespace)
	if err != nil {
		return nil, err
	}
	u, err := ri.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}, sub...)
	if err != nil {
		return nil, err
	}
	return u.Object, nil
}

// ToGVR implements cel.ResourceClient through the RESTMapper.
func (c *Client) ToGVR(_ context.Context, apiVersion, kind string) (schema.GroupVersionResource, error) {
	m, err := c.mapping(apiVersion, kind)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return m.Resource, nil
}
