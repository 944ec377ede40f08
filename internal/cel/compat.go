package cel

import (
	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// orValueCompatFunction is the function x.orValue(y) is rewritten to.
const orValueCompatFunction = "__orValueCompat__"

// orValueCompat is upstream Kyverno's compatibility rewrite, part of every
// environment it compiles CEL in (validate.cel and the CEL policy types):
// since cel-go v0.28, orValue on a value that is not optional is "no such
// overload"; before, and with the rewrite, x.orValue(y) gives x when x is
// a value, x's value or y when x is optional. The rewrite is a parse-time
// macro, so every receiver's orValue goes through the function, whose
// result is dyn. The function is strict, as upstream's: an error in x is
// the expression's error, not y.
func orValueCompat() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Macros(cel.ReceiverMacro("orValue", 1, func(eh cel.MacroExprFactory, target celast.Expr, args []celast.Expr) (celast.Expr, *cel.Error) {
			return eh.NewCall(orValueCompatFunction, target, args[0]), nil
		})),
		cel.Function(orValueCompatFunction,
			cel.Overload(orValueCompatFunction+"_dyn_dyn",
				[]*cel.Type{cel.DynType, cel.DynType}, cel.DynType,
				cel.BinaryBinding(orValue))),
	}
}

// orValue is the function's binding.
func orValue(lhs, rhs ref.Val) ref.Val {
	switch v := lhs.(type) {
	case *types.Optional:
		if v.HasValue() {
			return v.GetValue()
		}
		return rhs
	case *types.Err:
		return rhs
	}
	return lhs
}
