// Package conditions implements the operators of Kyverno conditions: the
// key/operator/value expressions used by rule preconditions, deny conditions
// and foreach preconditions.
//
// An operator name is parsed once with [ParseOperator]; the resulting
// [Operator] is a small immutable value that can be shared by any number of
// goroutines. [Evaluate] then compares a key and a value that have already been
// through variable substitution:
//
//	op, err := conditions.ParseOperator("AnyIn")
//	ok, err := conditions.Evaluate([]any{"app", "debug"}, op, []any{"app", "sidecar"})
//
// # Values
//
// Keys and values are JSON-like trees (map[string]any, []any, string, bool,
// nil and numbers). Numbers may be float64, any Go integer type, float32 or
// json.Number; they are all compared as float64, which is what the upstream
// engine sees after its JSON round trip. []string and map[string]string are
// accepted as the equivalent []any and map[string]any. Any other Go type is
// reported as a *ValueError.
//
// # Upstream semantics
//
// The comparison rules follow the upstream Kyverno engine exactly, including
// its corner cases, so that policies give the same results:
//
//   - Equals/NotEquals: strings match with '*' and '?' wildcards in the value;
//     a duration string on either side compares as a duration (numbers are
//     seconds); two resource quantities compare by value ("1Gi" equals
//     "1024Mi"); numbers compare with numeric strings; maps and lists compare
//     deeply. NotEquals is not always the negation of Equals: when the key is a
//     resource quantity and the value a non-empty string that is not one, both
//     are false, and a type mismatch makes NotEquals true except for a nil key.
//   - GreaterThan, GreaterThanOrEquals, LessThan, LessThanOrEquals: durations
//     first, then resource quantities, then numbers (numeric strings included),
//     then semantic versions ("1.10.0" > "1.9.2").
//   - Duration*: deprecated upstream; both sides must be Go durations or
//     numbers of seconds.
//   - AnyIn, AllIn, AnyNotIn, AllNotIn: a scalar or list key against a list
//     value, a single string value, a JSON-encoded string list or a numeric
//     range ("1-10", "-5-5", "1Gi-4Gi"). Elements are compared as text, with
//     wildcards on both sides.
//   - In, NotIn: deprecated upstream. Exact text matching for list keys; a list
//     key is In when every element is in the value set, and NotIn when at
//     least one element is outside it (not when none is inside, as the old
//     documentation says).
//
// One deliberate difference bounds the cost of evaluation: a string longer
// than 1024 bytes, or with a decimal exponent beyond ±10000 ("1e999999999"),
// is not read as a resource quantity. Upstream parses and compares such
// strings with unbounded CPU (the example never finishes); no realistic value
// is affected. Wildcard matching costs O(len(pattern)·len(text)) at worst.
//
// Where upstream logs a type mismatch and returns false, Evaluate returns false
// and a nil error; an error is returned only for input no policy could produce
// (an invalid Operator, a Go type that is not JSON-like) or where upstream
// itself would crash. See Evaluate for the exact list.
package conditions
