package engine_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
)

// A ValidatingPolicy, a ValidatingAdmissionPolicy with its binding and a
// ClusterPolicy compile into one set; a CEL PolicyException exempts a
// namespace from the ValidatingPolicy.
func Example_validatingPolicy() {
	const policies = `
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: require-team
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [pods]
  validations:
  - expression: "'team' in object.metadata.?labels.orValue({})"
    messageExpression: "'pod ' + object.metadata.name + ' has no team label'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: no-host-network
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  validations:
  - expression: "object.spec.?hostNetwork.orValue(false) == false"
    message: host networking is not allowed
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: no-host-network-audit
spec:
  policyName: no-host-network
  validationActions: [Audit]
---
apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata:
  name: sandbox
  namespace: sandbox
spec:
  policyRefs:
  - {name: require-team, kind: ValidatingPolicy}
  matchConditions:
  - name: sandbox
    expression: "object.metadata.namespace == 'sandbox'"
`
	set := &loader.Set{}
	if err := set.Read(strings.NewReader(policies), "policies.yaml"); err != nil {
		panic(err)
	}
	excs, err := exceptions.Compile(nil, exceptions.CEL(set.CELExceptions...))
	if err != nil {
		panic(err)
	}
	eng, err := engine.New(engine.WithExceptions(excs))
	if err != nil {
		panic(err)
	}
	ps, err := eng.Compile(set.Policies...)
	if err != nil {
		panic(err)
	}
	for _, ns := range []string{"shop", "sandbox"} {
		pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "web", "namespace": ns},
			"spec":     map[string]any{"hostNetwork": true}}
		resp, err := ps.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod})
		if err != nil {
			panic(err)
		}
		for p, r := range resp.Rules() {
			fmt.Printf("%s %s %s [%s] %s: %s\n", ns, api.KindOf(p.Policy.Source()), p.Policy.Source().GetName(), p.FailureAction, r.Status, r.Message)
		}
		fmt.Println(ns, "blocked:", resp.Blocked())
	}
	// Output:
	// shop ValidatingPolicy require-team [Enforce] fail: pod web has no team label
	// shop ValidatingAdmissionPolicy no-host-network [Audit] fail: host networking is not allowed
	// shop blocked: true
	// sandbox ValidatingPolicy require-team [Enforce] skip: rule is skipped due to policy exception: sandbox/sandbox
	// sandbox ValidatingAdmissionPolicy no-host-network [Audit] fail: host networking is not allowed
	// sandbox blocked: false
}

// ValidatePayload applies the ValidatingPolicies in JSON mode to payloads
// that are not Kubernetes objects.
func ExamplePolicySet_ValidatePayload() {
	docs, err := api.ReadDocuments(strings.NewReader(`
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: terraform-version
spec:
  evaluation:
    mode: JSON
  matchConditions:
  - name: is-plan
    expression: "has(object.terraform_version)"
  validations:
  - expression: "object.terraform_version.startsWith('1.5.')"
    message: terraform 1.5 is required
`), "policy.yaml")
	if err != nil {
		panic(err)
	}
	p, err := api.DecodePolicy(docs[0])
	if err != nil {
		panic(err)
	}
	eng, err := engine.New()
	if err != nil {
		panic(err)
	}
	set, err := eng.Compile(p)
	if err != nil {
		panic(err)
	}
	for _, payload := range []map[string]any{{"terraform_version": "1.5.7"}, {"terraform_version": "1.6.0"}, {"other": true}} {
		resp, err := set.ValidatePayload(context.Background(), payload)
		if err != nil {
			panic(err)
		}
		r := resp.Policies[0].Rules[0]
		fmt.Println(r.Status, r.Message)
	}
	// Output:
	// pass success
	// fail terraform 1.5 is required
	// skip skip
}

// WithCELLibraries gives Kyverno's CEL libraries their hosts: here the
// http library, answered offline by inmem.HTTP (remote.HTTP on the
// network). The libraries' other hosts come from the engine's own (the
// Client for resource, the RegistryClient for imagedata, ...).
func ExampleWithCELLibraries() {
	approved := inmem.NewHTTP()
	approved.Handle("GET", "https://approvals.example/terraform", func(cel.HTTPRequest) (cel.HTTPResponse, error) {
		return cel.HTTPResponse{StatusCode: 200, Body: []byte(`{"versions": ["1.6.0"]}`)}, nil
	})
	eng, err := engine.New(engine.WithCELLibraries(cel.Libraries{HTTP: approved}))
	if err != nil {
		panic(err)
	}
	docs, err := api.ReadDocuments(strings.NewReader(`
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: approved-terraform
spec:
  evaluation:
    mode: JSON
  variables:
  - name: approved
    expression: "http.Get('https://approvals.example/terraform').versions"
  validations:
  - expression: "object.terraform_version in variables.approved"
    messageExpression: "'terraform ' + object.terraform_version + ' is not approved'"
`), "policy.yaml")
	if err != nil {
		panic(err)
	}
	p, err := api.DecodePolicy(docs[0])
	if err != nil {
		panic(err)
	}
	set, err := eng.Compile(p)
	if err != nil {
		panic(err)
	}
	for _, v := range []string{"1.6.0", "1.5.7"} {
		resp, err := set.ValidatePayload(context.Background(), map[string]any{"terraform_version": v})
		if err != nil {
			panic(err)
		}
		r := resp.Policies[0].Rules[0]
		fmt.Println(r.Status, r.Message)
	}
	// Output:
	// pass success
	// fail terraform 1.5.7 is not approved
}
