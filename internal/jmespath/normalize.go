package jmespath

import (
	"reflect"

	"github.com/gavelpolicy/gavel/internal/jsonnum"
)

// normalize converts a JSON-like tree to the canonical form the evaluator
// understands: numbers become float64 and typed containers become
// map[string]any / []any. The input is never modified; containers are copied
// only along the paths where a conversion happened, so a tree that is already
// canonical is returned as is after a read-only walk.
//
// The path argument is only used to start error paths; children are walked
// without building path strings, and a failing child's path is assembled
// while unwinding.
func normalize(v any, path string) (any, bool, error) {
	out, changed, err := normalizeValue(v)
	if err != nil {
		err.Path = joinPath(path, err.Path)
		return nil, false, err
	}
	return out, changed, nil
}

func joinPath(parent, child string) string {
	switch {
	case parent == "":
		return child
	case child == "" || child[0] == '[':
		return parent + child
	}
	return parent + "." + child
}

func normalizeValue(v any) (any, bool, *InputError) {
	switch t := v.(type) {
	case nil, string, bool, float64:
		return v, false, nil
	case map[string]any:
		var out map[string]any
		for k, child := range t {
			n, changed, err := normalizeValue(child)
			if err != nil {
				err.Path = joinPath(k, err.Path)
				return nil, false, err
			}
			if changed {
				if out == nil {
					out = make(map[string]any, len(t))
					for k2, v2 := range t {
						out[k2] = v2
					}
				}
				out[k] = n
			}
		}
		if out != nil {
			return out, true, nil
		}
		return v, false, nil
	case []any:
		var out []any
		for i, child := range t {
			n, changed, err := normalizeValue(child)
			if err != nil {
				err.Path = joinPath(indexPath("", i), err.Path)
				return nil, false, err
			}
			if changed {
				if out == nil {
					out = make([]any, len(t))
					copy(out, t)
				}
				out[i] = n
			}
		}
		if out != nil {
			return out, true, nil
		}
		return v, false, nil
	case []string:
		out := make([]any, len(t))
		for i, s := range t {
			out[i] = s
		}
		return out, true, nil
	case map[string]string:
		out := make(map[string]any, len(t))
		for k, s := range t {
			out[k] = s
		}
		return out, true, nil
	}
	if f, ok, err := jsonnum.Float(v); ok {
		if err != nil {
			return nil, false, &InputError{Err: err}
		}
		return f, true, nil
	}
	return normalizeReflect(v)
}

// normalizeReflect handles other slice and map types (for example
// []map[string]any). Anything else is left untouched: the evaluator can still
// read structs through reflection.
func normalizeReflect(v any) (any, bool, *InputError) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil, true, nil
		}
		out := make([]any, rv.Len())
		for i := range out {
			n, _, err := normalizeValue(rv.Index(i).Interface())
			if err != nil {
				err.Path = joinPath(indexPath("", i), err.Path)
				return nil, false, err
			}
			out[i] = n
		}
		return out, true, nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return v, false, nil
		}
		if rv.IsNil() {
			return nil, true, nil
		}
		out := make(map[string]any, rv.Len())
		iter := rv.MapRange()
		for iter.Next() {
			k := iter.Key().String()
			n, _, err := normalizeValue(iter.Value().Interface())
			if err != nil {
				err.Path = joinPath(k, err.Path)
				return nil, false, err
			}
			out[k] = n
		}
		return out, true, nil
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil, true, nil
		}
	}
	return v, false, nil
}
