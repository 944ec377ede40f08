// Package resource is Kyverno's resource library: resource.Get, List,
// Post and ToGVR (and their camelCase names) on the resource variable,
// which reads and creates cluster objects through the host's Client,
// addressed as upstream addresses them: by API version and resource
// (plural name). A namespaced policy's library has no namespace
// argument: it is the policy's.
package resource

import (
	"context"
	"fmt"
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gavelpolicy/gavel/internal/cellib/call"
)

// VarName is the name of the library's variable.
const VarName = "resource"

// ContextType is the type of the resource variable.
var ContextType = types.NewOpaqueType("resource.Context")

// GVRType is the type of the values ToGVR returns.
var GVRType = types.NewOpaqueType("schema.GroupVersionResource")

// Client is the host of the resource library. Objects are JSON-like maps,
// addressed by API version ("v1", "apps/v1") and resource ("configmaps",
// "deployments", or "pods/status" for a subresource); an empty namespace
// means cluster-scoped objects (Get, Post) or every namespace (List).
// Every method gets the evaluation's context, bounded by the host call
// timeout.
type Client interface {
	// GetResource returns an object, or (nil, nil) when it does not
	// exist (a null value for the expression).
	GetResource(ctx context.Context, apiVersion, resource, namespace, name string) (map[string]any, error)
	// ListResources returns a list object (apiVersion, kind, metadata
	// and items, an empty list when nothing matches), of the objects
	// whose labels hold every pair of labels (all of them for none).
	ListResources(ctx context.Context, apiVersion, resource, namespace string, labels map[string]string) (map[string]any, error)
	// PostResource creates an object and returns it as created (or the
	// response of a virtual resource such as a SubjectAccessReview).
	PostResource(ctx context.Context, apiVersion, resource, namespace string, obj map[string]any) (map[string]any, error)
	// ToGVR returns the resource of a kind in an API version.
	ToGVR(ctx context.Context, apiVersion, kind string) (schema.GroupVersionResource, error)
}

// Context is the value of the resource variable: the host's Client bound
// to one evaluation.
type Context struct {
	Client Client
	Scope  call.Scope
}

// ConvertToNative converts to *Context.
func (c *Context) ConvertToNative(typeDesc reflect.Type) (any, error) {
	if reflect.TypeOf(c).AssignableTo(typeDesc) {
		return c, nil
	}
	return nil, fmt.Errorf("type conversion error from '%s' to '%v'", ContextType, typeDesc)
}

// ConvertToType converts to the value's own type only.
func (c *Context) ConvertToType(typeVal ref.Type) ref.Val {
	if typeVal == ContextType {
		return c
	}
	if typeVal == types.TypeType {
		return ContextType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", ContextType, typeVal)
}

// Equal is identity.
func (c *Context) Equal(other ref.Val) ref.Val {
	o, ok := other.(*Context)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(c == o)
}

// Type returns ContextType.
func (c *Context) Type() ref.Type { return ContextType }

// Value returns the Context.
func (c *Context) Value() any { return c }

// GVR is a value of GVRType.
type GVR struct{ schema.GroupVersionResource }

// ConvertToNative converts to schema.GroupVersionResource (or a pointer to
// it) and to its string.
func (g GVR) ConvertToNative(typeDesc reflect.Type) (any, error) {
	switch {
	case reflect.TypeOf(g).AssignableTo(typeDesc):
		return g, nil
	case reflect.TypeOf(g.GroupVersionResource).AssignableTo(typeDesc):
		return g.GroupVersionResource, nil
	case reflect.TypeOf(&g.GroupVersionResource).AssignableTo(typeDesc):
		gvr := g.GroupVersionResource
		return &gvr, nil
	case typeDesc.Kind() == reflect.String:
		return g.String(), nil
	}
	return nil, fmt.Errorf("type conversion error from '%s' to '%v'", GVRType, typeDesc)
}

// ConvertToType converts to the value's own type and to string.
func (g GVR) ConvertToType(typeVal ref.Type) ref.Val {
	switch typeVal {
	case GVRType:
		return g
	case types.StringType:
		return types.String(g.String())
	case types.TypeType:
		return GVRType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", GVRType, typeVal)
}

// Equal compares the group, version and resource.
func (g GVR) Equal(other ref.Val) ref.Val {
	o, ok := other.(GVR)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(g.GroupVersionResource == o.GroupVersionResource)
}

// Type returns GVRType.
func (g GVR) Type() ref.Type { return GVRType }

// Value returns the schema.GroupVersionResource.
func (g GVR) Value() any { return g.GroupVersionResource }
