// Package json is Kyverno's json library: json.unmarshal(string) decodes
// JSON text and json.marshal(value) encodes a value, on the json
// variable, with encoding/json as upstream.
package json

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/gavelpolicy/gavel/internal/cellib/call"
)

// VarName is the name of the library's variable.
const VarName = "json"

// JSONType is the type of the json variable.
var JSONType = types.NewOpaqueType("json.Json")

// Value returns the value of the json variable (the library has no
// state).
func Value() ref.Val { return value{} }

type value struct{}

func (value) ConvertToNative(typeDesc reflect.Type) (any, error) {
	if reflect.TypeOf(value{}).AssignableTo(typeDesc) {
		return value{}, nil
	}
	return nil, fmt.Errorf("type conversion error from '%s' to '%v'", JSONType, typeDesc)
}

func (v value) ConvertToType(typeVal ref.Type) ref.Val {
	switch typeVal {
	case JSONType:
		return v
	case types.TypeType:
		return JSONType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", JSONType, typeVal)
}

func (value) Equal(other ref.Val) ref.Val {
	if _, ok := other.(value); ok {
		return types.True
	}
	return types.MaybeNoSuchOverloadErr(other)
}

func (value) Type() ref.Type { return JSONType }
func (value) Value() any     { return value{} }

const libraryName = "kyverno.json"

// Lib declares the library.
func Lib() cel.EnvOption { return cel.Lib(lib{}) }

type lib struct{}

func (lib) LibraryName() string { return libraryName }

func (lib) ProgramOptions() []cel.ProgramOption { return nil }

func (lib) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Variable(VarName, JSONType),
		cel.Function("unmarshal", cel.MemberOverload("unmarshal_string_dyn", []*cel.Type{JSONType, types.DynType}, types.DynType, cel.BinaryBinding(unmarshal))),
		cel.Function("marshal", cel.MemberOverload("marshal_dyn_string", []*cel.Type{JSONType, types.DynType}, types.StringType, cel.BinaryBinding(marshal))),
	}
}

func unmarshal(_, text ref.Val) ref.Val {
	s, err := call.Native[string](text)
	if err != nil {
		return types.WrapErr(err)
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return types.WrapErr(err)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

func marshal(_, v ref.Val) ref.Val {
	var native any
	var err error
	switch v.Type() {
	case types.MapType:
		native, err = call.Native[map[string]any](v)
	case types.ListType:
		native, err = call.Native[[]any](v)
	default:
		native = v.Value()
	}
	if err != nil {
		return types.WrapErr(err)
	}
	data, err := json.Marshal(native)
	if err != nil {
		return types.WrapErr(err)
	}
	return types.String(data)
}
