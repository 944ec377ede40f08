package engine_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
)

// A generate rule gives the downstream objects it would write, with the
// tracking labels the controller uses to keep them in sync.
func ExamplePolicySet_Generate() {
	const policy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: default-deny
spec:
  rules:
  - name: deny-all-traffic
    match:
      any:
      - resources:
          kinds: [Namespace]
    generate:
      synchronize: true
      apiVersion: networking.k8s.io/v1
      kind: NetworkPolicy
      name: deny-all-traffic
      namespace: "{{request.object.metadata.name}}"
      data:
        spec:
          podSelector: {}
          policyTypes: [Ingress, Egress]
`
	s := &loader.Set{}
	if err := s.Read(strings.NewReader(policy), "policy.yaml"); err != nil {
		panic(err)
	}
	cluster := inmem.New()
	eng, _ := engine.New(engine.WithClient(cluster))
	set, err := eng.Compile(s.Policies...)
	if err != nil {
		panic(err)
	}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "payments"}}
	resp, err := set.Generate(context.Background(), &engine.Request{Operation: api.Create, Object: ns})
	if err != nil {
		panic(err)
	}
	rr := resp.Policies[0].Rules[0]
	fmt.Println(rr.Name, rr.Status)
	for _, obj := range rr.GeneratedResources {
		md := obj["metadata"].(map[string]any)
		labels := md["labels"].(map[string]any)
		fmt.Println(obj["kind"], md["namespace"], md["name"])
		fmt.Println("generate.kyverno.io/policy-name =", labels["generate.kyverno.io/policy-name"])
		fmt.Println("generate.kyverno.io/trigger-kind =", labels["generate.kyverno.io/trigger-kind"])
	}
	// Output:
	// deny-all-traffic pass
	// NetworkPolicy payments deny-all-traffic
	// generate.kyverno.io/policy-name = default-deny
	// generate.kyverno.io/trigger-kind = Namespace
}
