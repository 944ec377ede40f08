// Package transform is Kyverno's transform library: listObjToMap(keys,
// values, keyField, valueField) (and transform.listObjToMap) makes a map
// from two lists of objects of the same length: the i-th key object's
// keyField (a string) maps to the i-th value object's valueField (null
// when absent). Unlike upstream, whose conversion panics on them,
// elements that are not objects are an error.
package transform

import (
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/gavelpolicy/gavel/internal/cellib/versions"
)

const libraryName = "kyverno.transform"

// Lib declares the library at version v (versions.Latest).
func Lib(v *version.Version) cel.EnvOption { return cel.Lib(&lib{version: v}) }

type lib struct{ version *version.Version }

func (*lib) LibraryName() string { return libraryName }

func (*lib) ProgramOptions() []cel.ProgramOption { return nil }

func (l *lib) CompileOptions() []cel.EnvOption {
	decl := func(suffix string) cel.FunctionOpt {
		return cel.Overload("list_of_object_to_map_"+suffix,
			[]*cel.Type{types.ListType, types.ListType, types.StringType, types.StringType}, types.MapType,
			cel.FunctionBinding(listObjToMap))
	}
	opts := []cel.EnvOption{cel.Function("listObjToMap", decl("non_prefixed"))}
	if versions.HasCamelCase(l.version) {
		opts = append(opts, cel.Function("transform.listObjToMap", decl("prefixed")))
	}
	return opts
}

func listObjToMap(args ...ref.Val) ref.Val {
	if len(args) < 4 {
		return types.WrapErr(fmt.Errorf("listObjToMap must take 4 arguments, %d were passed", len(args)))
	}
	keys, ok1 := args[0].(traits.Lister)
	vals, ok2 := args[1].(traits.Lister)
	keyName, ok3 := args[2].(types.String)
	valueName, ok4 := args[3].(types.String)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return types.WrapErr(fmt.Errorf("listObjToMap takes two lists and two strings"))
	}
	n, m := keys.Size().(types.Int), vals.Size().(types.Int)
	if n != m {
		return types.WrapErr(fmt.Errorf("listObjToMap must take lists of equal length. list1: %d, list2: %d", n, m))
	}
	out := make(map[ref.Val]ref.Val, int(n))
	for i := types.Int(0); i < n; i++ {
		k, ok := keys.Get(i).(traits.Mapper)
		if !ok {
			return types.WrapErr(fmt.Errorf("object cannot be handled as a map string to any in the key object list"))
		}
		key, found := k.Find(keyName)
		if _, isString := key.(types.String); !found || !isString {
			return types.WrapErr(fmt.Errorf("the passed key name cannot be handled as a string in the key object list"))
		}
		v, ok := vals.Get(i).(traits.Mapper)
		if !ok {
			return types.WrapErr(fmt.Errorf("object cannot be handled as a map string to any in the value object list"))
		}
		value, found := v.Find(valueName)
		switch {
		case !found:
			value = types.NullValue
		case types.IsUnknownOrError(value):
			return value
		}
		out[key] = value
	}
	return types.NewRefValMap(types.DefaultTypeAdapter, out)
}
