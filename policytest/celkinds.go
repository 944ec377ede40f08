package policytest

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// ruleless reports whether a policy's results are matched with a test
// result whatever its rule field: the kinds without rules
// (ValidatingPolicy, ValidatingAdmissionPolicy, ...), as upstream's
// isRulelessPolicyKind.
func ruleless(p *engine.Policy) bool {
	k := api.KindOf(p.Source())
	return k != api.KindClusterPolicy && k != api.KindPolicy
}

// keepsEmpty reports whether upstream's test command keeps the response
// of a policy that gave no result on a resource (it is then an "excluded"
// row rather than no row at all): always, but for ImageValidatingPolicies,
// whose engine answers only for the policies that apply, and
// ValidatingPolicies, whose empty responses it keeps only when the
// matchConstraints of one of the policy's variants (the policy and its
// Pod controller variants) have selectors, exclusions, resource names, or
// other than one resource rule (and never in JSON mode).
func keepsEmpty(p *engine.Policy) bool {
	if _, ok := p.Source().(*api.ImageValidatingPolicy); ok {
		return false
	}
	vp, ok := p.Source().(*api.ValidatingPolicy)
	if !ok {
		return true
	}
	if vp.Spec.EvaluationMode() == api.EvaluationModeJSON {
		return false
	}
	for _, v := range p.Variants() {
		if !simpleConstraints(v.MatchConstraints) {
			return true
		}
	}
	return false
}

// simpleConstraints is upstream's hasSelector: one resource rule without
// resource names, no exclusions, no selector with requirements.
func simpleConstraints(m *admissionregistrationv1.MatchResources) bool {
	if m == nil {
		return false
	}
	if s := m.NamespaceSelector; s != nil && (len(s.MatchLabels) > 0 || len(s.MatchExpressions) > 0) {
		return false
	}
	if s := m.ObjectSelector; s != nil && (len(s.MatchLabels) > 0 || len(s.MatchExpressions) > 0) {
		return false
	}
	return len(m.ExcludeResourceRules) == 0 && len(m.ResourceRules) == 1 && len(m.ResourceRules[0].ResourceNames) == 0
}
