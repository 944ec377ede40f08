// Package http is Kyverno's http library: http.Get, http.Post and
// http.Client (and their camelCase names) on the http variable, which
// calls HTTP(S) endpoints through the host's Client. The library builds
// requests and responses as upstream does: a POST body is the JSON of the
// data (protobuf's JSON mapping of the CEL value, as encoding/json writes
// it), a response is its JSON body with its status code added
// ("statusCode"), or {"body": body, "statusCode": code} when the body is
// not an object (null when it is not JSON).
package http

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/gavelpolicy/gavel/internal/cellib/call"
)

// VarName is the name of the library's variable.
const VarName = "http"

// ContextType is the type of the http variable and of http.Client's
// results.
var ContextType = types.NewOpaqueType("http.Context")

// Request is one HTTP request of an expression.
type Request struct {
	// Method is GET or POST.
	Method string
	URL    string
	// Headers are the expression's headers (none are added).
	Headers map[string]string
	// Body is the POST body, JSON.
	Body []byte
	// CABundle, when set, is the PEM bundle that replaces the system's
	// roots for this request (http.Client(caBundle)).
	CABundle string
	// Namespace is the namespace of the calling policy, "" for a
	// cluster-wide one: a host that allows namespaced policies' calls
	// (Context.AllowNamespaced) may still refuse some of them.
	Namespace string
}

// Response is the status code and body of an answered request.
type Response struct {
	StatusCode int
	Body       []byte
}

// Client is the host of the http library. Do sends one request; it gets
// the evaluation's context, bounded by the host call timeout. An error is
// a request that got no response (refused URL, connection failure, ...);
// an HTTP error status is a Response.
type Client interface {
	Do(ctx context.Context, req Request) (Response, error)
}

// ErrNamespaced is wrapped by the error of a call from a namespaced
// policy when the host does not allow them (upstream's default).
var ErrNamespaced = errors.New("http calls are not allowed in namespaced policies")

// Context is the value of the http variable: the host's Client bound to
// one evaluation, with the CA bundle of http.Client.
type Context struct {
	Client Client
	Scope  call.Scope
	// CABundle is the bundle of http.Client(caBundle), "" for the
	// system's roots.
	CABundle string
	// AllowNamespaced lets namespaced policies (Scope.Namespace set)
	// make calls.
	AllowNamespaced bool
}

// WithCABundle returns the Context of http.Client(caBundle): an empty
// bundle is the same Context, a bundle must hold at least one PEM
// certificate.
func (c *Context) WithCABundle(caBundle string) (*Context, error) {
	if caBundle == "" {
		return c, nil
	}
	if !x509.NewCertPool().AppendCertsFromPEM([]byte(caBundle)) {
		return nil, errors.New("failed to parse PEM CA bundle for APICall")
	}
	out := *c
	out.CABundle = caBundle
	return &out, nil
}

// do sends a request from an expression.
func (c *Context) do(req Request) (Response, error) {
	if c.Scope.Namespace != "" && !c.AllowNamespaced {
		return Response{}, fmt.Errorf("%w: the host must allow them", ErrNamespaced)
	}
	req.CABundle = c.CABundle
	req.Namespace = c.Scope.Namespace
	ctx, cancel := c.Scope.Context()
	defer cancel()
	return c.Client.Do(ctx, req)
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
	switch typeVal {
	case ContextType:
		return c
	case types.TypeType:
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
