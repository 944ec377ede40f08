package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
)

func celSet(t *testing.T, opts ...engine.Option) *engine.PolicySet {
	t.Helper()
	ps, err := loader.Load("testdata/cel/policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(ps.Policies...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// ruleResult finds the result of a rule; ok is false when the rule did
// not apply.
func ruleResult(resp *engine.Response, policy, rule string) (engine.RuleResult, bool) {
	for _, p := range resp.Policies {
		if p.Policy.Source().GetName() != policy {
			continue
		}
		for _, r := range p.Rules {
			if r.Name == rule {
				return r, true
			}
		}
	}
	return engine.RuleResult{}, false
}

func deployment(name string, replicas int, annotations int) map[string]any {
	md := map[string]any{"name": name, "namespace": "apps"}
	if annotations > 0 {
		a := map[string]any{}
		for i := 0; i < annotations; i++ {
			a[fmt.Sprintf("a%d", i)] = "x"
		}
		md["annotations"] = a
	}
	return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": md,
		"spec": map[string]any{"replicas": float64(replicas), "template": map[string]any{
			"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}}}
}

func celPod(ns string, probed bool, privileged any) map[string]any {
	c := map[string]any{"name": "app", "image": "nginx"}
	if probed {
		c["livenessProbe"] = map[string]any{"tcpSocket": map[string]any{"port": float64(80)}}
	}
	if privileged != nil {
		c["securityContext"] = map[string]any{"privileged": privileged}
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "namespace": ns},
		"spec":     map[string]any{"containers": []any{c, map[string]any{"name": "side", "image": "busybox", "securityContext": map[string]any{"privileged": false}}}}}
}

func TestCELRules(t *testing.T) {
	cluster := inmem.New(
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "limits", "namespace": "apps"},
			"data": map[string]any{"maxReplicas": "4"}},
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "names", "namespace": "apps", "labels": map[string]any{"kind": "forbidden-name"}},
			"data": map[string]any{"name": "legacy"}},
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "prod", "labels": map[string]any{"env": "prod"}}},
	)
	authz := inmem.NewAuthorizer(inmem.AuthzRule{Allow: true, Subject: "group:admins", Verb: "delete", Resource: "services"})
	set := celSet(t, engine.WithClient(cluster), engine.WithAuthorizer(authz))
	svc := func(ns, typ string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s", "namespace": ns},
			"spec": map[string]any{"type": typ}}
	}
	admin := api.UserInfoData{Username: "ann", Groups: []string{"admins"}}
	tests := []struct {
		name         string
		req          engine.Request
		policy, rule string
		status       engine.Status // "" when the rule must not apply
		message      string
	}{
		{name: "pass", req: engine.Request{Object: deployment("web", 3, 0)}, policy: "cel-basics", rule: "replicas",
			status: engine.StatusPass, message: "Validation rule 'replicas' passed."},
		{name: "messageExpression", req: engine.Request{Object: deployment("web", 7, 0)}, policy: "cel-basics", rule: "replicas",
			status: engine.StatusFail, message: "too many replicas: 7"},
		{name: "rule message", req: engine.Request{Object: deployment("web", 0, 0)}, policy: "cel-basics", rule: "replicas",
			status: engine.StatusFail, message: "rule message"},
		{name: "own message trimmed", req: engine.Request{Object: deployment("forbidden", 2, 0)}, policy: "cel-basics", rule: "replicas",
			status: engine.StatusFail, message: "forbidden name"},
		{name: "multi-line message falls back", req: engine.Request{Object: deployment("web", 2, 3)}, policy: "cel-basics", rule: "replicas",
			status: engine.StatusFail, message: "rule message"},
		{name: "first failure decides", req: engine.Request{Object: deployment("forbidden", 9, 0)}, policy: "cel-basics", rule: "replicas",
			status: engine.StatusFail, message: "too many replicas: 9"},
		{name: "background", req: engine.Request{Object: deployment("web", 7, 0), Background: true}, policy: "cel-basics", rule: "replicas",
			status: engine.StatusFail, message: "too many replicas: 7"},
		{name: "variables", req: engine.Request{Object: celPod("apps", false, false)}, policy: "cel-basics", rule: "probes",
			status: engine.StatusFail, message: "containers without probes: app, side"},
		{name: "celPreconditions skip", req: engine.Request{Object: celPod("kube-system", false, false)}, policy: "cel-basics", rule: "probes",
			status: engine.StatusSkip, message: "cel preconditions not met"},
		{name: "operations", req: engine.Request{Operation: api.Delete, OldObject: celPod("apps", false, false)}, policy: "cel-basics", rule: "probes"},
		{name: "evaluation error fails", req: engine.Request{Object: celPod("apps", true, nil)}, policy: "cel-basics", rule: "privileged",
			status: engine.StatusFail, message: "expression 'object.spec.containers.all(c, c.securityContext.privileged == false)' resulted in error: no such key: securityContext"},
		{name: "privileged", req: engine.Request{Object: celPod("apps", true, true)}, policy: "cel-basics", rule: "privileged",
			status: engine.StatusFail, message: "failed expression: object.spec.containers.all(c, c.securityContext.privileged == false)"},
		{name: "celPreconditions error fails", req: engine.Request{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "n"}}},
			policy: "cel-precondition-error", rule: "missing-field", status: engine.StatusFail,
			message: "expression 'object.metadata.labels.owner != ''' resulted in error: no such key: labels"},
		{name: "delete null object", req: engine.Request{Operation: api.Delete, OldObject: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "c", "namespace": "apps", "labels": map[string]any{"protected": "true"}}}},
			policy: "cel-delete", rule: "keep-protected", status: engine.StatusFail, message: "protected ConfigMaps cannot be deleted"},
		{name: "delete with the object only", req: engine.Request{Operation: api.Delete, Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "c", "namespace": "apps", "labels": map[string]any{"protected": "true"}}}},
			policy: "cel-delete", rule: "keep-protected", status: engine.StatusFail, message: "protected ConfigMaps cannot be deleted"},
		{name: "delete allowed", req: engine.Request{Operation: api.Delete, OldObject: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "c", "namespace": "apps"}}},
			policy: "cel-delete", rule: "keep-protected", status: engine.StatusPass},
		{name: "param by name", req: engine.Request{Object: deployment("web", 5, 0)}, policy: "cel-params", rule: "by-name",
			status: engine.StatusFail, message: "at most 4 replicas"},
		{name: "param by name passes", req: engine.Request{Object: deployment("web", 4, 0)}, policy: "cel-params", rule: "by-name",
			status: engine.StatusPass},
		{name: "param by selector", req: engine.Request{Object: deployment("legacy", 1, 0)}, policy: "cel-params", rule: "by-selector",
			status: engine.StatusFail, message: "forbidden name"},
		{name: "param not found", req: engine.Request{Object: func() map[string]any {
			d := deployment("web", 1, 0)
			d["metadata"].(map[string]any)["namespace"] = "other"
			return d
		}()}, policy: "cel-params", rule: "by-name", status: engine.StatusError, message: "error in parameterized resource"},
		{name: "selector finds none: Deny", req: engine.Request{Object: func() map[string]any {
			d := deployment("web", 1, 0)
			d["metadata"].(map[string]any)["namespace"] = "other"
			return d
		}()}, policy: "cel-params", rule: "by-selector", status: engine.StatusError, message: "error in parameterized resource: no params found"},
		{name: "namespaceObject from the client", req: engine.Request{Object: svc("prod", "LoadBalancer")}, policy: "cel-context", rule: "namespace-env",
			status: engine.StatusPass},
		{name: "namespaceObject without labels", req: engine.Request{Object: svc("dev", "LoadBalancer")}, policy: "cel-context", rule: "namespace-env",
			status: engine.StatusFail, message: "LoadBalancers only in prod namespaces"},
		{name: "authorizer allows", req: engine.Request{Object: svc("dev", "ClusterIP"), UserInfo: admin}, policy: "cel-context", rule: "may-delete",
			status: engine.StatusPass},
		{name: "authorizer denies", req: engine.Request{Object: svc("dev", "ClusterIP"), UserInfo: api.UserInfoData{Username: "bob"}}, policy: "cel-context", rule: "may-delete",
			status: engine.StatusFail, message: "the requester must be able to delete services"},
		{name: "celPreconditions on a pattern rule", req: engine.Request{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": "s", "namespace": "apps"}, "type": "kubernetes.io/tls"}},
			policy: "cel-pattern-precondition", rule: "team-label", status: engine.StatusSkip, message: "cel preconditions not met"},
		{name: "pattern rule after celPreconditions", req: engine.Request{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": "s", "namespace": "apps"}, "type": "Opaque"}},
			policy: "cel-pattern-precondition", rule: "team-label", status: engine.StatusFail, message: "validation error: label team is required"},
		{name: "orValue on values", req: engine.Request{Object: celPod("apps", false, false)}, policy: "cel-orvalue", rule: "mounts",
			status: engine.StatusPass},
		{name: "orValue on values fails", req: engine.Request{Object: func() map[string]any {
			p := celPod("apps", false, false)
			p["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["name"] = "forbidden"
			return p
		}()}, policy: "cel-orvalue", rule: "mounts", status: engine.StatusFail, message: "a container is named forbidden"},
		{name: "autogen rule", req: engine.Request{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "d", "namespace": "apps"},
			"spec":     map[string]any{"template": map[string]any{"metadata": map[string]any{"namespace": "apps"}, "spec": celPod("apps", false, false)["spec"]}}}},
			policy: "cel-basics", rule: "autogen-probes", status: engine.StatusFail, message: "containers without probes: app, side"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			resp, err := set.Validate(context.Background(), &req)
			if err != nil {
				t.Fatal(err)
			}
			r, ok := ruleResult(resp, tt.policy, tt.rule)
			if tt.status == "" {
				if ok {
					t.Fatalf("rule applied: %+v", r)
				}
				return
			}
			if !ok {
				t.Fatal("rule did not apply")
			}
			if r.Status != tt.status || !strings.HasPrefix(r.Message, tt.message) {
				t.Fatalf("got %s %q, want %s %q", r.Status, r.Message, tt.status, tt.message)
			}
		})
	}
}

func TestCELCostLimit(t *testing.T) {
	set := celSet(t)
	items := strings.Repeat("x,", 3000)
	resp, err := set.Validate(context.Background(), &engine.Request{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "big", "namespace": "apps"}, "data": map[string]any{"items": items}}})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := ruleResult(resp, "cel-cost", "quadratic")
	if !ok || r.Status != engine.StatusError || !errors.Is(r.Err, engine.ErrLimitExceeded) {
		t.Fatalf("got %+v, want an error result over the limit", r)
	}
	var le *engine.LimitError
	if !errors.As(r.Err, &le) || le.Limit != "CELCost" {
		t.Fatalf("got %v, want a CELCost LimitError", r.Err)
	}
	// a small object stays within the limit
	resp, err = set.Validate(context.Background(), &engine.Request{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "small", "namespace": "apps"}, "data": map[string]any{"items": "a,b"}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := ruleResult(resp, "cel-cost", "quadratic"); r.Status != engine.StatusPass {
		t.Fatalf("got %+v", r)
	}
}

func TestCELWithoutClient(t *testing.T) {
	set := celSet(t)
	resp, err := set.Validate(context.Background(), &engine.Request{Object: deployment("web", 1, 0)})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := ruleResult(resp, "cel-params", "by-name")
	if r.Status != engine.StatusError || !errors.Is(r.Err, engine.ErrNotConfigured) {
		t.Fatalf("got %+v, want a not-configured error", r)
	}
	// without an authorizer, using it is an evaluation error: a failure
	resp, err = set.Validate(context.Background(), &engine.Request{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "s", "namespace": "dev"}, "spec": map[string]any{"type": "ClusterIP"}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := ruleResult(resp, "cel-context", "may-delete"); r.Status != engine.StatusFail || !strings.Contains(r.Message, "resulted in error") {
		t.Fatalf("got %+v", r)
	}
	// namespaceObject has only the name without a client
	if r, _ := ruleResult(resp, "cel-context", "namespace-env"); r.Status != engine.StatusPass {
		t.Fatalf("got %+v", r)
	}
}

func TestCELException(t *testing.T) {
	pe := &api.PolicyException{}
	pe.Name, pe.Namespace = "allow-web", "apps"
	pe.Spec.Exceptions = []api.Exception{{PolicyName: "cel-basics", RuleNames: []string{"replicas"}}}
	pe.Spec.Match.Any = []api.ResourceFilter{{ResourceDescription: api.ResourceDescription{Kinds: []string{"Deployment"}, Names: []string{"web"}}}}
	excs, err := exceptions.Compile([]*api.PolicyException{pe})
	if err != nil {
		t.Fatal(err)
	}
	set := celSet(t, engine.WithExceptions(excs))
	resp, err := set.Validate(context.Background(), &engine.Request{Object: deployment("web", 9, 0)})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := ruleResult(resp, "cel-basics", "replicas")
	if r.Status != engine.StatusSkip || len(r.Exceptions) != 1 {
		t.Fatalf("got %+v, want a skip by the exception", r)
	}
}

func TestCELCompileErrors(t *testing.T) {
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, cel, pre, want string }{
		{name: "syntax", cel: "expressions:\n        - expression: \"object.(\"",
			want: `spec.rules[0].validate.cel.expressions[0].expression: Invalid value: "object.(": rule "r": compilation failed`},
		{name: "unknown function", cel: "expressions:\n        - expression: \"true\"\n        - expression: \"object.nope()\"",
			want: "spec.rules[0].validate.cel.expressions[1].expression"},
		{name: "not bool", cel: "expressions:\n        - expression: \"object.metadata.name\"",
			want: "must evaluate to bool but got dyn"},
		{name: "message expression", cel: "expressions:\n        - expression: \"true\"\n          messageExpression: \"1\"",
			want: "spec.rules[0].validate.cel.expressions[0].messageExpression"},
		{name: "variable", cel: "variables:\n        - name: v\n          expression: \"object.(\"\n        expressions:\n        - expression: \"true\"",
			want: "spec.rules[0].validate.cel.variables[0].expression"},
		{name: "audit annotation", cel: "auditAnnotations:\n        - key: k\n          valueExpression: \"1\"\n        expressions:\n        - expression: \"true\"",
			want: "spec.rules[0].validate.cel.auditAnnotations[0].valueExpression"},
		{name: "params without paramKind", cel: "expressions:\n        - expression: \"params.x == 1\"",
			want: "undeclared reference to 'params'"},
		{name: "paramRef without paramKind", cel: "paramRef:\n          name: x\n        expressions:\n        - expression: \"true\"",
			want: "spec.rules[0].validate.cel.paramKind: Required value"},
		{name: "no expressions", cel: "variables: []", want: "spec.rules[0].validate.cel.expressions: Required value"},
		{name: "precondition", cel: "expressions:\n        - expression: \"true\"", pre: "    celPreconditions:\n    - name: p\n      expression: \"1\"\n",
			want: "spec.rules[0].celPreconditions[0].expression"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: bad\nspec:\n  rules:\n  - name: r\n    match:\n      any:\n      - resources:\n          kinds: [Pod]\n" +
				tt.pre + "    validate:\n      cel:\n        " + tt.cel + "\n"
			set := decode(src)
			_, err := eng.Compile(set.Policies...)
			if err == nil {
				t.Fatal("compiled")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "policy bad") {
				t.Fatalf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}
