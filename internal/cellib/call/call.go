// Package call holds what the functions of Kyverno's CEL libraries share:
// the Scope a host-backed library value carries from the evaluation that
// bound it (the evaluation's context, the bound on each host call, the
// policy's namespace, the adapter of cluster objects) and the conversion of
// arguments with upstream's error texts.
package call

import (
	"context"
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

// Count checks the number of arguments of a variadic binding, with
// upstream's error text.
func Count(args []ref.Val, n int) ref.Val {
	if len(args) != n {
		return types.NewErr("expected %d arguments, got %d", n, len(args))
	}
	return nil
}
