package resource

import (
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/gavelpolicy/gavel/internal/cellib/call"
	"github.com/gavelpolicy/gavel/internal/cellib/versions"
)

const libraryName = "kyverno.resource"

// Lib declares the library at version v (versions.Latest): the
// overloads of cluster-wide policies, whose functions take a namespace
// argument, or, when namespaced, those of namespaced policies, whose
// functions read the namespace the value of the resource variable
// carries (the policy's).
func Lib(namespaced bool, v *version.Version) cel.EnvOption {
	return cel.Lib(&lib{namespaced: namespaced, version: v})
}

type lib struct {
	namespaced bool
	version    *version.Version
}

func (*lib) LibraryName() string { return libraryName }

func (*lib) ProgramOptions() []cel.ProgramOption { return nil }

func (l *lib) CompileOptions() []cel.EnvOption {
	build := clusterOverloads
	if l.namespaced {
		build = namespacedOverloads
	}
	opts := []cel.EnvOption{cel.Variable(VarName, ContextType)}
	for _, name := range []string{"List", "Get", "Post", "ToGVR"} {
		opts = append(opts, cel.Function(name, build(name, "pascal")...))
		if versions.HasCamelCase(l.version) {
			camel := string(name[0]+'a'-'A') + name[1:]
			opts = append(opts, cel.Function(camel, build(name, "camel")...))
		}
	}
	return opts
}

var (
	objectType  = types.NewMapType(types.StringType, types.AnyType)
	labelsType  = types.NewMapType(types.StringType, types.StringType)
	payloadType = types.NewMapType(types.StringType, types.AnyType)
)

func overload(id, suffix string, args []*cel.Type, out *cel.Type, fn func(...ref.Val) ref.Val) cel.FunctionOpt {
	return cel.MemberOverload(fmt.Sprintf("%s_%s", id, suffix), append([]*cel.Type{ContextType}, args...), out, cel.FunctionBinding(fn))
}

// clusterOverloads are upstream's overloads of cluster-wide policies.
func clusterOverloads(name, suffix string) []cel.FunctionOpt {
	s := types.StringType
	switch name {
	case "List":
		return []cel.FunctionOpt{
			overload("resource_list_string_string_string", suffix, []*cel.Type{s, s, s}, objectType, list(nsExplicit, false)),
			overload("resource_list_string_string_string_map", suffix, []*cel.Type{s, s, s, labelsType}, objectType, list(nsExplicit, true)),
			overload("list_resources_gvr_string", suffix, []*cel.Type{GVRType, s}, objectType, byGVR(list(nsExplicit, false))),
			overload("list_resources_gvr_string_map", suffix, []*cel.Type{GVRType, s, labelsType}, objectType, byGVR(list(nsExplicit, true))),
		}
	case "Get":
		return []cel.FunctionOpt{
			overload("resource_get_string_string_string_string", suffix, []*cel.Type{s, s, s, s}, objectType, get(nsExplicit)),
			overload("resource_get_gvr_string_string", suffix, []*cel.Type{GVRType, s, s}, objectType, byGVR(get(nsExplicit))),
		}
	case "Post":
		return []cel.FunctionOpt{
			overload("resource_post_string_string_string_map", suffix, []*cel.Type{s, s, s, payloadType}, objectType, post(nsExplicit)),
			overload("resource_post_string_string_map", suffix, []*cel.Type{s, s, payloadType}, objectType, post(nsNone)),
		}
	}
	return []cel.FunctionOpt{
		overload("convert_to_gvr_string_string", suffix, []*cel.Type{s, s}, GVRType, toGVR),
	}
}

// namespacedOverloads are upstream's overloads of namespaced policies:
// the namespace is the policy's.
func namespacedOverloads(name, suffix string) []cel.FunctionOpt {
	s := types.StringType
	switch name {
	case "List":
		return []cel.FunctionOpt{
			overload("resource_list_string_string", suffix, []*cel.Type{s, s}, objectType, list(nsPolicy, false)),
			overload("resource_list_string_string_map", suffix, []*cel.Type{s, s, labelsType}, objectType, list(nsPolicy, true)),
			overload("list_resources_gvr", suffix, []*cel.Type{GVRType}, objectType, byGVR(list(nsPolicy, false))),
			overload("list_resources_gvr_map", suffix, []*cel.Type{GVRType, labelsType}, objectType, byGVR(list(nsPolicy, true))),
		}
	case "Get":
		return []cel.FunctionOpt{
			overload("resource_get_string_string_string", suffix, []*cel.Type{s, s, s}, objectType, get(nsPolicy)),
			overload("resource_get_gvr_string", suffix, []*cel.Type{GVRType, s}, objectType, byGVR(get(nsPolicy))),
		}
	case "Post":
		return []cel.FunctionOpt{
			overload("resource_post_string_string_map", suffix, []*cel.Type{s, s, payloadType}, objectType, post(nsPolicy)),
		}
	}
	return []cel.FunctionOpt{
		overload("convert_to_gvr_string_string", suffix, []*cel.Type{s, s}, GVRType, toGVR),
	}
}

// nsArg is where a call's namespace comes from.
type nsArg int

const (
	// nsExplicit: an argument after the resource.
	nsExplicit nsArg = iota
	// nsPolicy: the namespaced policy's.
	nsPolicy
	// nsNone: none (cluster-scoped objects).
	nsNone
)

// address is what a call names: API version, resource and namespace.
type address struct {
	ctx                             *Context
	apiVersion, resource, namespace string
}

// addressOf reads the receiver, the API version, the resource and the
// namespace; it returns the index of the next argument.
func addressOf(args []ref.Val, ns nsArg) (address, int, ref.Val) {
	var a address
	var bad ref.Val
	if a.ctx, bad = call.Arg[*Context](args, 0); bad != nil {
		return a, 0, bad
	}
	if a.apiVersion, bad = call.Arg[string](args, 1); bad != nil {
		return a, 0, bad
	}
	if a.resource, bad = call.Arg[string](args, 2); bad != nil {
		return a, 0, bad
	}
	switch ns {
	case nsNone:
		return a, 3, nil
	case nsPolicy:
		if a.ctx.Scope.Namespace == "" {
			return a, 0, types.NewErr("resource library: a namespaced policy's call without its namespace")
		}
		a.namespace = a.ctx.Scope.Namespace
		return a, 3, nil
	}
	if a.namespace, bad = call.Arg[string](args, 3); bad != nil {
		return a, 0, bad
	}
	return a, 4, nil
}

// hostErr is upstream's error of a failed host call: "failed to VERB
// resource: [permission denied: ]CAUSE", wrapping the cause.
func hostErr(verb string, err error) ref.Val {
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return types.NewErr("failed to %s resource: permission denied: %w", verb, err)
	}
	return types.NewErr("failed to %s resource: %w", verb, err)
}

// arity is the number of arguments (the receiver included) of a call
// whose namespace comes from ns, with extra arguments after it.
func arity(ns nsArg, extra int) int {
	if ns == nsExplicit {
		return 4 + extra
	}
	return 3 + extra
}

func list(ns nsArg, withLabels bool) func(...ref.Val) ref.Val {
	n := arity(ns, 0)
	if withLabels {
		n++
	}
	return func(args ...ref.Val) ref.Val {
		if bad := call.Count(args, n); bad != nil {
			return bad
		}
		a, next, bad := addressOf(args, ns)
		if bad != nil {
			return bad
		}
		var labels map[string]string
		if withLabels {
			if labels, bad = call.Arg[map[string]string](args, next); bad != nil {
				return bad
			}
		}
		ctx, cancel := a.ctx.Scope.Context()
		defer cancel()
		out, err := a.ctx.Client.ListResources(ctx, a.apiVersion, a.resource, a.namespace, labels)
		if err != nil {
			return hostErr("list", err)
		}
		return a.ctx.Scope.ObjectValue(out)
	}
}

func get(ns nsArg) func(...ref.Val) ref.Val {
	n := arity(ns, 1)
	return func(args ...ref.Val) ref.Val {
		if bad := call.Count(args, n); bad != nil {
			return bad
		}
		a, next, bad := addressOf(args, ns)
		if bad != nil {
			return bad
		}
		name, bad := call.Arg[string](args, next)
		if bad != nil {
			return bad
		}
		ctx, cancel := a.ctx.Scope.Context()
		defer cancel()
		out, err := a.ctx.Client.GetResource(ctx, a.apiVersion, a.resource, a.namespace, name)
		switch {
		case apierrors.IsNotFound(err), err == nil && out == nil:
			return types.NullValue
		case err != nil:
			return hostErr("get", err)
		}
		return a.ctx.Scope.ObjectValue(out)
	}
}

func post(ns nsArg) func(...ref.Val) ref.Val {
	n := arity(ns, 1)
	return func(args ...ref.Val) ref.Val {
		if bad := call.Count(args, n); bad != nil {
			return bad
		}
		a, next, bad := addressOf(args, ns)
		if bad != nil {
			return bad
		}
		data, bad := call.JSONObject(args, next)
		if bad != nil {
			return bad
		}
		ctx, cancel := a.ctx.Scope.Context()
		defer cancel()
		out, err := a.ctx.Client.PostResource(ctx, a.apiVersion, a.resource, a.namespace, data)
		if err != nil {
			return hostErr("create", err)
		}
		return a.ctx.Scope.ObjectValue(out)
	}
}

// byGVR is fn on a GVR argument in place of the API version and resource.
func byGVR(fn func(...ref.Val) ref.Val) func(...ref.Val) ref.Val {
	return func(args ...ref.Val) ref.Val {
		if len(args) < 2 {
			return types.NewErr("expected at least 2 arguments, got %d", len(args))
		}
		gvr, bad := call.Arg[GVR](args, 1)
		if bad != nil {
			return bad
		}
		expanded := make([]ref.Val, 0, len(args)+1)
		expanded = append(expanded, args[0], types.String(gvr.GroupVersion().String()), types.String(gvr.Resource))
		return fn(append(expanded, args[2:]...)...)
	}
}

func toGVR(args ...ref.Val) ref.Val {
	if bad := call.Count(args, 3); bad != nil {
		return bad
	}
	self, bad := call.Arg[*Context](args, 0)
	if bad != nil {
		return bad
	}
	apiVersion, bad := call.Arg[string](args, 1)
	if bad != nil {
		return bad
	}
	kind, bad := call.Arg[string](args, 2)
	if bad != nil {
		return bad
	}
	ctx, cancel := self.Scope.Context()
	defer cancel()
	gvr, err := self.Client.ToGVR(ctx, apiVersion, kind)
	if err != nil {
		return types.NewErr("failed to map kind to resource: %w", err)
	}
	return GVR{gvr}
}
