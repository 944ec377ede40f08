package engine

import (
	"github.com/gavelpolicy/gavel/internal/polex"
	"reflect"

	"github.com/gavelpolicy/gavel/internal/podsecurity"
)

// decodedPod returns the request object decoded for Pod Security checks,
// once per object.
func (rs *reqState) decodedPod() (*podsecurity.Decoded, error) {
	if rs.pod == nil || rs.podOf == nil || !sameMap(rs.podOf, rs.obj) {
		rs.pod, rs.podErr = podsecurity.Decode(rs.obj)
		rs.podOf = rs.obj
	}
	return rs.pod, rs.podErr
}

// sameMap reports whether a and b are the same map value.
func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// validatePodSecurity evaluates a validate.podSecurity rule. As upstream,
// the exemptions of the first matching PolicyException with a podSecurity
// block apply on top of the rule's own; when they make a failing pod pass,
// the result is a skip naming the exception.
func (e *Engine) validatePodSecurity(rs *reqState, r *rule, excs []*polex.Exception) []RuleResult {
	pod, err := rs.decodedPod()
	if err != nil {
		return []RuleResult{r.errorResult("failed to evaluate pod security", err)}
	}
	var exc *polex.Exception
	for _, x := range excs {
		if len(x.PodSecurity()) > 0 {
			exc = x
			break
		}
	}
	var res podsecurity.Result
	if exc != nil {
		res, err = r.validate.podSecurity.EvaluateDecoded(pod, exc.PodSecurity())
	} else {
		res, err = r.validate.podSecurity.EvaluateDecoded(pod, nil)
	}
	if err != nil {
		return []RuleResult{r.errorResult("failed to evaluate pod security", err)}
	}
	switch {
	case res.Exempted:
		out := r.result(StatusSkip, polex.SkipMessage(exc.Key()))
		out.Exceptions = []string{exc.Key()}
		return []RuleResult{out}
	case res.Allowed:
		return rs.single(r.result(StatusPass, res.Message))
	}
	out := r.result(StatusFail, res.Message)
	// rules reporting the same checks share them, read only, as the
	// checks' images
	out.PodSecurityChecks = podsecurity.ConvertChecks(pod, res.Checks, podSecurityChecks)
	return rs.single(out)
}

// podSecurityChecks converts the failed checks of a rule.
func podSecurityChecks(checks []podsecurity.CheckResult) []PodSecurityCheck {
	out := make([]PodSecurityCheck, len(checks))
	for i := range checks {
		c := &checks[i]
		out[i] = PodSecurityCheck{
			ID: c.ID, Name: c.ControlName, ForbiddenReason: c.ForbiddenReason, ForbiddenDetail: c.ForbiddenDetail, Images: c.Images,
		}
	}
	return out
}
