package call

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

func TestJSONArgs(t *testing.T) {
	adapter := types.DefaultTypeAdapter
	object := adapter.NativeToValue(map[string]any{
		"kind":     "ConfigMap",
		"metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "1"}},
		"data":     map[string]any{"n": 3.5, "list": []any{"a", true, nil}},
	})
	wantObject := map[string]any{
		"kind":     "ConfigMap",
		"metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "1"}},
		"data":     map[string]any{"n": 3.5, "list": []any{"a", true, nil}},
	}
	tests := []struct {
		name    string
		arg     ref.Val
		convert func([]ref.Val, int) (any, ref.Val)
		want    any    // the converted value (for JSONValue: its JSON)
		wantErr string // upstream's error text
	}{
		{
			name:    "object",
			arg:     object,
			convert: func(a []ref.Val, i int) (any, ref.Val) { return JSONObject(a, i) },
			want:    wantObject,
		},
		{
			name:    "object from a CEL map with int values",
			arg:     adapter.NativeToValue(map[string]any{"replicas": int64(2)}),
			convert: func(a []ref.Val, i int) (any, ref.Val) { return JSONObject(a, i) },
			want:    map[string]any{"replicas": float64(2)},
		},
		{
			name:    "object, not a map",
			arg:     types.True,
			convert: func(a []ref.Val, i int) (any, ref.Val) { return JSONObject(a, i) },
			wantErr: "invalid arg 1: type conversion error from bool to '*structpb.Struct'",
		},
		{
			name:    "objects",
			arg:     adapter.NativeToValue([]any{map[string]any{"a": "b"}, map[string]any{}}),
			convert: func(a []ref.Val, i int) (any, ref.Val) { return JSONObjects(a, i) },
			want:    []map[string]any{{"a": "b"}, {}},
		},
		{
			name:    "objects, not a list",
			arg:     types.True,
			convert: func(a []ref.Val, i int) (any, ref.Val) { return JSONObjects(a, i) },
			wantErr: "invalid arg 1: type conversion error from bool to '[]*structpb.Struct'",
		},
		{
			name:    "objects, an element not a map",
			arg:     adapter.NativeToValue([]any{"x"}),
			convert: func(a []ref.Val, i int) (any, ref.Val) { return JSONObjects(a, i) },
			wantErr: "invalid arg 1: unsupported native conversion from string to '*structpb.Struct'",
		},
		{
			name:    "value",
			arg:     object,
			convert: jsonValueText,
			want:    `{"data":{"list":["a",true,null],"n":3.5},"kind":"ConfigMap","metadata":{"labels":{"x":"1"},"name":"a"}}`,
		},
		{
			name:    "value, a string",
			arg:     types.String("x"),
			convert: jsonValueText,
			want:    `"x"`,
		},
		{
			name:    "value, bytes as base64",
			arg:     types.Bytes("x"),
			convert: jsonValueText,
			want:    `"eA=="`,
		},
		{
			name:    "value, not JSON",
			arg:     types.NewErr("boom"),
			convert: jsonValueText,
			wantErr: "invalid arg 1: boom",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, bad := tt.convert([]ref.Val{types.String("self"), tt.arg}, 1)
			if tt.wantErr != "" {
				if bad == nil || bad.(*types.Err).Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", bad, tt.wantErr)
				}
				return
			}
			if bad != nil {
				t.Fatalf("unexpected error %v", bad)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

// jsonValueText converts with JSONValue and returns the value's JSON.
func jsonValueText(args []ref.Val, i int) (any, ref.Val) {
	v, bad := JSONValue(args, i)
	if bad != nil {
		return nil, bad
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, types.NewErr("marshal: %v", err)
	}
	return string(b), nil
}
