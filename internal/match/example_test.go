package match_test

import (
	"fmt"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/match"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

func Example() {
	var rule api.Rule
	_ = yaml.Unmarshal([]byte(`
name: require-labels
match:
  any:
  - resources:
      kinds: [Pod]
      operations: [CREATE, UPDATE]
exclude:
  any:
  - resources:
      namespaces: [kube-system]
`), &rule)

	compiled, errs := match.Compile(rule.MatchResources, rule.ExcludeResources,
		field.NewPath("spec", "rules").Index(0), match.Background(true))
	if len(errs) > 0 {
		fmt.Println(errs.ToAggregate())
		return
	}

	for _, ns := range []string{"shop", "kube-system"} {
		pod := map[string]any{
			"apiVersion": "v1",
			"kind":       "Pod",
			"metadata":   map[string]any{"name": "web", "namespace": ns},
		}
		ok, reason, err := compiled.Matches(match.ResourceFromObject(pod, ""), match.Request{Operation: "CREATE"})
		fmt.Println(ns, ok, reason, err)
	}
	// Output:
	// shop true  <nil>
	// kube-system false resource excluded since one of the criteria excluded it <nil>
}

func ExampleCompile_errors() {
	m := api.MatchResources{
		Any: api.ResourceFilters{{ResourceDescription: api.ResourceDescription{
			Names: []string{"{{ request.object.metadata.name }}"},
		}}},
	}
	_, errs := match.Compile(m, nil, field.NewPath("spec", "rules").Index(2))
	for _, e := range errs {
		fmt.Println(e)
	}
	// Output:
	// spec.rules[2].match.any[0].resources.names[0]: Forbidden: variables are not allowed in the match section
	// spec.rules[2].match.any[0].resources.kinds: Required value: at least one element must be specified in a kind block, the kind attribute is mandatory when working with the resources element
}

func ExampleParseKindSelector() {
	for _, s := range []string{"Pod", "apps/v1/Deployment", "Pod/exec", "*/scale", "v1/Pod.eviction"} {
		k := match.ParseKindSelector(s)
		fmt.Printf("%-20s %s\n", s, k)
	}
	fmt.Println(match.ParseKindSelector("Pod").Matches("", "v1", "Pod", "exec"))
	// Output:
	// Pod                  */*/Pod
	// apps/v1/Deployment   apps/v1/Deployment
	// Pod/exec             */*/Pod/exec
	// */scale              */*/*/scale
	// v1/Pod.eviction      */v1/Pod/eviction
	// false
}

func ExampleFilter_Matches() {
	f, _ := match.CompileFilter(api.MatchResources{
		Any: api.ResourceFilters{{ResourceDescription: api.ResourceDescription{
			Kinds:      []string{"Pod"},
			Namespaces: []string{"delta"},
			Names:      []string{"important-tool*"},
		}}},
	}, field.NewPath("spec", "match"))
	res := match.Resource{Version: "v1", Kind: "Pod", Name: "important-tool-1", Namespace: "delta"}
	ok, err := f.Matches(res, match.Request{})
	fmt.Println(ok, err)
	// Output: true <nil>
}
