package mutate

import (
	"bytes"
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"sigs.k8s.io/yaml"
)

// JSONPatch is a compiled RFC 6902 patch (patchesJson6902). It is immutable
// and safe for concurrent use.
type JSONPatch struct {
	ops   []Operation
	patch jsonpatch.Patch
}

// applyOptions are the options upstream applies JSON patches with. They are
// never modified.
var applyOptions = &jsonpatch.ApplyOptions{
	SupportNegativeIndices:   true,
	AllowMissingPathOnRemove: true,
	EnsurePathExistsOnAdd:    true,
}

// CompileJSONPatch compiles a list of RFC 6902 operations given as a YAML or
// JSON document (string or []byte, as in patchesJson6902) or as a tree
// ([]any of maps). Operations are checked once: the op must be one of add,
// remove, replace, move, copy and test, path (and from for move and copy)
// must be strings, value must be present for add, replace and test.
func CompileJSONPatch(ops any) (*JSONPatch, error) {
	var data []byte
	switch t := ops.(type) {
	case string:
		data = []byte(t)
	case []byte:
		data = t
	default:
		if _, err := fromValue(ops, rootPath()); err != nil {
			return nil, err
		}
		b, err := json.Marshal(ops)
		if err != nil {
			return nil, &Error{Err: fmt.Errorf("%w: %w", ErrInvalidPatch, err)}
		}
		data = b
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &Error{Err: fmt.Errorf("%w: empty JSON patch", ErrInvalidPatch)}
	}
	if data[0] != '[' {
		// Like upstream: anything that does not start as a JSON list is YAML.
		b, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, &Error{Err: fmt.Errorf("%w: failed to convert patchesJSON6902 to JSON: %w", ErrInvalidPatch, err)}
		}
		data = b
	}
	var list []map[string]any
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, &Error{Err: fmt.Errorf("%w: a JSON patch must be a list of operations: %w", ErrInvalidPatch, err)}
	}
	compiled := &JSONPatch{ops: make([]Operation, len(list))}
	for i, raw := range list {
		op, err := checkOperation(raw)
		if err != nil {
			return nil, errAt(path{}.index(i), err)
		}
		compiled.ops[i] = op
	}
	patch, err := jsonpatch.DecodePatch(data)
	if err != nil {
		return nil, &Error{Err: fmt.Errorf("%w: %w", ErrInvalidPatch, err)}
	}
	compiled.patch = patch
	return compiled, nil
}

func checkOperation(raw map[string]any) (Operation, error) {
	var op Operation
	kind, ok := raw["op"].(string)
	if !ok {
		return op, fmt.Errorf("%w: operation has no op", ErrInvalidPatch)
	}
	op.Op = kind
	p, ok := raw["path"].(string)
	if !ok {
		return op, fmt.Errorf("%w: %s operation has no path", ErrInvalidPatch, kind)
	}
	op.Path = p
	switch kind {
	case "add", "replace", "test":
		v, ok := raw["value"]
		if !ok {
			return op, fmt.Errorf("%w: %s operation %q has no value", ErrInvalidPatch, kind, p)
		}
		op.Value = v
	case "remove":
	case "move", "copy":
		from, ok := raw["from"].(string)
		if !ok {
			return op, fmt.Errorf("%w: %s operation %q has no from", ErrInvalidPatch, kind, p)
		}
		op.From = from
	default:
		return op, fmt.Errorf("%w: unknown operation %q", ErrInvalidPatch, kind)
	}
	return op, nil
}

// Operations returns a copy of the compiled operations.
func (p *JSONPatch) Operations() []Operation {
	out := make([]Operation, len(p.ops))
	copy(out, p.ops)
	return out
}

// Mutate applies the operations and reports the outcome like upstream: a
// patch that changes nothing is Skipped ("no patches applied").
func (p *JSONPatch) Mutate(resource map[string]any) (Result, error) {
	if resource == nil {
		return Result{}, &Error{Err: fmt.Errorf("%w: the resource is nil", ErrApply)}
	}
	doc, err := json.Marshal(resource)
	if err != nil {
		return Result{}, &Error{Err: fmt.Errorf("%w: %w", ErrUnsupportedValue, err)}
	}
	out, err := p.patch.ApplyWithOptions(doc, applyOptions)
	if err != nil {
		return Result{}, p.locate(doc, err)
	}
	v, err := decodeJSON(out)
	if err != nil {
		return Result{}, &Error{Err: fmt.Errorf("%w: %w", ErrApply, err)}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return Result{}, &Error{Err: fmt.Errorf("%w: the patched resource is not a map", ErrApply)}
	}
	obj = reuseValues(resource, obj).(map[string]any)
	r := Result{Object: obj, Message: msgPatched}
	if equalValues(resource, obj) {
		r.Skipped = true
		r.Message = msgNoPatches
	}
	return r, nil
}

// locate finds the operation that failed, to report its path.
func (p *JSONPatch) locate(doc []byte, cause error) error {
	cur := doc
	for i := range p.patch {
		next, err := jsonpatch.Patch{p.patch[i]}.ApplyWithOptions(cur, applyOptions)
		if err != nil {
			return &Error{
				Path: p.ops[i].Path,
				Err:  fmt.Errorf("%w: operation %d (%s): %w", ErrApply, i, p.ops[i].Op, err),
			}
		}
		cur = next
	}
	return &Error{Err: fmt.Errorf("%w: %w", ErrApply, cause)}
}

// decodeJSON decodes a JSON document; numbers become float64 unless that
// would change their value, in which case integers stay int64.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return convertNumbers(v), nil
}

func convertNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = convertNumbers(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = convertNumbers(e)
		}
		return t
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return intValue(i)
		}
		if f, err := t.Float64(); err == nil {
			return f
		}
		return t
	}
	return v
}

// reuseValues puts back the caller's scalar values where the output holds an
// equal value at the same place, so that untouched numbers keep their Go
// type. out must be a fresh tree; it is modified in place.
func reuseValues(orig, out any) any {
	switch o := out.(type) {
	case map[string]any:
		om, ok := orig.(map[string]any)
		if !ok {
			return out
		}
		for k, v := range o {
			if ov, ok := om[k]; ok {
				o[k] = reuseValues(ov, v)
			}
		}
		return o
	case []any:
		ol, ok := orig.([]any)
		if !ok {
			return out
		}
		for i := range o {
			if i < len(ol) {
				o[i] = reuseValues(ol[i], o[i])
			}
		}
		return o
	}
	if equalScalars(orig, out) {
		return orig
	}
	return out
}

// equalValues compares two JSON-like values by JSON value.
func equalValues(a, b any) bool {
	switch at := a.(type) {
	case map[string]any:
		bt, ok := b.(map[string]any)
		if !ok || len(at) != len(bt) {
			return false
		}
		for k, av := range at {
			bv, ok := bt[k]
			if !ok || !equalValues(av, bv) {
				return false
			}
		}
		return true
	case []any:
		bt, ok := b.([]any)
		if !ok || len(at) != len(bt) {
			return false
		}
		for i := range at {
			if !equalValues(at[i], bt[i]) {
				return false
			}
		}
		return true
	case nil, string, bool, float64, int64, int, json.Number:
		return equalScalars(a, b)
	}
	an, err1 := fromValue(a, rootPath())
	bn, err2 := fromValue(b, rootPath())
	return err1 == nil && err2 == nil && equalNodes(an, bn)
}
