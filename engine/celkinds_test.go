package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
)

// decodeAll decodes the policies of a YAML stream.
func decodeAll(t *testing.T, src string) []api.PolicyObject {
	t.Helper()
	docs, err := api.ReadDocuments(strings.NewReader(src), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []api.PolicyObject
	for _, d := range docs {
		p, err := api.DecodePolicy(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

const vpolHead = `apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: p
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
`

func TestCompileCELKindErrors(t *testing.T) {
	tests := []struct {
		name, src string
		// want are substrings of the error
		want []string
	}{
		{"unknown function", vpolHead + `  validations:
  - expression: "object.nosuch() == 1"`, []string{"spec.validations[0].expression", "undeclared reference to 'nosuch'"}},
		{"not a bool", vpolHead + `  validations:
  - expression: "'text'"`, []string{"spec.validations[0].expression", "must evaluate to bool"}},
		{"message expression not a string", vpolHead + `  validations:
  - expression: "true"
    messageExpression: "1"`, []string{"spec.validations[0].messageExpression", "must evaluate to string"}},
		{"authorizer is not declared", vpolHead + `  validations:
  - expression: "authorizer.group('').resource('pods').check('get').allowed()"`, []string{"undeclared reference to 'authorizer'"}},
		{"variable error", vpolHead + `  variables:
  - name: x
    expression: "object.spec +"
  validations:
  - expression: "true"`, []string{"spec.variables[0].expression", "Syntax error"}},
		{"duplicate match condition", vpolHead + `  matchConditions:
  - {name: a, expression: "true"}
  - {name: a, expression: "true"}
  validations:
  - expression: "true"`, []string{"spec.matchConditions[1].name: Duplicate value"}},
		{"deny and warn", vpolHead + `  validationActions: [Deny, Warn]
  validations:
  - expression: "true"`, []string{"spec.validationActions", "must not contain both Deny and Warn"}},
		{"unknown action", vpolHead + `  validationActions: [Block]
  validations:
  - expression: "true"`, []string{`spec.validationActions[0]: Unsupported value: "Block"`}},
		{"unknown mode", vpolHead + `  evaluation:
    mode: HTTP
  validations:
  - expression: "true"`, []string{`spec.evaluation.mode: Unsupported value: "HTTP"`}},
		{"no validations", vpolHead, []string{"spec.validations: Required value"}},
		{"bad operation", strings.Replace(vpolHead, "[CREATE]", "[CREATE, PATCH]", 1) + `  validations:
  - expression: "true"`, []string{`spec.matchConstraints.resourceRules[0].operations: Unsupported value: "PATCH"`}},
		{"vap without resource rules", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: v}
spec:
  validations:
  - expression: "true"`, []string{"spec.matchConstraints.resourceRules: Required value"}},
		{"vap params undeclared", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: v}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "params.x == 1"`, []string{"undeclared reference to 'params'"}},
		{"binding with two param references", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: b}
spec:
  policyName: v
  validationActions: [Deny]
  paramRef:
    name: a
    selector: {matchLabels: {a: b}}`, []string{"spec.paramRef", "exactly one of name and selector"}},
	}
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := eng.Compile(decodeAll(t, tt.src)...)
			var ce *engine.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *CompileError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

const vapSrc = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: v}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
  - expression: "false"
    message: never
`

const bindingSrc = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: b}
spec:
  policyName: v
  validationActions: [Audit]
`

// TestBindingsAttach checks that bindings join the policy they name
// whichever call makes the set, and that the set keeps them.
func TestBindingsAttach(t *testing.T) {
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	pols := decodeAll(t, vapSrc+"---\n"+bindingSrc)
	vap, err := eng.CompilePolicy(pols[0])
	if err != nil {
		t.Fatal(err)
	}
	binding, err := eng.CompilePolicy(pols[1])
	if err != nil {
		t.Fatal(err)
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "n"}}
	for _, tt := range []struct {
		name   string
		set    *engine.PolicySet
		action api.ValidationFailureAction
	}{
		{"unbound", eng.NewPolicySet(vap), api.Enforce},
		{"bound", eng.NewPolicySet(binding, vap), api.Audit},
		{"again from a set", eng.NewPolicySet(eng.NewPolicySet(vap, binding).Policies()...), api.Audit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if n := len(tt.set.Policies()); n != 1 {
				t.Fatalf("%d policies, want 1 (bindings are attached)", n)
			}
			resp, err := tt.set.Validate(context.Background(), &engine.Request{Object: cm})
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Policies) != 1 || len(resp.Policies[0].Rules) != 1 {
				t.Fatalf("got %+v", resp.Policies)
			}
			if got := resp.Policies[0].FailureAction; got != tt.action {
				t.Errorf("failure action %s, want %s", got, tt.action)
			}
			if resp.Policies[0].Rules[0].Status != engine.StatusFail {
				t.Errorf("status %s, want fail", resp.Policies[0].Rules[0].Status)
			}
		})
	}
}

// TestValidatingPolicyLibraries checks that ValidatingPolicy expressions
// reach Kyverno's CEL libraries, their hosts taken from the engine's: the
// resource library reads the engine's Client.
func TestValidatingPolicyLibraries(t *testing.T) {
	cluster := inmem.New(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "tiers", "namespace": "shop"}, "data": map[string]any{"gold": "true"}})
	eng, err := engine.New(engine.WithClient(cluster))
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(decodeAll(t, vpolHead+`  validations:
  - expression: "object.metadata.labels.tier in resource.Get('v1', 'configmaps', 'shop', 'tiers').data"
    messageExpression: "'tier ' + object.metadata.labels.tier + ' unknown'"`)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		tier string
		want engine.Status
	}{{"gold", engine.StatusPass}, {"tin", engine.StatusFail}} {
		pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "a", "namespace": "shop",
			"labels": map[string]any{"tier": tt.tier}}}
		resp, err := set.Validate(context.Background(), &engine.Request{Object: pod})
		if err != nil {
			t.Fatal(err)
		}
		if r := resp.Policies[0].Rules[0]; r.Status != tt.want {
			t.Errorf("tier %s: %s %q, want %s", tt.tier, r.Status, r.Message, tt.want)
		}
	}
	// without a Client the library is not configured: an error result
	bare, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	set, err = bare.Compile(decodeAll(t, vpolHead+`  validations:
  - expression: "resource.Get('v1', 'configmaps', 'shop', 'tiers').data.gold == 'true'"`)...)
	if err != nil {
		t.Fatal(err)
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "a", "namespace": "shop"}}
	resp, err := set.Validate(context.Background(), &engine.Request{Object: pod})
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.Policies[0].Rules[0]; r.Status != engine.StatusError || !errors.Is(r.Err, engine.ErrNotConfigured) {
		t.Errorf("without a Client: %s %v, want an error matching ErrNotConfigured", r.Status, r.Err)
	}
}

func TestCELKindClientKinds(t *testing.T) {
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(decodeAll(t, vpolHead+`  validations:
  - expression: "namespaceObject.metadata.name != 'default'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: v}
spec:
  paramKind: {apiVersion: example.com/v1, kind: Limits}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "params != null"`)...)
	if err != nil {
		t.Fatal(err)
	}
	kinds, all := set.ClientKinds()
	if all || strings.Join(kinds, ",") != "Limits,Namespace" {
		t.Errorf("got %v %v, want [Limits Namespace]", kinds, all)
	}
}

// TestValidatePayloadOnlyJSONMode checks that ValidatePayload evaluates
// the JSON-mode policies only, and that Validate runs them on objects.
func TestValidatePayloadOnlyJSONMode(t *testing.T) {
	eng, err := engine.New(engine.WithClient(inmem.New()))
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(decodeAll(t, vpolHead+`  validations:
  - expression: "false"
---
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: json}
spec:
  evaluation: {mode: JSON}
  validations:
  - expression: "object.size > 1"
    message: too small`)...)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := set.ValidatePayload(context.Background(), map[string]any{"size": 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Policies) != 1 || resp.Policies[0].Policy.Source().GetName() != "json" {
		t.Fatalf("got %+v, want the JSON policy only", resp.Policies)
	}
	if r := resp.Policies[0].Rules[0]; r.Status != engine.StatusFail || r.Message != "too small" {
		t.Errorf("got %s %q", r.Status, r.Message)
	}
	if _, err := set.ValidatePayload(context.Background(), nil); !errors.Is(err, engine.ErrNoObject) {
		t.Errorf("nil payload: %v, want ErrNoObject", err)
	}
}

// TestCELKindBackground checks the evaluation switches: a policy with
// background disabled is not evaluated in scans, one with admission
// disabled not at admission.
func TestCELKindBackground(t *testing.T) {
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(vpolHead, "spec:\n", "spec:\n  evaluation:\n    background: {enabled: false}\n", 1) + `  validations:
  - expression: "false"`
	set, err := eng.Compile(decodeAll(t, src)...)
	if err != nil {
		t.Fatal(err)
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "a", "namespace": "n"}}
	for _, bg := range []bool{false, true} {
		resp, err := set.Validate(context.Background(), &engine.Request{Object: pod, Background: bg})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(resp.Policies[0].Rules), map[bool]int{false: 1, true: 0}[bg]; got != want {
			t.Errorf("background %v: %d results, want %d", bg, got, want)
		}
	}
}

// TestCELExceptionBindsWhatItReads: the matchConditions of a CEL
// PolicyException see the request and namespaceObject variables even when
// the policy it exempts reads neither.
func TestCELExceptionBindsWhatItReads(t *testing.T) {
	tests := []struct {
		name, cond, user, ns string
		want                 engine.Status
	}{
		{"request, exempted", "request.userInfo.username == 'admin'", "admin", "n", engine.StatusSkip},
		{"request, not exempted", "request.userInfo.username == 'admin'", "alice", "n", engine.StatusFail},
		{"namespaceObject, exempted", "namespaceObject.metadata.name == 'sandbox'", "alice", "sandbox", engine.StatusSkip},
		{"namespaceObject, not exempted", "namespaceObject.metadata.name == 'sandbox'", "alice", "n", engine.StatusFail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := vpolHead + `  validations:
  - expression: "object.metadata.name == 'nope'"
---
apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata:
  name: x
  namespace: default
spec:
  policyRefs:
  - {name: p, kind: ValidatingPolicy}
  matchConditions:
  - name: c
    expression: "` + tt.cond + `"
`
			set := &loader.Set{}
			if err := set.Read(strings.NewReader(src), "p.yaml"); err != nil {
				t.Fatal(err)
			}
			excs, err := exceptions.Compile(nil, exceptions.CEL(set.CELExceptions...))
			if err != nil {
				t.Fatal(err)
			}
			eng, err := engine.New(engine.WithExceptions(excs))
			if err != nil {
				t.Fatal(err)
			}
			ps, err := eng.Compile(set.Policies...)
			if err != nil {
				t.Fatal(err)
			}
			pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "a", "namespace": tt.ns}}
			req := &engine.Request{Operation: api.Create, Object: pod,
				NamespaceObject: map[string]any{"metadata": map[string]any{"name": tt.ns}}}
			req.UserInfo.Username = tt.user
			resp, err := ps.Validate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, r := range resp.Rules() {
				n++
				if r.Status != tt.want {
					t.Errorf("%s: %s, want %s", r.Status, r.Message, tt.want)
				}
			}
			if n != 1 {
				t.Fatalf("%d results, want 1", n)
			}
		})
	}
}
