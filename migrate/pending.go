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
