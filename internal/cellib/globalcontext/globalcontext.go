// Package globalcontext is Kyverno's globalcontext library:
// globalContext.Get (and get) on the globalContext variable, which reads
// the data of GlobalContextEntries through the host's Reader.
package globalcontext

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

// VarName is the name of the library's variable.
const VarName = "globalContext"

// ContextType is the type of the globalContext variable.
var ContextType = types.NewOpaqueType("globalcontext.Context")

// Reader is the host of the globalcontext library.
type Reader interface {
	// GlobalReference returns the data of the entry name, or of its
	// projection when projection is not empty; an entry that does not
	// exist is (nil, nil) (null for the expression), an unknown
	// projection of an entry an error.
	GlobalReference(ctx context.Context, name, projection string) (any, error)
}

// Context is the value of the globalContext variable: the host's Reader
// bound to one evaluation.
type Context struct {
	Reader Reader
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

const libraryName = "kyverno.globalcontext"

// Lib declares the library at version v (versions.Latest).
func Lib(v *version.Version) cel.EnvOption { return cel.Lib(&lib{version: v}) }

type lib struct{ version *version.Version }

func (*lib) LibraryName() string { return libraryName }

func (*lib) ProgramOptions() []cel.ProgramOption { return nil }

func (l *lib) CompileOptions() []cel.EnvOption {
	decl := func(suffix string) []cel.FunctionOpt {
		return []cel.FunctionOpt{
			cel.MemberOverload("globalcontext_get_string_"+suffix, []*cel.Type{ContextType, types.StringType}, types.DynType, cel.FunctionBinding(get)),
			cel.MemberOverload("globalcontext_get_string_string_"+suffix, []*cel.Type{ContextType, types.StringType, types.StringType}, types.DynType, cel.FunctionBinding(get)),
		}
	}
	opts := []cel.EnvOption{cel.Variable(VarName, ContextType), cel.Function("Get", decl("pascal")...)}
	if versions.HasCamelCase(l.version) {
		opts = append(opts, cel.Function("get", decl("camel")...))
	}
	return opts
}

// get is globalContext.Get(name[, projection]).
func get(args ...ref.Val) ref.Val {
	if len(args) != 2 && len(args) != 3 {
		return types.NewErr("expected 3 arguments, got %d", len(args))
	}
	c, err := call.Native[*Context](args[0])
	if err != nil {
		return types.WrapErr(err)
	}
	name, err := call.Native[string](args[1])
	if err != nil {
		return types.WrapErr(err)
	}
	projection := ""
	if len(args) == 3 {
		if projection, err = call.Native[string](args[2]); err != nil {
			return types.WrapErr(err)
		}
	}
	ctx, cancel := c.Scope.Context()
	defer cancel()
	data, err := c.Reader.GlobalReference(ctx, name, projection)
	if err != nil {
		return types.NewErr("failed to get global reference: %w", err)
	}
	return types.DefaultTypeAdapter.NativeToValue(data)
}
