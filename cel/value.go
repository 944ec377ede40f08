package cel

import "math"

// FromJSON returns v, a JSON-like tree whose numbers are float64 (as
// encoding/json and gavel's canonical objects hold them), in the form the
// API server hands to CEL: integral numbers within the int64 range as
// int64, others as float64. Subtrees without such numbers are shared
// with v, which is never modified; a tree without any is v itself.
func FromJSON(v any) any {
	out, _ := fromJSON(v, 0)
	return out
}

// FromJSONMap is FromJSON for an object.
func FromJSONMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out, _ := fromJSON(m, 0)
	return out.(map[string]any)
}

// maxDepth bounds the walk; deeper trees are left as they are (CEL reads
// their numbers as doubles).
const maxDepth = 1000

func fromJSON(v any, depth int) (any, bool) {
	if depth > maxDepth {
		return v, false
	}
	switch t := v.(type) {
	case float64:
		if t == math.Trunc(t) && t >= -9.223372036854775e18 && t < 9.223372036854775e18 {
			return int64(t), true
		}
	case map[string]any:
		var out map[string]any
		for k, c := range t {
			nc, changed := fromJSON(c, depth+1)
			if !changed {
				continue
			}
			if out == nil {
				out = make(map[string]any, len(t))
				for k2, c2 := range t {
					out[k2] = c2
				}
			}
			out[k] = nc
		}
		if out != nil {
			return out, true
		}
	case []any:
		var out []any
		for i, c := range t {
			nc, changed := fromJSON(c, depth+1)
			if !changed {
				continue
			}
			if out == nil {
				out = append([]any(nil), t...)
			}
			out[i] = nc
		}
		if out != nil {
			return out, true
		}
	}
	return v, false
}
