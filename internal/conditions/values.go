package conditions

import (
	"fmt"
	"reflect"
	"strconv"

	"github.com/gavelpolicy/gavel/internal/jsonnum"
)

// ValueError reports a key or value that is not a JSON-like tree, or that
// upstream cannot evaluate without crashing.
type ValueError struct {
	// Path locates the offending value: "key", "value", "key[2]", ...
	Path string
	// Reason says what is wrong with it.
	Reason string
	// Err is the underlying error, if any.
	Err error
}

func (e *ValueError) Error() string {
	msg := "conditions: " + e.Path + ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *ValueError) Unwrap() error { return e.Err }

// normalize maps a caller-supplied value onto the types upstream sees after
// its JSON round trip, without looking inside maps and lists: every number
// becomes a float64, typed nil maps and slices become nil, and []string and
// map[string]string become their []any and map[string]any equivalents.
func normalize(v any, path string) (any, error) {
	// v is returned as it is, not re-boxed from the switch variable, which
	// would allocate for strings and numbers.
	switch t := v.(type) {
	case nil, string, bool, float64:
		return v, nil
	case map[string]any:
		if t == nil {
			return nil, nil
		}
		return v, nil
	case []any:
		if t == nil {
			return nil, nil
		}
		return v, nil
	}
	if f, ok, err := number(v); ok {
		if err != nil {
			return nil, &ValueError{Path: path, Reason: "invalid number", Err: err}
		}
		return f, nil
	}
	switch t := v.(type) {
	case []string:
		if t == nil {
			return nil, nil
		}
		out := make([]any, len(t))
		for i, s := range t {
			out[i] = s
		}
		return out, nil
	case map[string]string:
		if t == nil {
			return nil, nil
		}
		out := make(map[string]any, len(t))
		for k, s := range t {
			out[k] = s
		}
		return out, nil
	}
	return nil, &ValueError{Path: path, Reason: fmt.Sprintf("unsupported type %T", v)}
}

// number converts any Go number or json.Number to float64. ok is false when v
// is not a number at all.
func number(v any) (f float64, ok bool, err error) { return jsonnum.Float(v) }

// deepNormalize returns a copy of v in which every number is a float64 and
// every []string or map[string]string is a []any or map[string]any. It is
// only used before formatting composite values as text, a rare path.
func deepNormalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = deepNormalize(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepNormalize(e)
		}
		return out
	case []string:
		out := make([]any, len(t))
		for i, s := range t {
			out[i] = s
		}
		return out
	case map[string]string:
		out := make(map[string]any, len(t))
		for k, s := range t {
			out[k] = s
		}
		return out
	}
	if f, ok, err := number(v); ok && err == nil {
		return f
	}
	return v
}

// text formats a value the way upstream's fmt.Sprint does after the JSON round
// trip: numbers as float64 ("1", "1.5", "1e+06"), nil as "<nil>", maps and
// lists in Go syntax.
func text(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(t)
	case nil:
		return "<nil>"
	}
	if f, ok, err := number(v); ok && err == nil {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return fmt.Sprint(deepNormalize(v))
}

// deepEqual compares two JSON-like trees as upstream's reflect.DeepEqual does
// on JSON-decoded data: numbers by float64 value whatever their Go type.
func deepEqual(a, b any) bool {
	switch at := a.(type) {
	case map[string]any:
		bt, ok := b.(map[string]any)
		if !ok {
			if bs, ok := b.(map[string]string); ok {
				bt = make(map[string]any, len(bs))
				for k, s := range bs {
					bt[k] = s
				}
			} else {
				return false
			}
		}
		if at == nil || bt == nil {
			return at == nil && bt == nil
		}
		if len(at) != len(bt) {
			return false
		}
		for k, av := range at {
			bv, ok := bt[k]
			if !ok || !deepEqual(av, bv) {
				return false
			}
		}
		return true
	case []any:
		bt, ok := b.([]any)
		if !ok {
			if bs, ok := b.([]string); ok {
				bt = make([]any, len(bs))
				for i, s := range bs {
					bt[i] = s
				}
			} else {
				return false
			}
		}
		if at == nil || bt == nil {
			return at == nil && bt == nil
		}
		if len(at) != len(bt) {
			return false
		}
		for i := range at {
			if !deepEqual(at[i], bt[i]) {
				return false
			}
		}
		return true
	case string:
		bt, ok := b.(string)
		return ok && at == bt
	case bool:
		bt, ok := b.(bool)
		return ok && at == bt
	case nil:
		return b == nil
	case []string, map[string]string:
		return deepEqual(deepNormalize(a), b)
	}
	if af, ok, err := number(a); ok {
		bf, ok2, err2 := number(b)
		return err == nil && ok2 && err2 == nil && af == bf
	}
	return reflect.DeepEqual(a, b)
}
