package exceptions_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/exceptions"
)

// decodeExceptions reads kyverno.io PolicyExceptions from inline YAML.
func decodeExceptions(src string) []*api.PolicyException {
	docs, err := api.ReadDocuments(strings.NewReader(src), "exceptions.yaml")
	if err != nil {
		panic(err)
	}
	var out []*api.PolicyException
	for _, d := range docs {
		pe, err := decodeException(d)
		if err != nil {
			panic(err)
		}
		out = append(out, pe)
	}
	return out
}

// Compile a set once and hand it to the engine
// (engine.WithExceptions(set)); Namespaces
// keeps only the exceptions of the namespaces a host trusts, like
// upstream's exceptionNamespace setting.
func Example() {
	polexs := decodeExceptions(`
apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: delta-exception
  namespace: delta
spec:
  exceptions:
  - policyName: disallow-host-namespaces
    ruleNames: [host-namespaces, autogen-host-namespaces]
  match:
    any:
    - resources:
        kinds: [Pod, Deployment]
        namespaces: [delta]
        names: [important-tool*]
---
apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: elsewhere
  namespace: team-a
spec:
  exceptions:
  - policyName: disallow-host-namespaces
    ruleNames: ["*"]
  match:
    any:
    - resources:
        kinds: [Pod]
`)
	all, err := exceptions.Compile(polexs)
	if err != nil {
		fmt.Println(err)
		return
	}
	trusted, err := exceptions.Compile(polexs, exceptions.Namespaces("delta", "kyverno"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(all.Len(), trusted.Len())
	// Output:
	// 2 1
}

// An invalid exception fails Compile with a *ValidationError naming the
// exception and the fields at fault.
func ExampleValidationError() {
	_, err := exceptions.Compile(decodeExceptions(`
apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: no-policy
  namespace: delta
spec:
  exceptions:
  - ruleNames: [host-namespaces]
  match:
    any:
    - resources:
        kinds: [Pod]
`))
	var ve *exceptions.ValidationError
	if errors.As(err, &ve) {
		fmt.Println(ve.Namespace, ve.Name, len(ve.Errors))
		fmt.Println(err)
	}
	// Output:
	// delta no-policy 1
	// PolicyException delta/no-policy: spec.exceptions[0].policyName: Required value: An exception requires a policy name
}

// CEL adds policies.kyverno.io PolicyExceptions to a set; the engine
// evaluates their matchConditions for the policies their policyRefs name.
func ExampleCEL() {
	docs, err := api.ReadDocuments(strings.NewReader(`
apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata:
  name: tools
  namespace: ops
  labels: {polex.kyverno.io/priority: "2"}
spec:
  policyRefs:
  - {name: no-latest, kind: ValidatingPolicy}
  images: [busybox:latest]
`), "exception.yaml")
	if err != nil {
		panic(err)
	}
	obj, err := api.DecodeObject(docs[0])
	if err != nil {
		panic(err)
	}
	x := obj.(*api.CELPolicyException)
	set, err := exceptions.Compile(nil, exceptions.CEL(x))
	if err != nil {
		panic(err)
	}
	fmt.Println(set.Len())
	// Output:
	// 1
}

// decodeException decodes a kyverno.io PolicyException document.
func decodeException(d api.Document) (*api.PolicyException, error) {
	obj, err := api.DecodeObject(d)
	if err != nil {
		return nil, err
	}
	pe, ok := obj.(*api.PolicyException)
	if !ok {
		return nil, fmt.Errorf("%s: not a PolicyException", d)
	}
	return pe, nil
}
