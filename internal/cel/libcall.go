package cel

import (
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// libraryDecorator replaces, in a program's plan, each call of a function
// of boundCalls by a boundCall: the function's value comes from the
// Evaluation's clock or randomness, which the activation gives under
// libsVar, so that one program serves Evaluations with different ones.
func libraryDecorator(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	c, ok := i.(interpreter.InterpretableCall)
	if !ok {
		return i, nil
	}
	impl := boundCalls[c.OverloadID()]
	if impl == nil {
		return i, nil
	}
	return &boundCall{InterpretableCall: c, impl: impl}, nil
}

// boundCall is a call of a function of boundCalls. It keeps the
// original call's identity (id, function, overload, arguments), which the
// cost tracker reads.
type boundCall struct {
	interpreter.InterpretableCall
	impl func(b *libBinding, args []ref.Val) ref.Val
}

// Eval implements interpreter.Interpretable.
func (c *boundCall) Eval(act interpreter.Activation) ref.Val {
	return c.call(act, func(arg interpreter.InterpretableV2) ref.Val { return arg.Eval(act) })
}

// Exec implements interpreter.InterpretableV2.
func (c *boundCall) Exec(f *interpreter.ExecutionFrame) ref.Val {
	return c.call(f, func(arg interpreter.InterpretableV2) ref.Val { return arg.Exec(f) })
}

func (c *boundCall) call(act interpreter.Activation, eval func(interpreter.InterpretableV2) ref.Val) ref.Val {
	argExprs := c.Args()
	var buf [2]ref.Val
	args := buf[:0]
	for _, a := range argExprs {
		v := eval(a)
		// the functions are strict: an error or unknown argument is the
		// call's value
		if types.IsUnknownOrError(v) {
			return v
		}
		args = append(args, v)
	}
	var b *libBinding
	if v, found := act.ResolveName(libsVar); found {
		b, _ = v.(*libBinding)
	}
	return types.LabelErrNode(c.ID(), c.impl(b, args))
}
