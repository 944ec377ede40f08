// Package generator is Kyverno's generator library, for
// GeneratingPolicies: generator.Apply (and apply) on the generator
// variable hands the objects an expression builds to the host's
// Generator, which creates (or, synchronized, updates) them.
package generator

import (
	"context"
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/gavelpolicy/gavel/internal/cellib/call"
	"github.com/gavelpolicy/gavel/internal/cellib/versions"
)

// VarName is the name of the library's variable.
const VarName = "generator"

// ContextType is the type of the generator variable.
var ContextType = types.NewOpaqueType("generator.Context")

// Generator is the host of the generator library.
type Generator interface {
	// GenerateResources generates objects (JSON-like maps, as the
	// expression built them; a List kind stands for its items) in
	// namespace (cluster-scoped kinds ignore it).
	GenerateResources(ctx context.Context, namespace string, objects []map[string]any) error
}

// Context is the value of the generator variable: the host's Generator
// bound to one evaluation.
type Context struct {
	Generator Generator
	Scope     call.Scope
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

const libraryName = "kyverno.generator"

// Lib declares the library at version v (versions.Latest).
func Lib(v *version.Version) cel.EnvOption { return cel.Lib(&lib{version: v}) }

type lib struct{ version *version.Version }

func (*lib) LibraryName() string { return libraryName }

func (*lib) ProgramOptions() []cel.ProgramOption { return nil }

func (l *lib) CompileOptions() []cel.EnvOption {
	objects := types.NewListType(types.NewMapType(types.StringType, types.AnyType))
	decl := func(suffix string) cel.FunctionOpt {
		return cel.MemberOverload("generator_apply_string_list_"+suffix, []*cel.Type{ContextType, types.StringType, objects}, types.BoolType, cel.FunctionBinding(apply))
	}
	opts := []cel.EnvOption{cel.Variable(VarName, ContextType), cel.Function("Apply", decl("pascal"))}
	if versions.HasCamelCase(l.version) {
		opts = append(opts, cel.Function("apply", decl("camel")))
	}
	return opts
}

// apply is generator.Apply(namespace, objects): true once the host
// generated them. A namespaced policy generates in its own namespace
// only.
func apply(args ...ref.Val) ref.Val {
	if bad := call.Count(args, 3); bad != nil {
		return bad
	}
	self, bad := call.Arg[*Context](args, 0)
	if bad != nil {
		return bad
	}
	namespace, bad := call.Arg[string](args, 1)
	if bad != nil {
		return bad
	}
	objects, bad := call.JSONObjects(args, 2)
	if bad != nil {
		return bad
	}
	if own := self.Scope.Namespace; own != "" && namespace != own {
		return types.NewErr("failed to generate resources: a policy of namespace %q cannot generate resources in namespace %q", own, namespace)
	}
	ctx, cancel := self.Scope.Context()
	defer cancel()
	if err := self.Generator.GenerateResources(ctx, namespace, objects); err != nil {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			return types.NewErr("failed to generate resources: permission denied: %w", err)
		}
		return types.NewErr("failed to generate resources: %w", err)
	}
	return types.True
}
