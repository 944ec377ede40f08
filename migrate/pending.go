package migrate

import (
	"fmt"

	"github.com/gavelpolicy/gavel/api"
)

func pendingRules(idx []int, outcomes []RuleOutcome, what string) *Output {
	for _, i := range idx {
		outcomes[i].Problems = append(outcomes[i].Problems, Problem{Path: fmt.Sprintf("spec.rules[%d]", i), Construct: what, Detail: "not converted yet"})
	}
	return nil
}

func convertGenerateRules(p api.ClassicPolicy, name string, idx []int, outcomes []RuleOutcome) *Output {
	return pendingRules(idx, outcomes, "generate")
}

func convertImageRules(p api.ClassicPolicy, name string, idx []int, outcomes []RuleOutcome) *Output {
	return pendingRules(idx, outcomes, "verifyImages")
}

func convertException(x *api.PolicyException, policies []*Conversion) *Conversion {
	return &Conversion{Kind: x.Kind, Name: x.Name, Namespace: x.Namespace, Source: x, Rules: []RuleOutcome{{Rule: x.Name, Type: TypeException, Problems: []Problem{{Construct: "exception", Detail: "not converted yet"}}}}}
}

func convertCleanup(doc api.Document) (*Conversion, error) {
	return &Conversion{Kind: doc.Kind(), Name: doc.Name(), Rules: []RuleOutcome{{Rule: doc.Name(), Type: TypeCleanup, Problems: []Problem{{Construct: "cleanup", Detail: "not converted yet"}}}}}, nil
}
