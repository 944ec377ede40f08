package jmespath

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jmespath-community/go-jmespath/pkg/parsing"
)

// defaultMaxResultSize is the default of WithMaxResultSize: 8 MiB.
const defaultMaxResultSize = 8 << 20

// ErrTooLarge is wrapped by the errors of evaluations that would build a
// value larger than the interpreter's size limit (see WithMaxResultSize).
var ErrTooLarge = errors.New("value exceeds the JMESPath size limit")

// WithMaxResultSize bounds, in bytes of JSON, the values an evaluation
// builds, so that a hostile or careless expression cannot exhaust memory:
//
//   - the strings built by pad_left, pad_right, join, to_string,
//     replace, replace_all, regex_replace_all, regex_replace_all_literal
//     and base64_encode (checked before they are built);
//   - the arrays built by flattening ("[]"), counting 16 bytes per
//     element (its size in memory);
//   - the result of an expression that builds values (function calls,
//     multi-selects that can read a part of the data twice: not
//     spec.[initContainers, containers], whose branches are disjoint
//     paths), measured as its JSON text would be, counting shared values
//     each time they appear.
//
// A value over the limit fails the evaluation with an error wrapping
// ErrTooLarge. Values read from the data are not limited (their size is
// the caller's). Expressions that use slices, arithmetic, "$" or let are
// evaluated by the go-jmespath library, whose flattening is then bounded
// only through the check of the result. The default is 8 MiB.
func WithMaxResultSize(n int) Option {
	return func(c *Config) error {
		if n <= 0 {
			return fmt.Errorf("%w: WithMaxResultSize: non-positive size %d", ErrInvalidOption, n)
		}
		c.maxResultSize = n
		return nil
	}
}

// tooLarge is the error of a function whose result would exceed the limit.
func tooLarge(function string, size, limit int) error {
	return &FunctionError{Function: function, Message: fmt.Sprintf("result of %d bytes exceeds the limit of %d bytes", size, limit), Err: ErrTooLarge}
}

// sizeGuard returns the check run before a function that builds a string
// whose size its arguments do not bound linearly, nil for the others. The
// arguments have the types the function's signature requires unless the
// check says otherwise; a check leaves type errors to the function.
func (i *Interpreter) sizeGuard(name string) func(args []any) error {
	limit := i.cfg.maxResultSize
	check := func(size int) error {
		if size > limit || size < 0 {
			return tooLarge(name, size, limit)
		}
		return nil
	}
	switch name {
	case "pad_left", "pad_right":
		return func(args []any) error {
			w, ok := arg[float64](args, 1)
			if !ok || w <= float64(limit) {
				return nil
			}
			if pad, ok := arg[string](args, 2); ok && pad == "" {
				return nil
			}
			return tooLarge(name, int(min(w, 1<<62)), limit)
		}
	case "join":
		return func(args []any) error {
			sep, _ := arg[string](args, 0)
			list, _ := arg[[]any](args, 1)
			n := 0
			for k, v := range list {
				s, _ := v.(string)
				n += len(s)
				if k > 0 {
					n += len(sep)
				}
				if n > limit {
					return tooLarge(name, n, limit)
				}
			}
			return nil
		}
	case "to_string":
		return func(args []any) error {
			if len(args) != 1 {
				return nil
			}
			if _, ok := args[0].(string); ok {
				return nil
			}
			if n, ok := jsonSize(args[0], limit); !ok {
				return tooLarge(name, n, limit)
			}
			return nil
		}
	case "replace", "replace_all":
		return func(args []any) error {
			s, ok1 := arg[string](args, 0)
			old, ok2 := arg[string](args, 1)
			repl, ok3 := arg[string](args, 2)
			if !ok1 || !ok2 || !ok3 || len(repl) <= len(old) {
				return nil
			}
			n := strings.Count(s, old)
			if c, ok := arg[float64](args, 3); ok && c >= 0 && c < float64(n) {
				n = int(c)
			}
			return check(len(s) + n*(len(repl)-len(old)))
		}
	case "regex_replace_all", "regex_replace_all_literal":
		return func(args []any) error {
			pattern, ok := arg[string](args, 0)
			if !ok || len(args) != 3 {
				return nil
			}
			src, ok1 := scalarString(args[1])
			repl, ok2 := scalarString(args[2])
			if !ok1 || !ok2 {
				return nil
			}
			re, err := i.regexp(pattern)
			if err != nil {
				return nil // the function reports it
			}
			return check(replaceBound(re, src, repl, name == "regex_replace_all", limit))
		}
	case "base64_encode":
		return func(args []any) error {
			s, _ := arg[string](args, 0)
			return check((len(s) + 2) / 3 * 4)
		}
	}
	return nil
}

// replaceBound is an upper bound of the length of a regular expression
// replacement, tight enough to compare with limit: the source, plus for
// each match the template, plus (when the template is expanded) every "$"
// reference as long as the whole match. Matches do not overlap, so the
// references add at most the count of "$" times the source length.
func replaceBound(re *regexp.Regexp, src, repl string, expand bool, limit int) int {
	if repl == "" {
		return len(src)
	}
	refs := 0
	if expand {
		refs = strings.Count(repl, "$") * len(src)
	}
	// at most one match per position and one at the end: matching is
	// needed only when that bound is over the limit
	if n := len(src) + (len(src)+1)*len(repl) + refs; n <= limit {
		return n
	}
	matches := len(re.FindAllStringIndex(src, -1))
	return len(src) + matches*len(repl) + refs
}

// arg returns argument k as a T, if there is one of that type.
func arg[T any](args []any, k int) (T, bool) {
	var zero T
	if k >= len(args) {
		return zero, false
	}
	v, ok := args[k].(T)
	return v, ok
}

// guarded wraps a function handler with its size guard, if it has one.
func (i *Interpreter) guarded(name string, h func([]any) (any, error)) func([]any) (any, error) {
	g := i.sizeGuard(name)
	if g == nil {
		return h
	}
	return func(args []any) (any, error) {
		if err := g(args); err != nil {
			return nil, err
		}
		return h(args)
	}
}

// jsonSize estimates the length of v's JSON text, counting shared values
// each time they appear; ok is false when it exceeds limit (n is then the
// size counted when the walk stopped). Numbers count 8 bytes and string
// escapes are ignored: the estimate is for bounding, not for layout.
func jsonSize(v any, limit int) (n int, ok bool) {
	ok = addJSONSize(v, &n, limit)
	return n, ok
}

// addJSONSize adds the estimated size of v to *n, stopping (false) once
// it exceeds limit.
func addJSONSize(v any, n *int, limit int) bool {
	switch t := v.(type) {
	case string:
		*n += len(t) + 2
	case map[string]any:
		*n += 2
		for k, x := range t {
			*n += len(k) + 4
			if *n > limit || !addJSONSize(x, n, limit) {
				return false
			}
		}
	case []any:
		*n += 2
		for _, x := range t {
			*n++
			if *n > limit || !addJSONSize(x, n, limit) {
				return false
			}
		}
	case nil:
		*n += 4
	case bool:
		*n += 5
	default:
		*n += 8
	}
	return *n <= limit
}

// buildsValues reports whether an expression may build a value larger
// than the data it reads: it holds a function call or a multi-select that
// can read a part of the data twice. The results of other expressions are
// parts of the data, each at most once: projections and flattening only
// gather them (and the arrays flattening builds are bounded on their own),
// and so does a multi-select of disjoint plain paths, such as
// spec.[initContainers, containers] (see disjointSelect).
func buildsValues(n parsing.ASTNode) bool {
	switch n.NodeType {
	case parsing.ASTFunctionExpression:
		return true
	case parsing.ASTMultiSelectList, parsing.ASTMultiSelectHash:
		// the branches of a disjoint select are plain paths: nothing
		// below it builds
		return !disjointSelect(n)
	}
	for _, c := range n.Children {
		if buildsValues(c) {
			return true
		}
	}
	return false
}

// disjointSelect reports whether a multi-select's branches are plain paths
// (fields and non-negative indices) none of which reaches a part of the
// data another one reaches (see disjointPaths). [a.b, a.c] and
// [a[0], a[1]] are disjoint; [a, a.b] and [a, a] are not.
func disjointSelect(n parsing.ASTNode) bool {
	paths := make([][]pathStep, 0, len(n.Children))
	for _, c := range n.Children {
		if n.NodeType == parsing.ASTMultiSelectHash {
			if c.NodeType != parsing.ASTKeyValPair || len(c.Children) != 1 {
				return false
			}
			c = c.Children[0]
		}
		p, ok := plainPath(c)
		if !ok {
			return false
		}
		for _, q := range paths {
			if !disjointPaths(p, q) {
				return false
			}
		}
		paths = append(paths, p)
	}
	return true
}

// disjointPaths reports whether two plain paths reach different parts of
// any data: they differ at a step both have, so neither is a prefix of the
// other. Two fields or two indices that differ select different members;
// a field and an index never select the same value (one reads objects,
// the other arrays).
func disjointPaths(p, q []pathStep) bool {
	for i := 0; i < len(p) && i < len(q); i++ {
		if p[i] != q[i] {
			return true
		}
	}
	return false
}

// checkResult fails a result of an expression that builds values when its
// JSON text would exceed the limit.
func (q *Query) checkResult(result any) error {
	if !q.builds {
		return nil
	}
	limit := q.intr.cfg.maxResultSize
	switch t := result.(type) {
	case map[string]any, []any:
	case string:
		// as the functions' guards count strings: their bytes
		if len(t) > limit {
			return &EvalError{Expression: q.expr, Err: fmt.Errorf("%w: result of %d bytes, limit %d", ErrTooLarge, len(t), limit)}
		}
		return nil
	default:
		return nil
	}
	if n, ok := jsonSize(result, limit); !ok {
		return &EvalError{Expression: q.expr, Err: fmt.Errorf("%w: result of at least %d bytes, limit %d", ErrTooLarge, n, limit)}
	}
	return nil
}
