package celpolicy

import (
	"context"
	"errors"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/internal/cel"
)

func vals(exprs ...string) []admissionregistrationv1.Validation {
	out := make([]admissionregistrationv1.Validation, len(exprs))
	for i, e := range exprs {
		expr, msg, _ := strings.Cut(e, " | ")
		out[i] = admissionregistrationv1.Validation{Expression: expr, Message: msg}
	}
	return out
}

func TestEvaluate(t *testing.T) {
	kyverno, err := cel.NewEnv(EnvOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	apiserver, err := cel.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ignore := admissionregistrationv1.Ignore
	obj := map[string]any{"metadata": map[string]any{"name": "web", "labels": map[string]any{"team": "a"}}, "spec": map[string]any{"replicas": 3.0}}
	tests := []struct {
		name   string
		sem    Semantics
		spec   Spec
		status Status
		msg    string
		index  int
		audits map[string]string
	}{
		{"pass with audit annotations", Kyverno, Spec{Validations: vals("object.spec.replicas == 3"),
			AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{Key: "team", ValueExpression: "string(object.metadata.labels.team)"}, {Key: "empty", ValueExpression: "''"}}},
			Pass, "", 0, map[string]string{"team": "a"}},
		{"first failure decides (Kyverno)", Kyverno, Spec{Validations: vals("true", "false | second", "object.nope == 1 | third")}, Fail, "second", 1, nil},
		{"first error decides (Kyverno)", Kyverno, Spec{Validations: vals("object.nope == 1 | first", "false | second")}, Error, "no such key: nope", 0, nil},
		{"first failing decides (API server)", APIServer, Spec{Validations: vals("false | first", "object.nope == 1 | second")}, Fail, "first", 0, nil},
		{"errors before later failures (API server)", APIServer, Spec{Validations: vals("object.nope == 1", "false | second")}, Error, "expression 'object.nope == 1' resulted in error: no such key: nope", 0, nil},
		{"default message (Kyverno)", Kyverno, Spec{Validations: vals("false")}, Fail, "CEL expression validation failed at index 0", 0, nil},
		{"default message (API server)", APIServer, Spec{Validations: vals(" false ")}, Fail, "failed expression: false", 0, nil},
		{"message expression", Kyverno, Spec{Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "static",
			MessageExpression: "'replicas: ' + string(object.spec.replicas)"}}}, Fail, "replicas: 3", 0, nil},
		{"message expression error (Kyverno)", Kyverno, Spec{Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "static",
			MessageExpression: "string(object.nope)"}}}, Fail, "failed to evaluate message expression: no such key: nope", 0, nil},
		{"message expression error falls back (API server)", APIServer, Spec{Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "static",
			MessageExpression: "string(object.nope)"}}}, Fail, "static", 0, nil},
		{"no overload in a message expression (Kyverno)", Kyverno, Spec{Validations: []admissionregistrationv1.Validation{{Expression: "false",
			MessageExpression: "'labels: ' + string(object.metadata.labels)"}}}, Fail, "failed to evaluate message expression: no such overload: string(map)", 0, nil},
		{"message as written (Kyverno)", Kyverno, Spec{Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "no host ports. "}}},
			Fail, "no host ports. ", 0, nil},
		{"message trimmed (API server)", APIServer, Spec{Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "no host ports. "}}},
			Fail, "no host ports.", 0, nil},
		{"multi-line message expression falls back", APIServer, Spec{Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "static",
			MessageExpression: "'a\\nb'"}}}, Fail, "static", 0, nil},
		{"match condition false", Kyverno, Spec{MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "false"}},
			Validations: vals("false")}, NoMatch, "", 0, nil},
		{"match condition error", Kyverno, Spec{MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "object.nope == 1"},
			{Name: "b", Expression: "object.nada == 1"}}, Validations: vals("false")}, EvalError, "no such key: nope; no such key: nada", 0, nil},
		{"match condition error ignored", Kyverno, Spec{FailurePolicy: &ignore, MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "object.nope == 1"}},
			Validations: vals("false")}, NoMatch, "", 0, nil},
		{"false condition wins over errors", APIServer, Spec{MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "object.nope == 1"},
			{Name: "b", Expression: "false"}}, Validations: vals("false")}, NoMatch, "", 0, nil},
		{"orValue on a value", Kyverno, Spec{Validations: vals("object.metadata.labels.orValue({}).team == 'a'")}, Pass, "", 0, nil},
		{"variables in order", Kyverno, Spec{Variables: []admissionregistrationv1.Variable{{Name: "r", Expression: "object.spec.replicas"},
			{Name: "twice", Expression: "variables.r * 2"}}, Validations: vals("variables.twice == 6")}, Pass, "", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := kyverno
			if tt.sem == APIServer {
				env = apiserver
			}
			v, errs := Compile(env, &tt.spec, tt.sem, Options{}, field.NewPath("spec"))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			o := v.Evaluate(context.Background(), &cel.Input{Object: obj}, nil)
			if o.Status != tt.status || o.Message != tt.msg || o.Index != tt.index {
				t.Errorf("got %v %q at %d (%v), want %v %q at %d", o.Status, o.Message, o.Index, o.Err, tt.status, tt.msg, tt.index)
			}
			if len(o.AuditAnnotations) != len(tt.audits) {
				t.Errorf("audit annotations %v, want %v", o.AuditAnnotations, tt.audits)
			}
			for k, w := range tt.audits {
				if o.AuditAnnotations[k] != w {
					t.Errorf("audit annotation %s = %q, want %q", k, o.AuditAnnotations[k], w)
				}
			}
			if (o.Status == Error || o.Status == EvalError) && o.Err == nil {
				t.Error("an error outcome without its error")
			}
		})
	}
}

func TestEvaluateCostLimit(t *testing.T) {
	env, err := cel.NewEnv(EnvOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := Compile(env, &Spec{Validations: vals("[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, a+b+c > 0)))")},
		Kyverno, Options{}, field.NewPath("spec"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	o := v.Evaluate(context.Background(), &cel.Input{Budget: 100}, nil)
	if o.Status != Error || !errors.Is(o.Err, cel.ErrCostLimit) {
		t.Errorf("got %v %v, want an error matching cel.ErrCostLimit", o.Status, o.Err)
	}
}

func TestLazyCompile(t *testing.T) {
	env, err := cel.NewEnv(EnvOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	// a lazy body still reports its errors when compiled
	if _, errs := Compile(env, &Spec{Validations: vals("object.x +")}, Kyverno, Options{Lazy: true}, field.NewPath("spec")); len(errs) == 0 {
		t.Error("a syntax error of a lazy body is not reported")
	}
	v, errs := Compile(env, &Spec{Validations: vals("object.x == 1")}, Kyverno, Options{Lazy: true}, field.NewPath("spec"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if o := v.Evaluate(context.Background(), &cel.Input{Object: map[string]any{"x": 1.0}}, nil); o.Status != Pass {
		t.Errorf("got %v %q", o.Status, o.Message)
	}
}

// TestReads checks what a body reads: the namespace, request and params
// its expressions read (conditions, validations, messages, audit
// annotations), through the variables they read, from the checked
// expressions.
func TestReads(t *testing.T) {
	env, err := cel.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	v := func(name, expr string) admissionregistrationv1.Variable {
		return admissionregistrationv1.Variable{Name: name, Expression: expr}
	}
	tests := []struct {
		name string
		spec Spec
		want Reads
	}{
		{"names in literals and fields", Spec{Validations: vals(`object.request == "namespaceObject params"`)}, Reads{}},
		{"an unused variable", Spec{Variables: []admissionregistrationv1.Variable{v("ns", "namespaceObject.metadata.name")},
			Validations: vals(`object.metadata.name != ""`)}, Reads{}},
		{"through a variable", Spec{Variables: []admissionregistrationv1.Variable{v("ns", "namespaceObject.metadata.name"),
			v("user", "request.userInfo.username"), v("both", "variables.user + variables.ns")},
			Validations: vals(`variables.both != ""`)}, Reads{Namespace: true, Request: true}},
		{"a message expression", Spec{Validations: []admissionregistrationv1.Validation{{Expression: "false",
			MessageExpression: `"by " + request.userInfo.username`}}}, Reads{Request: true}},
		{"an audit annotation", Spec{Validations: vals("true"), AuditAnnotations: []admissionregistrationv1.AuditAnnotation{
			{Key: "k", ValueExpression: `string(params.x)`}}}, Reads{Params: true}},
		{"a match condition", Spec{MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "a",
			Expression: `namespaceObject.metadata.name == "prod"`}}, Validations: vals("true")}, Reads{Namespace: true}},
		{"a shadowing comprehension variable", Spec{Validations: vals(`[1].all(request, request > 0)`)}, Reads{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, errs := Compile(env, &tt.spec, APIServer, Options{Params: true}, field.NewPath("spec"))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if got := b.Reads(); got != tt.want {
				t.Errorf("reads %+v, want %+v", got, tt.want)
			}
		})
	}
}
