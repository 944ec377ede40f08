// Package yaml is Kyverno's yaml library: yaml.parse(string) decodes YAML
// text, with sigs.k8s.io/yaml as upstream, on the yaml variable.
package yaml

import (
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/internal/cellib/call"
)

// VarName is the name of the library's variable.
const VarName = "yaml"

// YAMLType is the type of the yaml variable.
var YAMLType = types.NewOpaqueType("yaml.Yaml")

// Value returns the value of the yaml variable (the library has no
// state).
func Value() ref.Val { return value{} }

type value struct{}

func (value) ConvertToNative(typeDesc reflect.Type) (any, error) {
	if reflect.TypeOf(value{}).AssignableTo(typeDesc) {
		return value{}, nil
	}
	return nil, fmt.Errorf("type conversion error from '%s' to '%v'", YAMLType, typeDesc)
}

func (v value) ConvertToType(typeVal ref.Type) ref.Val {
	switch typeVal {
	case YAMLType:
		return v
	case types.TypeType:
		return YAMLType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", YAMLType, typeVal)
}

func (value) Equal(other ref.Val) ref.Val {
	if _, ok := other.(value); ok {
		return types.True
	}
	return types.MaybeNoSuchOverloadErr(other)
}

func (value) Type() ref.Type { return YAMLType }
func (value) Value() any     { return value{} }

const libraryName = "kyverno.yaml"

// Lib declares the library.
func Lib() cel.EnvOption { return cel.Lib(lib{}) }

type lib struct{}

func (lib) LibraryName() string { return libraryName }

func (lib) ProgramOptions() []cel.ProgramOption { return nil }

func (lib) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Variable(VarName, YAMLType),
		cel.Function("parse", cel.MemberOverload("parse_string_dyn", []*cel.Type{YAMLType, types.StringType}, types.DynType, cel.BinaryBinding(parse))),
	}
}

func parse(_, text ref.Val) ref.Val {
	s, err := call.Native[string](text)
	if err != nil {
		return types.WrapErr(err)
	}
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		return types.WrapErr(err)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}
