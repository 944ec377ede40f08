package cel

import (
	"math"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// jsonAdapter converts the values of JSON-like trees for CEL: integral
// numbers within the int64 range as ints, others as doubles (as the API
// server reads JSON), objects and arrays as lazy maps and lists whose
// elements it converts on access. It gives the values cel-go's own
// adapter gives to these types (the environment's adapter, next, converts
// every other value) without walking the provider chain each time, so
// that objects are handed to CEL as they are.
type jsonAdapter struct{ next types.Adapter }

func (a *jsonAdapter) NativeToValue(v any) ref.Val {
	switch t := v.(type) {
	case map[string]any:
		return types.NewStringInterfaceMap(a, t)
	case []any:
		// v, not t: boxing the slice again would allocate
		return types.NewDynamicList(a, v)
	}
	if w := jsonScalar(v); w != nil {
		return w
	}
	return a.next.NativeToValue(v)
}

// jsonScalar converts the scalars of JSON-like trees (and CEL values,
// as they are); it returns nil for other values.
func jsonScalar(v any) ref.Val {
	switch t := v.(type) {
	case string:
		return types.String(t)
	case float64:
		if isInt(t) {
			return types.Int(int64(t))
		}
		return types.Double(t)
	case bool:
		return types.Bool(t)
	case int64:
		return types.Int(t)
	case nil:
		return types.NullValue
	case ref.Val:
		return t
	}
	return nil
}

// isInt tells whether f is an integral number within the int64 range.
func isInt(f float64) bool {
	return f == math.Trunc(f) && f >= -9.223372036854775e18 && f < 9.223372036854775e18
}
