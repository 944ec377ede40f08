// Package user is Kyverno's user library: parseServiceAccount (and
// user.parseServiceAccount) reads the namespace and name of a service
// account's user name ("system:serviceaccount:NS:NAME") into a
// user.ServiceAccount with the fields Namespace and Name, both empty for
// any other user name.
package user

import (
	"reflect"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/gavelpolicy/gavel/internal/cellib/call"
	"github.com/gavelpolicy/gavel/internal/cellib/versions"
)

// ServiceAccountType is the type parseServiceAccount returns.
var ServiceAccountType = types.NewObjectType("user.ServiceAccount")

// ServiceAccount is a parsed service account user name. Expressions read
// its Go field names (Name, Namespace), as upstream's.
type ServiceAccount struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

const (
	libraryName = "kyverno.user"
	saPrefix    = "system:serviceaccount:"
)

// Lib declares the library at version v (versions.Latest).
func Lib(v *version.Version) cel.EnvOption { return cel.Lib(&lib{version: v}) }

type lib struct{ version *version.Version }

func (*lib) LibraryName() string { return libraryName }

func (*lib) ProgramOptions() []cel.ProgramOption { return nil }

func (l *lib) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{ext.NativeTypes(reflect.TypeFor[ServiceAccount]()), l.declare}
}

// declare adds the functions, whose binding converts with the adapter of
// the environment the native type extended.
func (l *lib) declare(env *cel.Env) (*cel.Env, error) {
	adapter := env.CELTypeAdapter()
	parse := func(arg ref.Val) ref.Val {
		u, err := call.Native[string](arg)
		if err != nil {
			return types.WrapErr(err)
		}
		var sa ServiceAccount
		if rest, ok := strings.CutPrefix(u, saPrefix); ok {
			if ns, name, ok := strings.Cut(rest, ":"); ok {
				sa.Namespace, sa.Name = ns, name
			}
		}
		return adapter.NativeToValue(sa)
	}
	decl := func(suffix string) cel.FunctionOpt {
		return cel.Overload("parse_service_account_string_"+suffix, []*cel.Type{types.StringType}, ServiceAccountType, cel.UnaryBinding(parse))
	}
	opts := []cel.EnvOption{cel.Function("parseServiceAccount", decl("non_prefixed"))}
	if versions.HasCamelCase(l.version) {
		opts = append(opts, cel.Function("user.parseServiceAccount", decl("prefixed")))
	}
	return env.Extend(opts...)
}
