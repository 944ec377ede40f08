package engine

import (
	"fmt"
	"strconv"

	"github.com/gavelpolicy/gavel/internal/variables"
)

// Lookup implements variables.Evaluator. A nil result of a plain
// path expression (a.b["c"][0]) whose key is missing is reported as
// upstream reports it, `JMESPath query failed: Unknown key "c" in path`,
// wrapping variables.ErrNotFound; an existing null, or a nil result of any
// other expression, is found.
func (s *scope) Lookup(expr string) (any, bool, error) {
	v, err := s.query(expr)
	if err != nil {
		// a context entry's error, as upstream's query returns it (a
		// type assertion: errors.As would allocate on every lookup)
		if le, ok := err.(*deferredLoadError); ok {
			return nil, false, le.err
		}
		return nil, false, fmt.Errorf("JMESPath query failed: %w", err)
	}
	if v != nil {
		return v, true, nil
	}
	steps, ok := parsePath(expr)
	if !ok {
		return nil, true, nil
	}
	var cur any = s.data
	for _, st := range steps {
		switch c := cur.(type) {
		case map[string]any:
			if st.index {
				return nil, true, nil
			}
			next, ok := c[st.key]
			if !ok {
				return nil, false, unknownKeyError(st.key)
			}
			cur = next
		case []any:
			if !st.index || st.n < 0 || st.n >= len(c) {
				return nil, true, nil
			}
			cur = c[st.n]
		default:
			return nil, true, nil
		}
	}
	return nil, true, nil
}

type pathStep struct {
	key   string
	index bool
	n     int
}

// parsePath parses a plain JMESPath field path: identifiers, quoted
// identifiers and non-negative indices.
func parsePath(expr string) ([]pathStep, bool) {
	var steps []pathStep
	i := 0
	n := len(expr)
	for i < n && expr[i] == ' ' {
		i++
	}
	for n > i && expr[n-1] == ' ' {
		n--
	}
	expectField := true
	for i < n {
		c := expr[i]
		switch {
		case expectField && c == '"':
			j := i + 1
			for j < n && expr[j] != '"' {
				if expr[j] == '\\' {
					j++
				}
				j++
			}
			if j >= n {
				return nil, false
			}
			key, err := strconv.Unquote(expr[i : j+1])
			if err != nil {
				return nil, false
			}
			steps = append(steps, pathStep{key: key})
			i = j + 1
			expectField = false
		case expectField && (c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'):
			j := i
			for j < n && (expr[j] == '_' || expr[j] >= 'a' && expr[j] <= 'z' || expr[j] >= 'A' && expr[j] <= 'Z' || expr[j] >= '0' && expr[j] <= '9') {
				j++
			}
			steps = append(steps, pathStep{key: expr[i:j]})
			i = j
			expectField = false
		case !expectField && c == '.':
			i++
			expectField = true
		case !expectField && c == '[':
			j := i + 1
			for j < n && expr[j] >= '0' && expr[j] <= '9' {
				j++
			}
			if j == i+1 || j >= n || expr[j] != ']' {
				return nil, false
			}
			k, _ := strconv.Atoi(expr[i+1 : j])
			steps = append(steps, pathStep{index: true, n: k})
			i = j + 1
		default:
			return nil, false
		}
	}
	if expectField || len(steps) == 0 {
		return nil, false
	}
	return steps, true
}

// unknownKeyError is upstream's missing-key error; it wraps
// variables.ErrNotFound without showing it in the message.
type unknownKeyError string

func (e unknownKeyError) Error() string {
	return fmt.Sprintf("JMESPath query failed: Unknown key %q in path", string(e))
}

func (e unknownKeyError) Unwrap() error { return variables.ErrNotFound }
