package jmespath

import (
	"fmt"

	jperror "github.com/jmespath-community/go-jmespath/pkg/error"
	jpfunctions "github.com/jmespath-community/go-jmespath/pkg/functions"
	"github.com/jmespath-community/go-jmespath/pkg/parsing"
)

// signature is what Compile checks of a function call: the number of
// arguments and, for literal arguments, their types.
type signature struct {
	min, max int // max < 0: variadic
	// args[k] are the types argument k accepts (the last one's for the
	// arguments of a variadic tail); nil accepts anything.
	args [][]jpType
}

// signatures returns the signature of every function of the table, custom
// ones replacing standard ones of the same name as in the evaluator.
func signatures(std []jpfunctions.FunctionEntry, custom []fnSpec) map[string]signature {
	sigs := make(map[string]signature, len(std)+len(custom))
	for _, f := range std {
		s := signature{max: len(f.Arguments)}
		if len(f.Arguments) == 0 {
			s.max = -1 // the library checks no arguments of such a function
		}
		for _, a := range f.Arguments {
			if !a.Optional {
				s.min++
			}
			if a.Variadic {
				s.max = -1
			}
			s.args = append(s.args, standardTypes(a.Types))
		}
		sigs[f.Name] = s
	}
	for _, f := range custom {
		sigs[f.name] = signature{min: len(f.args), max: len(f.args), args: f.args}
	}
	return sigs
}

// standardTypes maps the library's argument types to those a literal can
// be checked against; nil when any literal may do (typed arrays are checked
// element by element at evaluation, expression references are not
// literals).
func standardTypes(types []jpfunctions.JpType) []jpType {
	var out []jpType
	for _, t := range types {
		switch t {
		case jpfunctions.JpNumber:
			out = append(out, tNumber)
		case jpfunctions.JpString:
			out = append(out, tString)
		case jpfunctions.JpObject:
			out = append(out, tObject)
		case jpfunctions.JpArray, jpfunctions.JpArrayArray, jpfunctions.JpArrayNumber, jpfunctions.JpArrayString:
			out = append(out, tArray)
		case jpfunctions.JpExpref:
			out = append(out, tExpref)
		default:
			return nil
		}
	}
	return out
}

// tExpref is the type of an expression reference (&expr) argument.
const tExpref jpType = "expref"

// checkCalls reports the first call in n of a function the interpreter
// does not know, with a number of arguments it does not take, or with a
// literal argument (a string, a JSON literal, an expression reference) of a
// type it does not accept: such a call fails on every evaluation.
func (i *Interpreter) checkCalls(n parsing.ASTNode) error {
	for _, c := range n.Children {
		if err := i.checkCalls(c); err != nil {
			return err
		}
	}
	if n.NodeType != parsing.ASTFunctionExpression {
		return nil
	}
	name, _ := n.Value.(string)
	sig, ok := i.sigs[name]
	if !ok {
		return fmt.Errorf("unknown function: %s", name)
	}
	count := len(n.Children)
	if count < sig.min {
		return jperror.NotEnoughArgumentsSupplied(name, count, sig.min, sig.max < 0)
	}
	if sig.max >= 0 && count > sig.max {
		return jperror.TooManyArgumentsSupplied(name, count, sig.max)
	}
	for k, arg := range n.Children {
		if len(sig.args) == 0 {
			break
		}
		types := sig.args[min(k, len(sig.args)-1)]
		if v, literal := literalValue(arg); literal && types != nil && !literalMatches(types, v) {
			return fnErr(name, k+1, msgArgumentType, k+1, joinTypes(types, " or "), literalTypeName(v))
		}
	}
	return nil
}

// literalValue returns the value of an argument known at compile time.
func literalValue(n parsing.ASTNode) (any, bool) {
	switch n.NodeType {
	case parsing.ASTLiteral:
		return n.Value, true
	case parsing.ASTExpRef:
		return expref{}, true
	}
	return nil, false
}

// expref stands for an expression reference in literalMatches.
type expref struct{}

func literalMatches(types []jpType, v any) bool {
	if _, ok := v.(expref); ok {
		for _, t := range types {
			if t == tExpref || t == tAny {
				return true
			}
		}
		return false
	}
	return matchesType(types, v)
}

func literalTypeName(v any) string {
	if _, ok := v.(expref); ok {
		return string(tExpref)
	}
	return typeName(v)
}
