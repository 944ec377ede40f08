package engine_test

import (
	"context"
	"errors"
	"fmt"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// failurePolicyPolicy compiles a policy with one validate rule and the
// given failure policies ("" leaves a field unset).
func failurePolicyPolicy(t *testing.T, webhook, spec string) *engine.Policy {
	t.Helper()
	src := "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: p\nspec:\n"
	if spec != "" {
		src += "  failurePolicy: " + spec + "\n"
	}
	if webhook != "" {
		src += "  webhookConfiguration:\n    failurePolicy: " + webhook + "\n"
	}
	src += `  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      pattern:
        metadata:
          name: "?*"
`
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(decode(src).Policies...)
	if err != nil {
		t.Fatal(err)
	}
	return set.Policies()[0]
}

func TestFailurePolicy(t *testing.T) {
	for _, tt := range []struct {
		webhook, spec string
		want          api.FailurePolicyType
	}{
		{"", "", api.Fail},
		{"", "Ignore", api.Ignore},
		{"Ignore", "", api.Ignore},
		{"Fail", "Ignore", api.Fail},
		{"Ignore", "Fail", api.Ignore},
	} {
		if got := failurePolicyPolicy(t, tt.webhook, tt.spec).FailurePolicy(); got != tt.want {
			t.Errorf("webhookConfiguration %q, spec %q: FailurePolicy() = %q, want %q", tt.webhook, tt.spec, got, tt.want)
		}
	}
}

// TestBlocked is the table of upstream's block decision
// (pkg/webhooks/utils BlockRequest and the handlers that call it).
func TestBlocked(t *testing.T) {
	fail := failurePolicyPolicy(t, "", "")
	ignore := failurePolicyPolicy(t, "Ignore", "")
	for _, tt := range []struct {
		name   string
		policy *engine.Policy
		action api.ValidationFailureAction
		typ    engine.RuleType
		status engine.Status
		want   bool
	}{
		{"enforce validate fail", fail, api.Enforce, engine.Validation, engine.StatusFail, true},
		{"enforce validate fail, failurePolicy Ignore", ignore, api.Enforce, engine.Validation, engine.StatusFail, true},
		{"enforce lower-case validate fail", fail, "enforce", engine.Validation, engine.StatusFail, true},
		{"audit validate fail", fail, api.Audit, engine.Validation, engine.StatusFail, false},
		{"enforce validate error, failurePolicy Fail", fail, api.Enforce, engine.Validation, engine.StatusError, true},
		{"enforce validate error, failurePolicy Ignore", ignore, api.Enforce, engine.Validation, engine.StatusError, false},
		{"audit validate error, failurePolicy Fail", fail, api.Audit, engine.Validation, engine.StatusError, false},
		{"enforce verifyImages fail", fail, api.Enforce, engine.ImageVerify, engine.StatusFail, true},
		{"enforce verifyImages error, failurePolicy Ignore", ignore, api.Enforce, engine.ImageVerify, engine.StatusError, false},
		{"mutate error, failurePolicy Fail", fail, api.Audit, engine.Mutation, engine.StatusError, true},
		{"mutate error, failurePolicy Ignore", ignore, api.Enforce, engine.Mutation, engine.StatusError, false},
		{"audit mutate fail", fail, api.Audit, engine.Mutation, engine.StatusFail, false},
		{"enforce mutate fail", ignore, api.Enforce, engine.Mutation, engine.StatusFail, true},
		{"generate error", fail, api.Enforce, engine.Generation, engine.StatusError, false},
		{"generate fail", fail, api.Enforce, engine.Generation, engine.StatusFail, false},
		{"enforce warn", fail, api.Enforce, engine.Validation, engine.StatusWarn, false},
		{"enforce skip", fail, api.Enforce, engine.Validation, engine.StatusSkip, false},
		{"enforce pass", fail, api.Enforce, engine.Validation, engine.StatusPass, false},
	} {
		pr := engine.PolicyResult{Policy: tt.policy, FailureAction: tt.action,
			Rules: []engine.RuleResult{{Name: "ok", Type: tt.typ, Status: engine.StatusPass}, {Name: "r", Type: tt.typ, Status: tt.status}}}
		if got := pr.Blocks(); got != tt.want {
			t.Errorf("%s: Blocks() = %v, want %v", tt.name, got, tt.want)
		}
		resp := engine.Response{Policies: []engine.PolicyResult{{Policy: tt.policy, FailureAction: api.Enforce}, pr}}
		if got := resp.Blocked(); got != tt.want {
			t.Errorf("%s: Blocked() = %v, want %v", tt.name, got, tt.want)
		}
	}
	if (&engine.Response{}).Blocked() {
		t.Error("an empty response blocks")
	}
}

func TestResponseRules(t *testing.T) {
	p := failurePolicyPolicy(t, "", "")
	resp := engine.Response{Policies: []engine.PolicyResult{
		{Policy: p, Rules: []engine.RuleResult{{Name: "a"}, {Name: "b"}}},
		{Policy: p},
		{Policy: p, Rules: []engine.RuleResult{{Name: "c"}}},
	}}
	var got []string
	for pr, r := range resp.Rules() {
		got = append(got, fmt.Sprintf("%s.%s", pr.Policy.Source().GetName(), r.Name))
	}
	if fmt.Sprint(got) != "[p.a p.b p.c]" {
		t.Errorf("Rules() visited %v", got)
	}
	got = got[:0]
	for _, r := range resp.Rules() {
		got = append(got, r.Name)
		break
	}
	if fmt.Sprint(got) != "[a]" {
		t.Errorf("Rules() after break visited %v", got)
	}
	// the results are those of the response, not copies
	for _, r := range resp.Rules() {
		if r != &resp.Policies[0].Rules[0] {
			t.Error("Rules() yields a copy")
		}
		break
	}
}

// TestUnknownOperation: an operation the engine does not know is refused
// by the call that receives it, not evaluated as a CREATE.
func TestUnknownOperation(t *testing.T) {
	set := failurePolicyPolicySet(t)
	obj := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "a"}}
	for _, op := range []api.AdmissionOperation{"create", "PATCH"} {
		req := &engine.Request{Operation: op, Object: obj}
		for name, call := range map[string]func(context.Context, *engine.Request) (*engine.Response, error){
			"Validate": set.Validate, "Mutate": set.Mutate, "Generate": set.Generate,
		} {
			if _, err := call(context.Background(), req); !errors.Is(err, engine.ErrInvalidObject) {
				t.Errorf("%s with operation %q: error %v, want ErrInvalidObject", name, op, err)
			}
		}
	}
	for _, op := range []api.AdmissionOperation{"", api.Create, api.Update, api.Delete, api.Connect} {
		if _, err := set.Validate(context.Background(), &engine.Request{Operation: op, Object: obj, OldObject: obj}); err != nil {
			t.Errorf("operation %q: %v", op, err)
		}
	}
}

func failurePolicyPolicySet(t *testing.T) *engine.PolicySet {
	t.Helper()
	p := failurePolicyPolicy(t, "", "")
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	return eng.NewPolicySet(p)
}

func TestFailurePolicyValues(t *testing.T) {
	for _, src := range []string{"  failurePolicy: fail\n", "  webhookConfiguration:\n    failurePolicy: Deny\n"} {
		p := "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: p\nspec:\n" + src +
			"  rules:\n  - name: r\n    match:\n      any:\n      - resources:\n          kinds: [Pod]\n    validate:\n      pattern:\n        metadata:\n          name: \"?*\"\n"
		eng, err := engine.New()
		if err != nil {
			t.Fatal(err)
		}
		_, err = eng.Compile(decode(p).Policies...)
		if err == nil || !strings.Contains(err.Error(), `supported values: "Fail", "Ignore"`) {
			t.Errorf("%q: error %v", src, err)
		}
	}
}

// With WithPolicyTiming each policy's result carries the time its rules
// took; without it the field stays zero.
func TestPolicyTiming(t *testing.T) {
	src := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: p
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      pattern:
        metadata:
          name: "?*"
`
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "a", "namespace": "n"}}
	for _, timing := range []bool{false, true} {
		var opts []engine.Option
		if timing {
			opts = append(opts, engine.WithPolicyTiming())
		}
		eng, err := engine.New(opts...)
		if err != nil {
			t.Fatal(err)
		}
		set, err := eng.Compile(decode(src).Policies...)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Policies) != 1 || len(resp.Policies[0].Rules) != 1 {
			t.Fatalf("timing %v: %d policy results", timing, len(resp.Policies))
		}
		if d := resp.Policies[0].Duration; (d > 0) != timing {
			t.Errorf("timing %v: Duration = %v", timing, d)
		}
	}
}

// A subresource request is selected by its parent's kind when the host
// gives it (ResourceKind): "Pod/exec" selects a CONNECT whose Kind is
// PodExecOptions; the request variable keeps the request's kind.
func TestResourceKindSelectsSubresources(t *testing.T) {
	src := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: no-exec
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: no-exec
    match:
      any:
      - resources:
          kinds: [Pod/exec]
          operations: [CONNECT]
    validate:
      message: "{{ request.kind.kind }} on {{ request.subResource }}"
      deny: {}
`
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(decode(src).Policies...)
	if err != nil {
		t.Fatal(err)
	}
	opts := map[string]any{"apiVersion": "v1", "kind": "PodExecOptions", "command": []any{"ls"}}
	for _, tt := range []struct {
		resourceKind schema.GroupVersionKind
		want         string
	}{
		{schema.GroupVersionKind{}, ""},
		{schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "fail: PodExecOptions on exec"},
	} {
		resp, err := set.Validate(context.Background(), &engine.Request{
			Operation: api.Connect, Object: opts, Name: "p", Namespace: "n", SubResource: "exec",
			Kind:         schema.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"},
			Resource:     schema.GroupVersionResource{Version: "v1", Resource: "pods"},
			ResourceKind: tt.resourceKind,
		})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, r := range resp.Rules() {
			got = string(r.Status) + ": " + r.Message
		}
		if got != tt.want {
			t.Errorf("ResourceKind %v: %q, want %q", tt.resourceKind, got, tt.want)
		}
	}
}

// TestBlockedByRuleAction: a failure blocks when the failed rule's own
// action is Enforce (its failureActionOverrides, then failureAction,
// else the policy's overrides and validationFailureAction), as upstream
// decides since kyverno#16558.
func TestBlockedByRuleAction(t *testing.T) {
	const policy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: p
spec:
  validationFailureAction: %s
  validationFailureActionOverrides:
  - action: Enforce
    namespaces: [spec-enforced]
  rules:
  - name: purpose
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    validate:
      %s
      pattern: {metadata: {labels: {purpose: "?*"}}}
  - name: env
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    validate:
      %s
      pattern: {metadata: {labels: {env: "?*"}}}
`
	const (
		enforce = "failureAction: Enforce"
		audit   = "failureAction: Audit"
		none    = ""
		// Audit, but Enforce in the namespaces labelled tier=prod
		auditProd = "failureAction: Audit\n      failureActionOverrides: [{action: Enforce, namespaces: ['*'], namespaceSelector: {matchLabels: {tier: prod}}}]"
	)
	for _, tt := range []struct {
		name               string
		spec, purpose, env string
		namespace          string
		nsLabels           map[string]string
		labels             string // of the ConfigMap
		want               bool
	}{
		{"the failed rule is Audit, the other Enforce", "Audit", enforce, audit, "default", nil, "{purpose: x}", false},
		{"the failed rule is Enforce", "Audit", enforce, audit, "default", nil, "{env: x}", true},
		{"both failed", "Audit", enforce, audit, "default", nil, "{}", true},
		{"an Audit rule in an Enforce policy", "Enforce", none, audit, "default", nil, "{purpose: x}", false},
		{"a rule without action in an Enforce policy", "Enforce", none, audit, "default", nil, "{env: x}", true},
		{"a rule without action in an Audit policy", "Audit", none, enforce, "default", nil, "{env: x}", false},
		{"the policy's override", "Audit", none, audit, "spec-enforced", nil, "{env: x}", true},
		{"the rule's action before the policy's override", "Audit", none, audit, "spec-enforced", nil, "{purpose: x}", false},
		{"the rule's override applies", "Audit", none, auditProd, "default", map[string]string{"tier": "prod"}, "{purpose: x}", true},
		{"the rule's override does not apply", "Audit", none, auditProd, "default", map[string]string{"tier": "dev"}, "{purpose: x}", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			eng, err := engine.New()
			if err != nil {
				t.Fatal(err)
			}
			set, err := eng.Compile(decode(fmt.Sprintf(policy, tt.spec, tt.purpose, tt.env)).Policies...)
			if err != nil {
				t.Fatal(err)
			}
			cm := fmt.Sprintf("{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: %s, labels: %s}}", tt.namespace, tt.labels)
			resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: object(cm), NamespaceLabels: tt.nsLabels})
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Blocked(); got != tt.want {
				var rules []string
				for _, r := range resp.Rules() {
					rules = append(rules, r.Name+":"+string(r.Status))
				}
				t.Errorf("Blocked() = %v, want %v (rules %v)", got, tt.want, rules)
			}
		})
	}
}
