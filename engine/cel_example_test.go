package engine_test

import (
	"context"
	"fmt"

	"github.com/gavelpolicy/gavel/engine"
)

// A validate rule written in CEL: variables composed in order, a
// messageExpression, and a celPrecondition. Autogen adds the rules for Pod
// controllers, with object.spec rewritten to the Pod template.
func Example_cel() {
	policies := decode(`
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-probes
spec:
  validationFailureAction: Enforce
  rules:
  - name: liveness
    match:
      any:
      - resources:
          kinds: [Pod]
    celPreconditions:
    - name: not-system
      expression: "object.metadata.namespace != 'kube-system'"
    validate:
      cel:
        variables:
        - name: unprobed
          expression: "object.spec.containers.filter(c, !has(c.livenessProbe)).map(c, c.name)"
        expressions:
        - expression: "size(variables.unprobed) == 0"
          messageExpression: "'no liveness probe: ' + variables.unprobed.join(', ')"
`).Policies
	eng, err := engine.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	set, err := eng.Compile(policies...)
	if err != nil {
		fmt.Println(err)
		return
	}
	var names []string
	for _, r := range set.Policies()[0].Rules() {
		names = append(names, r.Name)
	}
	fmt.Println(names)
	for _, ns := range []string{"shop", "kube-system"} {
		pod := object(`
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: ` + ns + `
spec:
  containers:
  - name: app
    image: nginx
  - name: sidecar
    image: envoy
    livenessProbe:
      httpGet: {path: /healthz, port: 9901}
`)
		resp, err := set.Validate(context.Background(), &engine.Request{Object: pod})
		if err != nil {
			fmt.Println(err)
			return
		}
		r := resp.Policies[0].Rules[0]
		fmt.Printf("%s: %s %s (blocked: %v)\n", ns, r.Status, r.Message, resp.Blocked())
	}
	// Output:
	// [liveness autogen-liveness autogen-cronjob-liveness]
	// shop: fail no liveness probe: app (blocked: true)
	// kube-system: skip cel preconditions not met (blocked: false)
}
