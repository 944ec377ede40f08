package conditions

// Evaluate reports whether the condition "key op value" holds. The key and
// value must already be substituted (no "{{ }}" left for this package to see).
// Evaluate does not modify them and is safe for concurrent use.
//
// A type mismatch is not an error: where upstream logs it and answers false
// (or true, for NotEquals), Evaluate does the same with a nil error. An error
// is returned only for:
//   - an Operator that is not one of the constants (*OperatorError);
//   - a key or value of a Go type that is not JSON-like, or a json.Number that
//     is not a finite number (*ValueError with Path "key" or "value");
//   - an In or NotIn list key with an element that is not a string
//     (*ValueError with Path "key[i]"): upstream panics on it.
func Evaluate(key any, op Operator, value any) (bool, error) {
	if !op.valid() {
		return false, &OperatorError{Name: op.String()}
	}
	k, err := normalize(key, "key")
	if err != nil {
		return false, err
	}
	v, err := normalize(value, "value")
	if err != nil {
		return false, err
	}
	switch op {
	case Equals:
		return equals(k, v), nil
	case NotEquals:
		return notEquals(k, v), nil
	case In, NotIn:
		return legacyIn(k, v, op == NotIn)
	case AnyIn, AnyNotIn:
		return anyIn(k, v, op == AnyNotIn), nil
	case AllIn, AllNotIn:
		return allIn(k, v, op == AllNotIn), nil
	case GreaterThan, GreaterThanOrEquals, LessThan, LessThanOrEquals:
		return numeric(k, v, op), nil
	default: // Duration*
		return durationOp(k, v, op), nil
	}
}
