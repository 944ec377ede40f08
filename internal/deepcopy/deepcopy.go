// Package deepcopy copies JSON-like trees: the one deep copy of the
// module's objects (hosts' objects, rule data, patches).
//
// It is not k8s.io/apimachinery's runtime.DeepCopyJSON, which panics on
// any value outside encoding/json's types (an int, a float32, a
// []string): a host's Go objects may hold them, and bad input must not
// crash the engine. Such values are kept as they are, shared.
package deepcopy

// Value returns a copy of v in which every map[string]any and []any is
// new; other values (strings, numbers, booleans, and any other Go value)
// are shared, as leaves that nobody modifies.
func Value(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return Object(t)
	case []any:
		if t == nil {
			return t
		}
		s := make([]any, len(t))
		for i, x := range t {
			s[i] = Value(x)
		}
		return s
	}
	return v
}

// Object is Value of a map; nil stays nil.
func Object(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		out[k] = Value(x)
	}
	return out
}
