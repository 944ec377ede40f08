package jmespath

import (
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/jmespath-community/go-jmespath/pkg/parsing"
	"github.com/jmespath-community/go-jmespath/pkg/util"
)

// This file compiles projections and flattening ("x[]", "x[].y",
// "x.[a, b][]"). A projection over a flattening reads the elements of the
// flattened list where they are instead of building that list first; a
// multi-select list that is only flattened is gathered in a buffer on the
// stack; and a flattening that changes nothing (no nested list, no null
// to drop), like a projection that gives every element back, evaluates
// to the list it read, not to a copy: results are read-only, as the
// values a field path reads already are.

// flatSource is the operand of a flattening: an expression, or a
// multi-select list (possibly read on the value of a path, "x.[a, b]")
// whose elements are gathered in a buffer given by the caller.
type flatSource struct {
	inner    evalFn   // the operand, when it is no multi-select list
	left     evalFn   // the multi-select's operand, nil for the value itself
	branches []evalFn // the multi-select's branches
}

// compileFlatSource compiles the operand of the flattening node.
func (c *fastCompiler) compileFlatSource(flat parsing.ASTNode) (*flatSource, bool) {
	operand := flat.Children[0]
	var left *parsing.ASTNode
	if operand.NodeType == parsing.ASTSubexpression && len(operand.Children) == 2 &&
		operand.Children[1].NodeType == parsing.ASTMultiSelectList {
		left, operand = &operand.Children[0], operand.Children[1]
	}
	if operand.NodeType != parsing.ASTMultiSelectList {
		inner, ok := c.compile(operand)
		return &flatSource{inner: inner}, ok
	}
	src := &flatSource{}
	if left != nil {
		f, ok := c.compile(*left)
		if !ok {
			return nil, false
		}
		src.left = f
	}
	branches, ok := c.compileChildren(operand)
	src.branches = branches
	return src, ok
}

// eval evaluates the operand on value. isList reports that it is a list
// ([]any): s, held by l when it is the operand's value, or gathered in buf
// (l nil) for a multi-select. Otherwise l is the operand's value, nil
// when err is set.
func (src *flatSource) eval(value any, buf []any) (s []any, l any, isList bool, err error) {
	if src.inner != nil {
		l, err = src.inner(value)
		if err != nil {
			return nil, nil, false, err
		}
		s, isList = l.([]any)
		return s, l, isList, nil
	}
	base := value
	if src.left != nil {
		// a subexpression: null on the left is null
		if base, err = src.left(value); err != nil || base == nil {
			return nil, nil, false, err
		}
	}
	for _, b := range src.branches {
		v, err := b(base)
		if err != nil {
			return nil, nil, false, err
		}
		buf = append(buf, v)
	}
	return buf, nil, true, nil
}

// flattenValue is the flattening of an operand that is no []any, or
// failed: as the library, an error flattens to null (except a value over
// the size limit), other slice types are flattened by the library.
func (c *fastCompiler) flattenValue(flat parsing.ASTNode, l any, err error, value any) (any, error) {
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, err
		}
		return nil, nil
	}
	if util.IsSliceType(l) {
		return c.library(flat, value)
	}
	return nil, nil
}

// isSlice reports whether a value is a list the flattening splices in.
func isSlice(v any) bool {
	switch v.(type) {
	case nil, string, float64, bool, map[string]any:
		return false
	case []any:
		return true
	}
	return util.IsSliceType(v)
}

// flattenList is the flattening of the list s, held by l (nil when s is a
// buffer of the caller's, which is then copied if it is the result).
func (c *fastCompiler) flattenList(s []any, l any) (any, error) {
	nested := false
	for _, el := range s {
		if isSlice(el) {
			nested = true
			break
		}
	}
	if !nested {
		switch {
		case len(s) == 0:
			return emptyList, nil
		case l != nil:
			return l, nil
		}
		return append(make([]any, 0, len(s)), s...), nil
	}
	flattened := make([]any, 0, len(s))
	for _, el := range s {
		switch t := el.(type) {
		case []any:
			if len(flattened)+len(t) > c.maxElements {
				return nil, c.tooManyElements()
			}
			flattened = append(flattened, t...)
		default:
			if util.IsSliceType(el) {
				v := reflect.ValueOf(el)
				for i := 0; i < v.Len(); i++ {
					flattened = append(flattened, v.Index(i).Interface())
				}
				continue
			}
			flattened = append(flattened, el)
		}
	}
	if len(flattened) == 0 {
		return emptyList, nil
	}
	return flattened, nil
}

// tooManyElements is the error of a flattening over the size limit.
func (c *fastCompiler) tooManyElements() error {
	return fmt.Errorf("%w: flattening gives more than %d elements", ErrTooLarge, c.maxElements)
}

// identity is the right side of the projection "x[]".
func identity(value any) (any, error) { return value, nil }

// compileProjection compiles a projection: on a flattening, it reads the
// flattened elements in place (see flatProjection and flattenNonNull).
func (c *fastCompiler) compileProjection(node parsing.ASTNode) (evalFn, bool) {
	if len(node.Children) != 2 {
		return nil, false
	}
	first, second := node.Children[0], node.Children[1]
	// string slicing projects a string: only with a slice on the left,
	// which is not compiled
	if first.NodeType == parsing.ASTIndexExpression && len(first.Children) > 1 &&
		first.Children[1].NodeType == parsing.ASTSlice {
		return nil, false
	}
	right, ok := c.compile(second)
	if !ok {
		return nil, false
	}
	if first.NodeType == parsing.ASTFlatten && len(first.Children) == 1 {
		src, ok := c.compileFlatSource(first)
		if !ok {
			return nil, false
		}
		if second.NodeType == parsing.ASTIdentity {
			return c.flattenNonNull(node, first, src), true
		}
		return c.flatProjection(node, first, src, right), true
	}
	left, ok := c.compile(first)
	if !ok {
		return nil, false
	}
	return func(value any) (any, error) {
		l, err := left(value)
		if err != nil {
			return nil, err
		}
		return c.projectValue(node, l, right, value)
	}, true
}

// projectValue is the projection of right on l, the value of its left
// side: null when l is no list, the library's for other slice types.
func (c *fastCompiler) projectValue(node parsing.ASTNode, l any, right evalFn, value any) (any, error) {
	s, ok := l.([]any)
	if !ok {
		if util.IsSliceType(l) {
			return c.library(node, value)
		}
		return nil, nil
	}
	var collected []any // made at the first element kept that is not the element itself
	same := 0           // the first elements, projected on themselves
	for i, el := range s {
		cur, err := right(el)
		if err != nil {
			return nil, err
		}
		if collected == nil && same == i && projectedOnItself(cur, el) {
			same++
			continue
		}
		if collected == nil && same > 0 {
			collected = append(make([]any, 0, len(s)), s[:same]...)
		}
		collected = keep(collected, cur, len(s)-i)
	}
	switch {
	case same == len(s) && same > 0:
		// every element projected on itself ("ALL" by to_upper): the
		// list, not a copy
		return l, nil
	case collected == nil:
		return emptyList, nil
	}
	return collected, nil
}

// projectedOnItself reports whether a projected value is the element it was
// projected from, as far as any reader can tell: strings, numbers (bit
// for bit) and booleans of equal values.
//
// What it buys (re-measured against the projection always collecting a
// new list): 2 allocations and 44 bytes less per BenchmarkValidate, about
// 2% fewer instructions with the collector (.ci/icount 505.0k against
// 511.8k and 516.7k), none without it.
func projectedOnItself(projected, el any) bool {
	switch x := projected.(type) {
	case string:
		y, ok := el.(string)
		return ok && x == y
	case float64:
		y, ok := el.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case bool:
		y, ok := el.(bool)
		return ok && x == y
	}
	return false
}

// keep appends a projected value unless it is null; the list is made at
// the first value kept, with room for the rest elements still to project.
func keep(collected []any, cur any, rest int) []any {
	if cur == nil {
		return collected
	}
	if collected == nil {
		collected = make([]any, 0, rest)
	}
	return append(collected, cur)
}

// flatProjection evaluates the projection of right on the flattening of
// src ("x[].y") without building the flattened list.
func (c *fastCompiler) flatProjection(node, flat parsing.ASTNode, src *flatSource, right evalFn) evalFn {
	return func(value any) (any, error) {
		var buf [4]any
		s, l, isList, err := src.eval(value, buf[:0])
		if !isList {
			f, err := c.flattenValue(flat, l, err, value)
			if err != nil {
				return nil, err
			}
			return c.projectValue(node, f, right, value)
		}
		return c.projectFlattened(node, s, l, right, value)
	}
}

// projectFlattened projects right on the elements of s, those of its
// nested lists spliced in. The flattening's size check comes first, as
// when the flattened list is built before the projection.
func (c *fastCompiler) projectFlattened(node parsing.ASTNode, s []any, l any, right evalFn, value any) (any, error) {
	total, nested := 0, false
	for _, el := range s {
		if t, ok := el.([]any); ok {
			if total += len(t); total > c.maxElements {
				return nil, c.tooManyElements()
			}
			nested = true
			continue
		}
		if isSlice(el) {
			// another slice type: flattened first
			f, err := c.flattenList(s, l)
			if err != nil {
				return nil, err
			}
			return c.projectValue(node, f, right, value)
		}
		total++
	}
	if !nested && l != nil {
		// s is its own flattening
		return c.projectValue(node, l, right, value)
	}
	var collected []any
	done := 0 // elements projected
	for _, el := range s {
		t, ok := el.([]any)
		if !ok {
			cur, err := right(el)
			if err != nil {
				return nil, err
			}
			collected = keep(collected, cur, total-done)
			done++
			continue
		}
		for _, x := range t {
			cur, err := right(x)
			if err != nil {
				return nil, err
			}
			collected = keep(collected, cur, total-done)
			done++
		}
	}
	if collected == nil {
		return emptyList, nil
	}
	return collected, nil
}

// flattenNonNull evaluates the projection "x[]" (a flattening projected on
// the identity): the elements of x, those of its nested lists spliced in,
// without nulls, in one pass.
func (c *fastCompiler) flattenNonNull(node, flat parsing.ASTNode, src *flatSource) evalFn {
	return func(value any) (any, error) {
		var buf [4]any
		s, l, isList, err := src.eval(value, buf[:0])
		if !isList {
			f, err := c.flattenValue(flat, l, err, value)
			if err != nil {
				return nil, err
			}
			return c.projectValue(node, f, identity, value)
		}
		return c.nonNull(node, s, l, value)
	}
}

// nonNull is flattenNonNull on the list s, held by l (nil when s is a
// buffer of the caller's). A result equal to s, or to the one nested list
// that gives every element kept, is that list itself.
func (c *fastCompiler) nonNull(node parsing.ASTNode, s []any, l any, value any) (any, error) {
	// the length of the flattened list (nulls included, as the flattening
	// counts them) and of the result
	total, kept := 0, 0
	changed := false // the result is not s: s holds nulls or lists
	sources := 0     // elements of s that give elements kept
	var whole any    // the last of them, when a list without nulls
	for _, el := range s {
		switch t := el.(type) {
		case nil:
			total++
			changed = true
		case []any:
			total += len(t)
			changed = true
			n := 0
			for _, x := range t {
				if x != nil {
					n++
				}
			}
			if n > 0 {
				kept += n
				sources++
				whole = nil
				if n == len(t) {
					whole = el
				}
			}
		default:
			if isSlice(el) {
				return c.nonNullFlattened(node, s, l, value)
			}
			total++
			kept++
			sources++
			whole = nil
		}
	}
	switch {
	case total > c.maxElements:
		return c.nonNullFlattened(node, s, l, value)
	case kept == 0:
		return emptyList, nil
	case !changed && l != nil:
		return l, nil
	case sources == 1 && whole != nil:
		return whole, nil
	}
	out := make([]any, 0, kept)
	for _, el := range s {
		switch t := el.(type) {
		case nil:
		case []any:
			for _, x := range t {
				if x != nil {
					out = append(out, x)
				}
			}
		default:
			out = append(out, el)
		}
	}
	return out, nil
}

// nonNullFlattened is nonNull in two steps, for what the single pass does
// not handle (other slice types, a flattening over the size limit).
func (c *fastCompiler) nonNullFlattened(node parsing.ASTNode, s []any, l any, value any) (any, error) {
	f, err := c.flattenList(s, l)
	if err != nil {
		return nil, err
	}
	return c.projectValue(node, f, identity, value)
}
