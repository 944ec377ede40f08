package variables

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Evaluator evaluates one JMESPath expression (braces stripped, trimmed)
// against the rule's evaluation context. The engine implements it
// (compiled-query cache + context lookup). A nil result with nil error means
// "not found".
//
// To report upstream's exact message for a missing key, an Evaluator returns
// an error carrying upstream's text (e.g. `JMESPath query failed: Unknown key
// "x" in path`), ideally wrapping [ErrNotFound].
type Evaluator interface {
	Evaluate(expr string) (any, error)
}

// LookupEvaluator is an optional extension of [Evaluator] that tells a value
// that exists and is null (found = true, value nil) from one that does not
// exist. Upstream substitutes an existing null as nil (or "null" inside a
// longer string); a plain Evaluator cannot express that, since a nil result
// means "not found".
type LookupEvaluator interface {
	Evaluator
	Lookup(expr string) (value any, found bool, err error)
}

// PreparedEvaluator is an optional extension of [LookupEvaluator] for
// templates compiled with [WithPrepare]: LookupPrepared(expr, prepared) is
// Lookup(expr) for an expression whose prepared value (never nil) the
// prepare function returned for the same text. Expressions that were not
// prepared, and those rewritten at evaluation (on DELETE requests,
// request.object becomes request.oldObject), go to Lookup.
type PreparedEvaluator interface {
	LookupEvaluator
	LookupPrepared(expr string, prepared any) (value any, found bool, err error)
}

// EvaluatorFunc adapts a function to [Evaluator].
type EvaluatorFunc func(expr string) (any, error)

// Evaluate calls f(expr).
func (f EvaluatorFunc) Evaluate(expr string) (any, error) { return f(expr) }

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
