package variables

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// fakeEvaluator is a tiny stand-in for the engine's JMESPath evaluator. It
// understands what the tests need: dotted paths with "quoted" elements and
// [n] indexes, 'string' and `json` literals, a || b, and the one-argument
// functions to_upper and to_lower. Expressions listed in exact are answered
// from that map first. Every expression it is asked is recorded.
//
// A missing key is "not found": a nil result (plain mode), found = false
// (lookup mode, see lookupEvaluator) or, in strict mode, an error with
// upstream's text wrapping ErrNotFound.
type fakeEvaluator struct {
	data   map[string]any
	exact  map[string]any
	strict bool

	mu    sync.Mutex
	asked []string
}

func newFake(data map[string]any) *fakeEvaluator {
	return &fakeEvaluator{data: data}
}

func (f *fakeEvaluator) Evaluate(expr string) (any, error) {
	v, _, err := f.Lookup(expr)
	return v, err
}

func (f *fakeEvaluator) Lookup(expr string) (any, bool, error) {
	f.mu.Lock()
	f.asked = append(f.asked, expr)
	f.mu.Unlock()
	v, found, err := f.eval(strings.TrimSpace(expr))
	if err == nil && !found && f.strict {
		return nil, false, fmt.Errorf("JMESPath query failed: %w", f.notFound(expr))
	}
	return v, found, err
}

func (f *fakeEvaluator) questions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

type unknownKeyError struct{ key string }

func (e unknownKeyError) Error() string        { return fmt.Sprintf("Unknown key %q in path", e.key) }
func (e unknownKeyError) Is(target error) bool { return target == ErrNotFound }

// notFound names the first element of a path that is missing, as the
// JMESPath error upstream reports does.
func (f *fakeEvaluator) notFound(expr string) error {
	elems, err := splitExpr(strings.TrimSpace(expr))
	if err != nil || len(elems) == 0 {
		return unknownKeyError{key: expr}
	}
	var cur any = f.data
	for _, e := range elems {
		m, ok := cur.(map[string]any)
		if !ok {
			break
		}
		if cur, ok = m[e]; !ok {
			return unknownKeyError{key: e}
		}
	}
	return unknownKeyError{key: elems[len(elems)-1]}
}

func (f *fakeEvaluator) eval(expr string) (any, bool, error) {
	if v, ok := f.exact[expr]; ok {
		return v, true, nil
	}
	if parts := splitTop(expr, "||"); len(parts) > 1 {
		var last any
		var lastFound bool
		for _, p := range parts {
			v, found, err := f.eval(strings.TrimSpace(p))
			if err != nil {
				return nil, false, err
			}
			last, lastFound = v, found
			if found && truthy(v) {
				return v, true, nil
			}
		}
		return last, lastFound, nil
	}
	switch {
	case expr == "":
		return nil, false, errors.New("invalid query (nil)")
	case len(expr) >= 2 && expr[0] == '\'' && expr[len(expr)-1] == '\'':
		return strings.ReplaceAll(expr[1:len(expr)-1], `\'`, `'`), true, nil
	case len(expr) >= 2 && expr[0] == '`' && expr[len(expr)-1] == '`':
		var v any
		if err := json.Unmarshal([]byte(expr[1:len(expr)-1]), &v); err != nil {
			return nil, false, fmt.Errorf("bad literal: %v", err)
		}
		return v, true, nil
	}
	for _, fn := range []string{"to_upper", "to_lower"} {
		if strings.HasPrefix(expr, fn+"(") && strings.HasSuffix(expr, ")") {
			v, found, err := f.eval(strings.TrimSpace(expr[len(fn)+1 : len(expr)-1]))
			if err != nil || !found {
				return nil, found, err
			}
			s, ok := v.(string)
			if !ok {
				return nil, false, fmt.Errorf("JMESPath function '%s': argument must be a string", fn)
			}
			if fn == "to_upper" {
				return strings.ToUpper(s), true, nil
			}
			return strings.ToLower(s), true, nil
		}
	}
	elems, err := splitExpr(expr)
	if err != nil {
		return nil, false, err
	}
	var cur any = f.data
	for _, e := range elems {
		switch t := cur.(type) {
		case map[string]any:
			v, ok := t[e]
			if !ok {
				return nil, false, nil
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(e)
			if err != nil || i < 0 || i >= len(t) {
				return nil, false, nil
			}
			cur = t[i]
		default:
			return nil, false, nil
		}
	}
	return cur, true, nil
}

func truthy(v any) bool {
	switch t := v.(type) {
	case nil:
		return false
	case bool:
		return t
	case string:
		return t != ""
	case []any:
		return len(t) > 0
	case map[string]any:
		return len(t) > 0
	}
	return true
}

// splitTop splits s on sep outside quotes, backticks and brackets.
func splitTop(s, sep string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case depth == 0 && strings.HasPrefix(s[i:], sep):
			out = append(out, s[start:i])
			i += len(sep) - 1
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// splitExpr splits a dotted path: a.b."c.d"[0].e
func splitExpr(expr string) ([]string, error) {
	var out []string
	i := 0
	for i < len(expr) {
		switch c := expr[i]; {
		case c == '.':
			i++
		case c == '[':
			j := strings.IndexByte(expr[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("incorrect query %s: unclosed [", expr)
			}
			out = append(out, expr[i+1:i+j])
			i += j + 1
		case c == '"':
			j := i + 1
			var sb strings.Builder
			for ; j < len(expr) && expr[j] != '"'; j++ {
				if expr[j] == '\\' && j+1 < len(expr) {
					j++
				}
				sb.WriteByte(expr[j])
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("incorrect query %s: unclosed quote", expr)
			}
			out = append(out, sb.String())
			i = j + 1
		default:
			j := i
			for j < len(expr) && expr[j] != '.' && expr[j] != '[' {
				c := expr[j]
				if !(c == '_' || c == '-' || c == '@' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
					return nil, fmt.Errorf("incorrect query %s: unexpected %q", expr, c)
				}
				j++
			}
			out = append(out, expr[i:j])
			i = j
		}
	}
	return out, nil
}

// plainEvaluator cannot tell an existing null from a missing value, as an
// EvaluatorFunc.
type plainEvaluator struct{ f *fakeEvaluator }

func (p plainEvaluator) Lookup(expr string) (any, bool, error) {
	return EvaluatorFunc(p.f.Evaluate).Lookup(expr)
}

// mustJSON decodes a JSON document for tests.
func mustJSON(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	return v
}

func toJSON(v any) string {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return strings.TrimSuffix(sb.String(), "\n")
}
