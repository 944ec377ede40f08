// Package call holds what the functions of Kyverno's CEL libraries share:
// the Scope a host-backed library value carries from the evaluation that
// bound it (the evaluation's context, the bound on each host call, the
// policy's namespace, the adapter of cluster objects) and the conversion of
// arguments with upstream's error texts.
package call

import (
	"context"
	"encoding/json"
	"reflect"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// Scope is what a host-backed library value carries from the evaluation
// that bound it.
type Scope struct {
	// Ctx is the evaluation's context; every host call gets it.
	Ctx context.Context
	// Timeout bounds each host call (0: only Ctx bounds it).
	Timeout time.Duration
	// Namespace is the namespace of a namespaced policy, "" for a
	// cluster-wide one.
	Namespace string
	// Objects converts the Kubernetes objects a host returns (integral
	// numbers as ints, as the API server reads JSON); nil means cel-go's
	// default adapter.
	Objects types.Adapter
}

// Context returns the context of one host call.
func (s *Scope) Context() (context.Context, context.CancelFunc) {
	ctx := s.Ctx
	if ctx == nil {
		// a value bound without an evaluation (tests of a library on
		// its own): the call is bounded by Timeout only
		ctx = context.Background()
	}
	if s.Timeout > 0 {
		return context.WithTimeout(ctx, s.Timeout)
	}
	return ctx, func() {}
}

// ObjectValue converts a Kubernetes object (or list) a host returned.
func (s *Scope) ObjectValue(obj any) ref.Val {
	if s.Objects != nil {
		return s.Objects.NativeToValue(obj)
	}
	return types.DefaultTypeAdapter.NativeToValue(obj)
}

// Native converts v to T with cel-go's conversion (ConvertToNative).
func Native[T any](v ref.Val) (T, error) {
	out, err := v.ConvertToNative(reflect.TypeFor[T]())
	if err != nil {
		var zero T
		return zero, err
	}
	t, ok := out.(T)
	if !ok {
		var zero T
		return zero, &conversionError{from: v.Type().TypeName(), to: reflect.TypeFor[T]()}
	}
	return t, nil
}

type conversionError struct {
	from string
	to   reflect.Type
}

func (e *conversionError) Error() string {
	return "type conversion error from '" + e.from + "' to '" + e.to.String() + "'"
}

// Arg converts args[i] to T; on failure it returns upstream's error value
// ("invalid arg I: ...").
func Arg[T any](args []ref.Val, i int) (T, ref.Val) {
	out, err := Native[T](args[i])
	if err != nil {
		return out, types.NewErr("invalid arg %d: %v", i, err)
	}
	return out, nil
}

// The JSON arguments of upstream's functions are protobuf's well-known
// JSON types (*structpb.Struct, *structpb.Value), which cel-go converts
// to through types.JSONStructType and types.JSONValueType; the values are
// used through their methods, so gavel names neither protobuf nor its
// types.

// jsonStruct is a *structpb.Struct.
type jsonStruct interface{ AsMap() map[string]any }

// JSONObject converts args[i] to a JSON object, as upstream's
// *structpb.Struct argument (with its error texts).
func JSONObject(args []ref.Val, i int) (map[string]any, ref.Val) {
	out, bad := argOf(args, i, types.JSONStructType)
	if bad != nil {
		return nil, bad
	}
	s, ok := out.(jsonStruct)
	if !ok {
		return nil, types.NewErr("invalid arg %d: %v", i, &conversionError{from: args[i].Type().TypeName(), to: types.JSONStructType})
	}
	return s.AsMap(), nil
}

// JSONObjects converts args[i] to a list of JSON objects, as upstream's
// []*structpb.Struct argument (with its error texts).
func JSONObjects(args []ref.Val, i int) ([]map[string]any, ref.Val) {
	t := reflect.SliceOf(types.JSONStructType)
	out, bad := argOf(args, i, t)
	if bad != nil {
		return nil, bad
	}
	list := reflect.ValueOf(out)
	objects := make([]map[string]any, list.Len())
	for k := range objects {
		s, ok := list.Index(k).Interface().(jsonStruct)
		if !ok {
			return nil, types.NewErr("invalid arg %d: %v", i, &conversionError{from: args[i].Type().TypeName(), to: t})
		}
		objects[k] = s.AsMap()
	}
	return objects, nil
}

// JSONValue converts args[i] to a JSON value, as upstream's
// *structpb.Value argument (with its error texts); it marshals to the
// value's JSON.
func JSONValue(args []ref.Val, i int) (json.Marshaler, ref.Val) {
	out, bad := argOf(args, i, types.JSONValueType)
	if bad != nil {
		return nil, bad
	}
	m, ok := out.(json.Marshaler)
	if !ok {
		return nil, types.NewErr("invalid arg %d: %v", i, &conversionError{from: args[i].Type().TypeName(), to: types.JSONValueType})
	}
	return m, nil
}

// argOf converts args[i] to a value of type t, as Arg does.
func argOf(args []ref.Val, i int, t reflect.Type) (any, ref.Val) {
	out, err := args[i].ConvertToNative(t)
	if err == nil && reflect.TypeOf(out) != t {
		err = &conversionError{from: args[i].Type().TypeName(), to: t}
	}
	if err != nil {
		return nil, types.NewErr("invalid arg %d: %v", i, err)
	}
	return out, nil
}

// Count checks the number of arguments of a variadic binding, with
// upstream's error text.
func Count(args []ref.Val, n int) ref.Val {
	if len(args) != n {
		return types.NewErr("expected %d arguments, got %d", n, len(args))
	}
	return nil
}
