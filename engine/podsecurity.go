package engine

import (
	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/exceptions"
)

// validatePodSecurity evaluates a validate.podSecurity rule. Exemptions of
// matching PolicyExceptions are applied on top of the rule's own; when they
// make a failing pod pass, the result is a skip naming the exceptions.
func (e *Engine) validatePodSecurity(rs *reqState, r *rule, excs []*exceptions.Exception) []RuleResult {
	base, err := r.validate.podSecurity.Evaluate(rs.obj, nil)
	if err != nil {
		return []RuleResult{r.errorResult("failed to evaluate pod security", err)}
	}
	if base.Allowed {
		return []RuleResult{r.result(StatusPass, base.Message)}
	}
	var extra []api.PodSecurityStandard
	var keys []string
	for _, x := range excs {
		if ps := x.PodSecurity(); len(ps) > 0 {
			extra = append(extra, ps...)
			keys = append(keys, x.Key())
		}
	}
	if len(extra) > 0 {
		withExc, err := r.validate.podSecurity.Evaluate(rs.obj, extra)
		if err != nil {
			return []RuleResult{r.errorResult("failed to evaluate pod security", err)}
		}
		if withExc.Allowed {
			res := r.result(StatusSkip, exceptions.SkipMessage(keys...))
			res.Exceptions = keys
			return []RuleResult{res}
		}
		base = withExc
	}
	res := r.result(StatusFail, base.Message)
	for _, c := range base.Checks {
		res.PodSecurityChecks = append(res.PodSecurityChecks, PodSecurityCheck{ID: c.ID, ForbiddenReason: c.ForbiddenReason, ForbiddenDetail: c.ForbiddenDetail})
	}
	return []RuleResult{res}
}
