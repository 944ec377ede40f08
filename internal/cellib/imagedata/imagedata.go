// Package imagedata is Kyverno's imagedata library: image.GetMetadata
// (and getMetadata) on the image variable, which reads an image's
// metadata from its registry through the host's Client.
package imagedata

import (
	"context"
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/gavelpolicy/gavel/internal/cellib/call"
	"github.com/gavelpolicy/gavel/internal/cellib/versions"
)

// VarName is the name of the library's variable (the image library's
// image() function is another identifier).
const VarName = "image"

// ContextType is the type of the image variable.
var ContextType = types.NewOpaqueType("imagedata.Context")

// Client is the host of the imagedata library.
type Client interface {
	// ImageMetadata returns upstream's image data of a reference:
	// image, resolvedImage (NAME[:TAG]@DIGEST), registry, repository,
	// identifier, tag or digest, imageIndex (the index manifest, for an
	// index), manifest (the platform image's manifest) and config (its
	// config file), as JSON values (numbers float64).
	ImageMetadata(ctx context.Context, reference string) (map[string]any, error)
}

// Context is the value of the image variable: the host's Client bound to
// one evaluation.
type Context struct {
	Client Client
	Scope  call.Scope
}

// ConvertToNative converts to *Context.
func (c *Context) ConvertToNative(typeDesc reflect.Type) (any, error) {
	if reflect.TypeOf(c).AssignableTo(typeDesc) {
		return c, nil
	}
	return nil, fmt.Errorf("unsupported native conversion from %s to '%v'", ContextType, typeDesc)
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

const libraryName = "kyverno.imagedata"

// Lib declares the library at version v (versions.Latest).
func Lib(v *version.Version) cel.EnvOption { return cel.Lib(&lib{version: v}) }

type lib struct{ version *version.Version }

func (*lib) LibraryName() string { return libraryName }

func (*lib) ProgramOptions() []cel.ProgramOption { return nil }

func (l *lib) CompileOptions() []cel.EnvOption {
	decl := func(suffix string) cel.FunctionOpt {
		return cel.MemberOverload("imagedata_get_string_"+suffix, []*cel.Type{ContextType, types.StringType}, types.DynType, cel.BinaryBinding(getMetadata))
	}
	opts := []cel.EnvOption{cel.Variable(VarName, ContextType), cel.Function("GetMetadata", decl("pascal"))}
	if versions.HasCamelCase(l.version) {
		opts = append(opts, cel.Function("getMetadata", decl("camel")))
	}
	return opts
}

// getMetadata is image.GetMetadata(reference).
func getMetadata(self, reference ref.Val) ref.Val {
	c, err := call.Native[*Context](self)
	if err != nil {
		return types.WrapErr(err)
	}
	image, err := call.Native[string](reference)
	if err != nil {
		return types.WrapErr(err)
	}
	ctx, cancel := c.Scope.Context()
	defer cancel()
	data, err := c.Client.ImageMetadata(ctx, image)
	if err != nil {
		return types.NewErr("failed to get image data: %w", err)
	}
	return types.DefaultTypeAdapter.NativeToValue(data)
}
