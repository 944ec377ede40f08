package jmespath

import (
	"errors"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jmespath-community/go-jmespath/pkg/functions"
	"github.com/jmespath-community/go-jmespath/pkg/interpreter"
	"github.com/jmespath-community/go-jmespath/pkg/parsing"
	"github.com/jmespath-community/go-jmespath/pkg/util"
)

// This file compiles the AST of the common expressions (fields, indices,
// projections, flattening, filters, multi-selects, comparisons, or / and /
// not, pipes, literals and function calls) into a tree of closures that
// evaluates them with exactly the semantics of the library's tree
// interpreter, without its per-evaluation set-up and with fewer
// allocations. An expression holding anything else (slices, arithmetic,
// the root node, let and variables) is left to the library. Where the
// library falls back on reflection (typed slices, structs), the closure
// hands the node and the value to the library's interpreter, which then
// evaluates that part exactly as it would have.

// evalFn evaluates a compiled node on a value.
type evalFn func(value any) (any, error)

type fastCompiler struct {
	caller interpreter.FunctionCaller
	// maxElements bounds the length of a flattened array (see
	// WithMaxResultSize).
	maxElements int
}

// compileFast compiles node; ok is false when it holds a node type the
// closures do not cover.
func compileFast(node parsing.ASTNode, caller interpreter.FunctionCaller, maxResultSize int) (evalFn, bool) {
	c := fastCompiler{caller: caller, maxElements: maxResultSize / 16}
	return c.compile(node)
}

// library evaluates node on value with the library's interpreter (no root,
// no bindings: compiled expressions use neither).
func (c *fastCompiler) library(node parsing.ASTNode, value any) (any, error) {
	return interpreter.NewInterpreter(nil, c.caller, nil).Execute(node, value)
}

func (c *fastCompiler) compileChildren(node parsing.ASTNode) ([]evalFn, bool) {
	out := make([]evalFn, len(node.Children))
	for i, ch := range node.Children {
		f, ok := c.compile(ch)
		if !ok {
			return nil, false
		}
		out[i] = f
	}
	return out, true
}

// compile compiles node; ok is false when the closures do not cover it.
func (c *fastCompiler) compile(node parsing.ASTNode) (evalFn, bool) {
	switch node.NodeType {
	case parsing.ASTField:
		return c.compileField(node)
	case parsing.ASTSubexpression, parsing.ASTIndexExpression:
		return c.compileChain(node)
	case parsing.ASTIndex:
		return c.compileIndex(node)
	case parsing.ASTIdentity, parsing.ASTCurrentNode:
		return func(value any) (any, error) { return value, nil }, true
	case parsing.ASTLiteral:
		lit := node.Value
		return func(any) (any, error) { return lit, nil }, true
	case parsing.ASTExpRef:
		return c.compileExpRef(node)
	case parsing.ASTFunctionExpression:
		return c.compileCall(node)
	case parsing.ASTMultiSelectList:
		return c.compileMultiSelectList(node)
	case parsing.ASTMultiSelectHash:
		return c.compileMultiSelectHash(node)
	case parsing.ASTOrExpression:
		return c.compileLogical(node, true)
	case parsing.ASTAndExpression:
		return c.compileLogical(node, false)
	case parsing.ASTNotExpression:
		return c.compileNot(node)
	case parsing.ASTPipe:
		return c.compilePipe(node)
	case parsing.ASTComparator:
		return c.compileComparator(node)
	case parsing.ASTProjection:
		return c.compileProjection(node)
	case parsing.ASTFlatten:
		return c.compileFlatten(node)
	case parsing.ASTFilterProjection:
		return c.compileFilter(node)
	}
	return nil, false
}

// compileField compiles a field: a missing key of an object is null.
func (c *fastCompiler) compileField(node parsing.ASTNode) (evalFn, bool) {
	key, ok := node.Value.(string)
	if !ok {
		return nil, false
	}
	return func(value any) (any, error) {
		if m, ok := value.(map[string]any); ok {
			// a missing key is null: the library's reading of a
			// struct field finds nothing in a map
			return m[key], nil
		}
		return fieldFromStruct(key, value), nil
	}, true
}

// compileChain compiles a.b and a[0]: the right side on a non-null left side.
func (c *fastCompiler) compileChain(node parsing.ASTNode) (evalFn, bool) {
	ch, ok := c.compileChildren(node)
	if !ok || len(ch) != 2 {
		return nil, false
	}
	left, right := ch[0], ch[1]
	return func(value any) (any, error) {
		l, err := left(value)
		if err != nil {
			return nil, err
		}
		if l == nil {
			return nil, nil
		}
		return right(l)
	}, true
}

// compileIndex compiles an index of a list, negative from the end.
func (c *fastCompiler) compileIndex(node parsing.ASTNode) (evalFn, bool) {
	index, ok := node.Value.(int)
	if !ok {
		return nil, false
	}
	return func(value any) (any, error) {
		if s, ok := value.([]any); ok {
			i := index
			if i < 0 {
				i += len(s)
			}
			if i < len(s) && i >= 0 {
				return s[i], nil
			}
			return nil, nil
		}
		return c.library(node, value)
	}, true
}

// compileExpRef compiles an expression reference (&expr), for sort_by and the like.
func (c *fastCompiler) compileExpRef(node parsing.ASTNode) (evalFn, bool) {
	ch, ok := c.compileChildren(node)
	if !ok || len(ch) != 1 {
		return nil, false
	}
	expr := ch[0]
	return func(any) (any, error) {
		return functions.ExpRef(func(data any) (any, error) { return expr(data) }), nil
	}, true
}

// compileCall compiles a function call: some one-argument functions directly (see direct), the others through the function caller.
func (c *fastCompiler) compileCall(node parsing.ASTNode) (evalFn, bool) {
	name, ok := node.Value.(string)
	if !ok {
		return nil, false
	}
	args, ok := c.compileChildren(node)
	if !ok {
		return nil, false
	}
	if len(args) == 1 {
		if f := c.direct(name, args[0]); f != nil {
			return f, true
		}
	}
	return func(value any) (any, error) {
		resolved := make([]any, 0, len(args))
		for _, a := range args {
			v, err := a(value)
			if err != nil {
				return nil, err
			}
			resolved = append(resolved, v)
		}
		return c.caller.CallFunction(name, resolved)
	}, true
}

// compileMultiSelectList compiles [a, b].
func (c *fastCompiler) compileMultiSelectList(node parsing.ASTNode) (evalFn, bool) {
	ch, ok := c.compileChildren(node)
	if !ok {
		return nil, false
	}
	return func(value any) (any, error) {
		collected := make([]any, 0, len(ch))
		for _, f := range ch {
			v, err := f(value)
			if err != nil {
				return nil, err
			}
			collected = append(collected, v)
		}
		return collected, nil
	}, true
}

// compileMultiSelectHash compiles {k: a, l: b}.
func (c *fastCompiler) compileMultiSelectHash(node parsing.ASTNode) (evalFn, bool) {
	keys := make([]string, len(node.Children))
	vals := make([]evalFn, len(node.Children))
	for i, kv := range node.Children {
		k, ok := kv.Value.(string)
		if !ok || kv.NodeType != parsing.ASTKeyValPair || len(kv.Children) < 1 {
			return nil, false
		}
		f, ok := c.compile(kv.Children[0])
		if !ok {
			return nil, false
		}
		keys[i], vals[i] = k, f
	}
	return func(value any) (any, error) {
		collected := make(map[string]any, len(keys))
		for i, f := range vals {
			v, err := f(value)
			if err != nil {
				return nil, err
			}
			collected[keys[i]] = v
		}
		return collected, nil
	}, true
}

// compileLogical compiles a || b (or) and a && b: the right side is
// evaluated only when the left one is false (or) or true (and) in
// JMESPath's sense.
func (c *fastCompiler) compileLogical(node parsing.ASTNode, or bool) (evalFn, bool) {
	ch, ok := c.compileChildren(node)
	if !ok || len(ch) != 2 {
		return nil, false
	}
	left, right := ch[0], ch[1]
	return func(value any) (any, error) {
		m, err := left(value)
		if err != nil {
			return nil, err
		}
		if util.IsFalse(m) != or {
			return m, nil
		}
		return right(value)
	}, true
}

// compileNot compiles !a.
func (c *fastCompiler) compileNot(node parsing.ASTNode) (evalFn, bool) {
	ch, ok := c.compileChildren(node)
	if !ok || len(ch) != 1 {
		return nil, false
	}
	inner := ch[0]
	return func(value any) (any, error) {
		m, err := inner(value)
		if err != nil {
			return nil, err
		}
		return util.IsFalse(m), nil
	}, true
}

// compilePipe compiles a | b.
func (c *fastCompiler) compilePipe(node parsing.ASTNode) (evalFn, bool) {
	ch, ok := c.compileChildren(node)
	if !ok {
		return nil, false
	}
	return func(value any) (any, error) {
		result := value
		for _, f := range ch {
			var err error
			if result, err = f(result); err != nil {
				return nil, err
			}
		}
		return result, nil
	}, true
}

// compileComparator compiles a == b, a < b and the like: ordering only between numbers, null otherwise.
func (c *fastCompiler) compileComparator(node parsing.ASTNode) (evalFn, bool) {
	ch, ok := c.compileChildren(node)
	if !ok || len(ch) != 2 {
		return nil, false
	}
	tok, ok := node.Value.(parsing.TokType)
	if !ok {
		return nil, false
	}
	switch tok {
	case parsing.TOKEQ, parsing.TOKNE, parsing.TOKGT, parsing.TOKGTE, parsing.TOKLT, parsing.TOKLTE:
	default:
		return nil, false
	}
	left, right := ch[0], ch[1]
	return func(value any) (any, error) {
		l, err := left(value)
		if err != nil {
			return nil, err
		}
		r, err := right(value)
		if err != nil {
			return nil, err
		}
		return compare(tok, l, r), nil
	}, true
}

// compare is the library's comparison: equality of any values, ordering
// of numbers (null when either side is not a number).
func compare(tok parsing.TokType, l, r any) any {
	switch tok {
	case parsing.TOKEQ:
		return util.ObjsEqual(l, r)
	case parsing.TOKNE:
		return !util.ObjsEqual(l, r)
	}
	ln, ok := l.(float64)
	if !ok {
		return nil
	}
	rn, ok := r.(float64)
	if !ok {
		return nil
	}
	switch tok {
	case parsing.TOKGT:
		return ln > rn
	case parsing.TOKGTE:
		return ln >= rn
	case parsing.TOKLT:
		return ln < rn
	}
	return ln <= rn
}

// compileFlatten compiles a[].
func (c *fastCompiler) compileFlatten(node parsing.ASTNode) (evalFn, bool) {
	if len(node.Children) != 1 {
		return nil, false
	}
	src, ok := c.compileFlatSource(node)
	if !ok {
		return nil, false
	}
	return func(value any) (any, error) {
		var buf [4]any
		s, l, isList, err := src.eval(value, buf[:0])
		if !isList {
			return c.flattenValue(node, l, err, value)
		}
		return c.flattenList(s, l)
	}, true
}

// compileFilter compiles a[?cond].b.
func (c *fastCompiler) compileFilter(node parsing.ASTNode) (evalFn, bool) {
	ch, ok := c.compileChildren(node)
	if !ok || len(ch) != 3 {
		return nil, false
	}
	left, right, cond := ch[0], ch[1], ch[2]
	return func(value any) (any, error) {
		l, err := left(value)
		if err != nil {
			if errors.Is(err, ErrTooLarge) {
				return nil, err
			}
			return nil, nil // as the library
		}
		s, ok := l.([]any)
		if !ok {
			if util.IsSliceType(l) {
				return c.library(node, value)
			}
			return nil, nil
		}
		var collected []any
		for _, el := range s {
			r, err := cond(el)
			if err != nil {
				return nil, err
			}
			if !util.IsFalse(r) {
				cur, err := right(el)
				if err != nil {
					return nil, err
				}
				if cur != nil {
					collected = append(collected, cur)
				}
			}
		}
		if collected == nil {
			return emptyList, nil
		}
		return collected, nil
	}, true
}

// emptyList is the empty list projections, filters and flattening
// evaluate to when nothing is kept, shared rather than allocated (with the
// interface that holds it) each time: results are read-only, and a list
// of capacity 0 cannot be written through, even by append.
var emptyList any = make([]any, 0)

// fieldFromStruct is the library's lookup of a field in a struct (or a
// pointer to one), by the name with its first letter upper-cased.
func fieldFromStruct(key string, value any) any {
	rv := reflect.ValueOf(value)
	switch rv.Kind() {
	case reflect.Struct:
	case reflect.Ptr:
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	default:
		return nil
	}
	first, n := utf8.DecodeRuneInString(key)
	v := rv.FieldByName(string(unicode.ToUpper(first)) + key[n:])
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}

// direct returns, for a few one-argument functions that rules call once
// per element (keys, to_upper, to_lower), an evaluation that computes them
// in place for the argument type they take, without the function table's
// argument checks; any other argument goes to the function table, which
// gives its errors.
func (c *fastCompiler) direct(name string, arg evalFn) evalFn {
	onString := func(f func(string) string) func(v any) (any, bool) {
		return func(v any) (any, bool) {
			s, ok := v.(string)
			if !ok {
				return nil, false
			}
			return f(s), true
		}
	}
	var fn func(v any) (any, bool)
	switch name {
	case "to_upper":
		fn = onString(strings.ToUpper)
	case "to_lower":
		fn = onString(strings.ToLower)
	case "keys":
		fn = func(v any) (any, bool) {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			out := make([]any, 0, len(m))
			for k := range m {
				out = append(out, k)
			}
			return out, true
		}
	default:
		return nil
	}
	return func(value any) (any, error) {
		v, err := arg(value)
		if err != nil {
			return nil, err
		}
		if r, ok := fn(v); ok {
			return r, nil
		}
		return c.caller.CallFunction(name, []any{v})
	}
}
