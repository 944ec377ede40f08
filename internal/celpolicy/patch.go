package celpolicy

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"k8s.io/apiserver/pkg/cel/mutation"
	"k8s.io/apiserver/pkg/cel/mutation/dynamic"
)

// The mutations are applied as k8s.io/apiserver's patch package applies
// those of a MutatingAdmissionPolicy (its patchers are not imported: the
// package links client-go's REST client): an ApplyConfiguration's Object
// is checked for type names that do not follow its field path, then
// merged by structured-merge-diff (Schemas); a JSON patch's operations
// are built from the JSONPatch values (their value through
// structpb.Value's JSON) and applied to the object's JSON, a failed test
// operation leaving the object as it was.

var (
	jsonPatchValType = reflect.TypeOf(&mutation.JSONPatchVal{})
	structValueType  = types.JSONValueType // *structpb.Value
)

// applyConfiguration merges the Object v into obj.
func applyConfiguration(schemas Schemas, obj map[string]any, v ref.Val, guard bool) (map[string]any, error) {
	ov, ok := v.(*dynamic.ObjectVal)
	if !ok {
		return nil, fmt.Errorf("unsupported return type from ApplyConfiguration expression: %v", v.Type())
	}
	if err := ov.CheckTypeNamesMatchFieldPathNames(); err != nil {
		return nil, fmt.Errorf("type mismatch: %w", err)
	}
	patch, ok := ov.Value().(map[string]any)
	if !ok {
		return nil, fmt.Errorf("invalid return type: %T", v)
	}
	// the patch is of the object's kind
	patch["apiVersion"], patch["kind"] = obj["apiVersion"], obj["kind"]
	out, err := schemas.Apply(obj, patch, guard)
	if err != nil {
		return nil, fmt.Errorf("error applying patch: %w", err)
	}
	dropNilCollections(out)
	return out, nil
}

// dropNilCollections removes the fields whose value is a nil list or map:
// what an empty list of an Object initializer becomes (the API server's
// conversion of Object values gives no list for no element). The API
// server stores such a field as nothing (the typed object omits it), and
// that is what the next mutation and policy see there; gavel's later
// expressions would see null. The object is the merge's own copy.
func dropNilCollections(m map[string]any) {
	for k, v := range m {
		switch t := v.(type) {
		case []any:
			if t == nil {
				delete(m, k)
				continue
			}
			for _, e := range t {
				if em, ok := e.(map[string]any); ok {
					dropNilCollections(em)
				}
			}
		case map[string]any:
			if t == nil {
				delete(m, k)
				continue
			}
			dropNilCollections(t)
		}
	}
}

// applyJSONPatch applies the JSON patch v (a list of JSONPatch) to obj.
func applyJSONPatch(obj map[string]any, v ref.Val) (map[string]any, error) {
	ops, err := jsonPatchOps(v)
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return obj, nil
	}
	doc, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("failed to create JSON patch: %w", err)
	}
	patched, err := ops.Apply(doc)
	if err != nil {
		if errors.Is(err, jsonpatch.ErrTestFailed) {
			// a failed test operation: the patch is not applied
			return obj, nil
		}
		return nil, fmt.Errorf("JSON Patch: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal(patched, &out); err != nil {
		return nil, fmt.Errorf("JSON Patch: %w", err)
	}
	if out == nil {
		return nil, errors.New("JSON Patch: the patched object is not an object")
	}
	return out, nil
}

// jsonPatchOps builds the operations of a list of JSONPatch values.
func jsonPatchOps(v ref.Val) (jsonpatch.Patch, error) {
	l, ok := v.(traits.Lister)
	if !ok {
		return nil, errors.New("type mismatch: JSONPatchType.expression should evaluate to array")
	}
	var out jsonpatch.Patch
	for it := l.Iterator(); it.HasNext() == types.True; {
		native, err := it.Next().ConvertToNative(jsonPatchValType)
		if err != nil {
			return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch: %w", err)
		}
		op, ok := native.(*mutation.JSONPatchVal)
		if !ok {
			return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, got element of %T", native)
		}
		o := jsonpatch.Operation{"op": jsonString(op.Op), "path": jsonString(op.Path)}
		if op.From != "" {
			o["from"] = jsonString(op.From)
		}
		if op.Val != nil {
			if ov, ok := op.Val.(*dynamic.ObjectVal); ok {
				if err := ov.CheckTypeNamesMatchFieldPathNames(); err != nil {
					return nil, fmt.Errorf("type mismatch: %w", err)
				}
			}
			sv, err := op.Val.ConvertToNative(structValueType)
			if err != nil {
				return nil, fmt.Errorf("JSONPath valueExpression evaluated to a type that could not marshal to JSON: %w", err)
			}
			b, err := json.Marshal(sv)
			if err != nil {
				return nil, fmt.Errorf("JSONPath valueExpression evaluated to a type that could not marshal to JSON: %w", err)
			}
			o["value"] = raw(string(b))
		}
		out = append(out, o)
	}
	return out, nil
}

// jsonString is s as a JSON string: strconv.Quote's Go escapes, such as
// \x01, are not JSON, and json-patch's decoder panics on them.
func jsonString(s string) *json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	return raw(string(b))
}

func raw(s string) *json.RawMessage {
	m := json.RawMessage(s)
	return &m
}
