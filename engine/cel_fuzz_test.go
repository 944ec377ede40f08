package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
)

// FuzzCELRule compiles a validate.cel rule (expression, message
// expression, variable and celPrecondition from the input) and evaluates
// it on a resource decoded from the input: a compile error, or a result
// for every request, never a panic.
func FuzzCELRule(f *testing.F) {
	f.Add("size(variables.v) > 0", "'n: ' + object.metadata.name", "object.spec.containers", "true", []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"d"},"spec":{"containers":[{"name":"c"}]}}`))
	f.Add("params.data.x == object.metadata.name", "string(params)", "namespaceObject.metadata.name", "request.operation == 'CREATE'", []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","namespace":"default"}}`))
	f.Add("authorizer.group('').resource('pods').check('get').allowed()", "1", "oldObject", "object.x.all(a, object.x.all(b, a == b))", []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"x":[1,2,3,4,5,6,7,8,9,10]}`))
	cluster := inmem.New(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "p", "namespace": "default"}, "data": map[string]any{"x": "x"}})
	eng, err := engine.New(engine.WithClient(cluster), engine.WithAuthorizer(inmem.NewAuthorizer(inmem.AuthzRule{Allow: true, Verb: "get"})))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, expr, msgExpr, variable, pre string, raw []byte) {
		if len(expr)+len(msgExpr)+len(variable)+len(pre) > 4096 || len(raw) > 1<<16 {
			return
		}
		var obj map[string]any
		if json.Unmarshal(raw, &obj) != nil || obj == nil {
			return
		}
		pol := &api.ClusterPolicy{}
		pol.Name = "fuzz"
		pol.Spec.Rules = []api.Rule{{
			Name:             "r",
			MatchResources:   api.MatchResources{Any: []api.ResourceFilter{{ResourceDescription: api.ResourceDescription{Kinds: []string{"*"}}}}},
			CELPreconditions: []api.MatchCondition{{Name: "p", Expression: pre}},
			Validation: &api.Validation{CEL: &api.CEL{
				ParamKind:   &api.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
				ParamRef:    &api.ParamRef{Name: "p", Namespace: "default"},
				Variables:   []api.CELVariable{{Name: "v", Expression: variable}},
				Expressions: []api.CELExpression{{Expression: expr, MessageExpression: msgExpr}},
			}},
		}}
		set, err := eng.Compile(pol)
		if err != nil {
			return
		}
		for _, op := range []api.AdmissionOperation{api.Create, api.Update, api.Delete, api.Connect} {
			req := &engine.Request{Operation: op, Object: obj, OldObject: obj}
			if op == api.Delete {
				req.Object = nil
			}
			resp, err := set.Validate(context.Background(), req)
			if err != nil {
				continue
			}
			noPanic(t, resp)
		}
		if resp, err := set.Validate(context.Background(), &engine.Request{Object: obj, Background: true}); err == nil {
			noPanic(t, resp)
		}
	})
}

// noPanic fails on a rule whose evaluation panicked (runRule turns the
// panic into an error result).
func noPanic(t *testing.T, resp *engine.Response) {
	for _, p := range resp.Policies {
		for _, r := range p.Rules {
			if strings.HasPrefix(r.Message, "rule evaluation panicked") {
				t.Fatal(r.Message)
			}
		}
	}
}
