package exceptions_test

import (
	"fmt"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/match"
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

	res := match.Resource{Group: "apps", Version: "v1", Kind: "Deployment", Name: "important-tool", Namespace: "delta"}
	var applied []string
	for _, e := range set.Candidates("disallow-host-namespaces", "autogen-host-namespaces") {
		if ok, _ := e.Matches(res, match.Request{Operation: "CREATE"}); ok && e.Conditions == nil {
			applied = append(applied, e.Key())
		}
	}
	fmt.Println(exceptions.SkipMessage(applied...))
	// Output:
	// rule is skipped due to policy exception: delta/delta-exception
}
