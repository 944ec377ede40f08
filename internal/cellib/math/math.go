// Package math is Kyverno's math library: math.round(double, int) rounds
// to a number of decimal places (negative: to tens, hundreds, ...),
// halves away from zero, next to cel-go's one-argument math.round.
package math

import (
	gomath "math"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/gavelpolicy/gavel/internal/cellib/call"
)

const libraryName = "kyverno.math"

// Lib declares the library.
func Lib() cel.EnvOption { return cel.Lib(lib{}) }

type lib struct{}

func (lib) LibraryName() string { return libraryName }

func (lib) ProgramOptions() []cel.ProgramOption { return nil }

func (lib) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Function("math.round", cel.Overload("math_round_float_int", []*cel.Type{types.DoubleType, types.IntType}, types.DoubleType, cel.BinaryBinding(round))),
	}
}

func round(val, prec ref.Val) ref.Val {
	v, err := call.Native[float64](val)
	if err != nil {
		return types.WrapErr(err)
	}
	p, err := call.Native[int64](prec)
	if err != nil {
		return types.WrapErr(err)
	}
	shift := gomath.Pow(10, float64(p))
	return types.Double(gomath.Round(v*shift) / shift)
}
