package exceptions_test

import (
	"fmt"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/exceptions"
)

func Example() {
	docs, _ := api.ReadDocuments(strings.NewReader(`
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
`), "exception.yaml")
	pe, _ := api.DecodePolicyException(docs[0])
	set, err := exceptions.Compile([]*api.PolicyException{pe})
	if err != nil {
		fmt.Println(err)
		return
	}

	// The engine (engine.WithExceptions) asks the set for the exceptions
	// of a rule, then matches each against the resource.
	var keys []string
	for _, e := range set.Candidates("disallow-host-namespaces", "autogen-host-namespaces") {
		keys = append(keys, e.Key())
	}
	fmt.Println(set.Len(), len(set.Candidates("disallow-host-namespaces", "other-rule")))
	fmt.Println(exceptions.SkipMessage(keys...))
	// Output:
	// 1 0
	// rule is skipped due to policy exception: delta/delta-exception
}

// CEL adds policies.kyverno.io PolicyExceptions to a set; the engine
// evaluates their matchConditions for the policies they name.
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
	x, err := api.DecodeCELPolicyException(docs[0])
	if err != nil {
		panic(err)
	}
	set, err := exceptions.Compile(nil, exceptions.CEL(x))
	if err != nil {
		panic(err)
	}
	for _, e := range set.CELCandidates("ValidatingPolicy", "no-latest") {
		fmt.Println(e.Key(), e.Priority(), e.FullExemption(), e.ReportsPass())
	}
	fmt.Println(len(set.CELCandidates("NamespacedValidatingPolicy", "no-latest")))
	// Output:
	// ops/tools 2 false false
	// 0
}
