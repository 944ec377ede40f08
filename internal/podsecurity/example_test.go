package podsecurity_test

import (
	"fmt"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/podsecurity"
)

func ExampleCheck_Evaluate() {
	ev, err := podsecurity.NewEvaluator() // once per process
	if err != nil {
		panic(err)
	}
	chk, err := ev.Compile(api.PodSecurity{Level: "baseline", Version: "latest"}, podsecurity.WithRuleName("baseline"))
	if err != nil {
		panic(err)
	}
	pod := map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   map[string]any{"name": "badpod01"},
		"spec": map[string]any{
			"hostIPC":    true,
			"containers": []any{map[string]any{"name": "container01", "image": "dummyimagename"}},
		},
	}
	res, err := chk.Evaluate(pod, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Allowed)
	fmt.Println(res.Message)
	for _, c := range res.Checks {
		fmt.Println(c.ID, "/", c.ControlName, "/", c.ForbiddenDetail)
	}
	// Output:
	// false
	// Validation rule 'baseline' failed. It violates PodSecurity "baseline:latest": (Forbidden reason: host namespaces, field error list: [spec.hostIPC is forbidden, forbidden values found: true])
	// hostNamespaces / Host Namespaces / hostIPC=true
}

func ExampleCheck_Evaluate_exception() {
	ev, _ := podsecurity.NewEvaluator()
	chk, _ := ev.Compile(api.PodSecurity{Level: "baseline"}, podsecurity.WithRuleName("baseline"))
	pod := map[string]any{
		"kind":     "Pod",
		"metadata": map[string]any{"name": "istio-pod"},
		"spec": map[string]any{
			"initContainers": []any{map[string]any{
				"name":  "istio-init",
				"image": "docker.io/istio/proxyv2:1.20.2",
				"securityContext": map[string]any{
					"capabilities": map[string]any{"add": []any{"NET_ADMIN", "NET_RAW"}},
				},
			}},
			"containers": []any{map[string]any{"name": "app", "image": "busybox"}},
		},
	}
	// The podSecurity exemptions of a matching PolicyException.
	exception := []api.PodSecurityStandard{{
		ControlName:     "Capabilities",
		Images:          []string{"*/istio/proxyv2*"},
		RestrictedField: "spec.initContainers[*].securityContext.capabilities.add",
		Values:          []string{"NET_ADMIN", "NET_RAW"},
	}}
	without, _ := chk.Evaluate(pod, nil)
	with, _ := chk.Evaluate(pod, exception)
	fmt.Println(without.Allowed, without.Exempted)
	fmt.Println(with.Allowed, with.Exempted)
	// Output:
	// false false
	// true true
}
