package variables

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Evaluator evaluates one JMESPath expression (braces stripped, trimmed)
// against the rule's evaluation context; the engine implements it. found
// tells a value that exists and is null (found, nil value) from one that
// does not exist: upstream substitutes an existing null as nil (or "null"
// inside a longer string).
//
// To report upstream's exact message for a missing key, an Evaluator returns
// an error carrying upstream's text (e.g. `JMESPath query failed: Unknown key
// "x" in path`), ideally wrapping [ErrNotFound].
type Evaluator interface {
	Lookup(expr string) (value any, found bool, err error)
}

// EvaluatorFunc adapts to [Evaluator] a function for which a nil result
// means "not found" (it cannot tell an existing null from a missing value).
type EvaluatorFunc func(expr string) (any, error)

// Lookup calls f(expr); a nil result is not found.
func (f EvaluatorFunc) Lookup(expr string) (any, bool, error) {
	v, err := f(expr)
	return v, v != nil, err
}

// AppendText appends v to dst as upstream splices a value into a longer
// string: strings as they are, anything else as compact JSON.
func AppendText(dst []byte, v any) ([]byte, error) { return appendText(dst, v) }

// appendText renders v as upstream does when a value is spliced into a
// longer string or into the text of an outer expression: strings as they are,
// anything else as compact JSON.
func appendText(dst []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case string:
		return append(dst, t...), nil
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, t), nil
	case int:
		return strconv.AppendInt(dst, int64(t), 10), nil
	case int64:
		return strconv.AppendInt(dst, t, 10), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return dst, fmt.Errorf("failed to marshal %T: %v", v, v)
	}
	return append(dst, b...), nil
}
