package cel_test

import (
	"context"
	"slices"
	"testing"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"

	"github.com/gavelpolicy/gavel/internal/cel"
)

// readNames are the variables TestReads asks Program.Reads about.
var readNames = []string{cel.ObjectVar, cel.OldObjectVar, cel.RequestVar, cel.ParamsVar, cel.NamespaceVar,
	cel.AuthorizerVar, cel.VariablesVar, "resource", "json", "http", "team"}

// TestReads checks what Program.Reads finds on checked expressions: names
// in literals, fields that have a variable's name, comprehension variables
// that shadow one, macros and the variables.<x> an expression reads
// (through which it reads what x reads, and only that).
func TestReads(t *testing.T) {
	e, err := cel.NewEnv(cel.WithLibraries(cel.ValidatingPolicyLibraries), cel.WithVariable("team", celgo.StringType))
	if err != nil {
		t.Fatal(err)
	}
	vars := [][2]string{
		{"name", `object.metadata.name`},
		{"user", `request.userInfo.username`},
		{"both", `variables.user + namespaceObject.metadata.name`},
		{"limit", `params.limit`},
		{"cms", `resource.List("v1", "configmaps", "default")`},
	}
	tests := []struct {
		name, expr string
		kind       cel.Kind
		want       []string
	}{
		{"literals", `"object.request.namespaceObject params variables.name" != ""`, cel.Validation, nil},
		{"fields named as variables", `object.request.namespaceObject == "params" && has(object.variables.name)`, cel.Validation,
			[]string{cel.ObjectVar}},
		{"a field of a variable", `variables.name == "web"`, cel.Validation, []string{cel.VariablesVar, cel.ObjectVar}},
		{"only the variables read", `variables.user == "alice"`, cel.Validation, []string{cel.VariablesVar, cel.RequestVar}},
		{"variables of variables", `variables.both != ""`, cel.Validation,
			[]string{cel.VariablesVar, cel.RequestVar, cel.NamespaceVar}},
		{"has on a variable", `has(variables.limit)`, cel.Validation, []string{cel.VariablesVar, cel.ParamsVar}},
		{"the object through dyn", `dyn(variables).user == "alice"`, cel.Validation,
			[]string{cel.VariablesVar, cel.ObjectVar, cel.RequestVar, cel.NamespaceVar, cel.ParamsVar, "resource"}},
		{"optional field", `variables.?limit.orValue(1) == 1`, cel.Validation, []string{cel.VariablesVar, cel.ParamsVar}},
		{"the variables object as a whole", `type(variables) != int`, cel.Validation,
			[]string{cel.VariablesVar, cel.ObjectVar, cel.RequestVar, cel.NamespaceVar, cel.ParamsVar, "resource"}},
		{"a library host through a variable", `variables.cms.items.size() > 0`, cel.Validation, []string{cel.VariablesVar, "resource"}},
		{"comprehension variable shadows", `[1, 2].all(object, object > 0) && [3].exists(request, request == 3)`, cel.Validation, nil},
		{"outside the comprehension", `[1].exists(request, request == 1) && request.operation == "CREATE"`, cel.Validation,
			[]string{cel.RequestVar}},
		{"an outer variable inside", `object.spec.containers.all(c, c.name != oldObject.metadata.name)`, cel.Validation,
			[]string{cel.ObjectVar, cel.OldObjectVar}},
		{"a global past the shadow", `[1].all(object, .object != null)`, cel.Validation, []string{cel.ObjectVar}},
		{"two-variable comprehension", `object.metadata.labels.all(k, params, k != "" && params != "") && [1].all(i, v, v > params.min)`,
			cel.Validation, []string{cel.ObjectVar, cel.ParamsVar}},
		{"map and filter", `object.spec.containers.map(request, request.name).filter(n, n != "").size() > 0`, cel.Validation,
			[]string{cel.ObjectVar}},
		{"cel.bind", `cel.bind(namespaceObject, object.metadata.namespace, namespaceObject + "x") != ""`, cel.Validation,
			[]string{cel.ObjectVar}},
		{"cel.bind of an outer variable", `cel.bind(ns, namespaceObject, ns.metadata.name) != ""`, cel.Validation,
			[]string{cel.NamespaceVar}},
		{"type names", `type(object) == map && int(object.spec.replicas) > 1`, cel.Validation, []string{cel.ObjectVar}},
		{"authorizer", `authorizer.group("").resource("pods").check("get").allowed()`, cel.Validation, []string{cel.AuthorizerVar}},
		{"authorizer.requestResource", `authorizer.requestResource.check("get").allowed()`, cel.Validation, []string{cel.AuthorizerVar}},
		{"library variables", `json.unmarshal(resource.Get("v1", "configmaps", "a", "b").data.x).size() > 0`, cel.Validation,
			[]string{"resource", "json"}},
		{"a declared variable", `team == "a"`, cel.Validation, []string{"team"}},
		{"map and list literals", `[oldObject].size() == 1 && {"a": params}.size() == 1`, cel.Validation,
			[]string{cel.OldObjectVar, cel.ParamsVar}},
		{"an apply configuration", `Object{spec: Object.spec{replicas: int(params.replicas)}}`, cel.ApplyConfiguration,
			[]string{cel.ParamsVar}},
		{"message expression", `"denied: " + request.name`, cel.MessageExpression, []string{cel.RequestVar}},
	}
	c := e.NewCompiler(true)
	for _, v := range vars {
		if _, err := c.AddVariable(v[0], v[1]); err != nil {
			t.Fatalf("variable %s: %v", v[0], err)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := c.Compile(tt.expr, tt.kind)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range readNames {
				if p.Reads(n) {
					got = append(got, n)
				}
			}
			want := append([]string(nil), tt.want...)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("reads %v, want %v", got, want)
			}
		})
	}
}

// sharedIn tells whether the variable expr of two Compilers of e is
// shared through one Scope: the second Evaluation, on an object changed
// in place (which the Scope's contract rules out, and so shows what it
// keeps), sees the first one's value.
func sharedIn(t *testing.T, e *cel.Env, expr string, in *cel.Input) bool {
	t.Helper()
	var s cel.Scope
	obj := map[string]any{"metadata": map[string]any{"name": "a"}}
	in.Object = obj
	var got [2]string
	for i := range got {
		c := e.NewCompiler(false)
		if _, err := c.AddVariable("v", expr); err != nil {
			t.Fatal(err)
		}
		p, err := c.Compile("string(variables.v)", cel.MessageExpression)
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.NewEvaluation(context.Background(), in, &s).Eval(p)
		if err != nil {
			t.Fatal(err)
		}
		got[i] = string(v.(types.String))
		obj["metadata"] = map[string]any{"name": "b"}
	}
	return got[0] == got[1]
}

// TestSharedVariables checks which variables a Scope shares: those that
// read nothing but object and oldObject (and the libraries' constant
// variables), as their checked expression tells.
func TestSharedVariables(t *testing.T) {
	pureEnv, err := cel.NewEnv(cel.WithPureEnvOptions(celgo.Variable("extra", celgo.StringType)),
		cel.WithVariable("team", celgo.StringType))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  *cel.Env
		expr string
		want bool
	}{
		{"object", env(t), `object.metadata.name`, true},
		{"names in literals", env(t), `object.metadata.name + "request params variables"`, true},
		{"a field named request", env(t), `object.metadata.name + string(has(object.request))`, true},
		{"a shadowing comprehension variable", env(t), `object.metadata.name + string([1].all(request, request > 0))`, true},
		{"request", env(t), `object.metadata.name + string(request.operation)`, false},
		{"authorizer", env(t), `object.metadata.name + string(authorizer.group("").resource("pods").check("get").allowed())`, false},
		{"a WithVariable variable", pureEnv, `object.metadata.name + team`, false},
		{"a variable of WithPureEnvOptions", pureEnv, `object.metadata.name + extra`, false},
		{"the json library", libEnv(t), `object.metadata.name + json.marshal({"a": 1})`, true},
		{"the resource library", libEnv(t), `object.metadata.name + string(resource.Get("v1", "configmaps", "prod", "a").size())`, false},
		{"the clock", libEnv(t), `object.metadata.name + string(time.now() > timestamp("2020-01-01T00:00:00Z"))`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &cel.Input{Request: map[string]any{"operation": "CREATE"}, Authorizer: allowList{},
				Extra: map[string]any{"team": "t", "extra": "x"}, Libraries: testLibraries()}
			if got := sharedIn(t, tt.env, tt.expr, in); got != tt.want {
				t.Errorf("shared %v, want %v", got, tt.want)
			}
		})
	}
}
