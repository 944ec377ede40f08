package engine

import (
	"fmt"
	"github.com/gavelpolicy/gavel/internal/policykey"

	"github.com/gavelpolicy/gavel/api"
)

// kindBody is the compiled body of a policy of a kind other than
// ClusterPolicy and Policy. Adding a kind is a case in compileKind and a
// file with its compile function and body (vpol.go, vap.go).
type kindBody interface {
	// validate evaluates the policy on the request for Validate and
	// appends its PolicyResults to out; the rule results it makes are
	// appended to rs.results (see reqState.nextResult), so that the
	// response's results share one array.
	validate(rs *reqState, p *Policy, out []PolicyResult) []PolicyResult
	// jsonMode reports a body that evaluates JSON payloads (see
	// PolicySet.ValidatePayload).
	jsonMode() bool
}

// compileKind compiles a policy of a CEL kind.
func (e *Engine) compileKind(p api.PolicyObject) (*Policy, error) {
	switch p := p.(type) {
	case *api.ValidatingPolicy:
		return e.compileValidatingPolicy(p)
	case *api.ImageValidatingPolicy:
		return e.compileImageValidatingPolicy(p)
	case *api.ValidatingAdmissionPolicy:
		return e.compileVAP(p)
	case *api.ValidatingAdmissionPolicyBinding:
		return e.compileVAPBinding(p)
	case *api.MutatingPolicy:
		return e.compileMutatingPolicy(p)
	case *api.MutatingAdmissionPolicy:
		return e.compileMAP(p)
	case *api.MutatingAdmissionPolicyBinding:
		return e.compileMAPBinding(p)
	case *api.GeneratingPolicy:
		return e.compileGeneratingPolicy(p)
	case *api.DeletingPolicy:
		return e.compileDeletingPolicy(p)
	case *api.CleanupPolicy:
		return e.compileCleanupPolicy(p)
	}
	// every kind api decodes has a case above
	return nil, fmt.Errorf("policy %s: kind %s has no compiler", policykey.Key(p), api.KindOf(p))
}

// bindingTarget is implemented by the bodies of bindings: the name and
// the kind of the policy they bind.
type bindingTarget interface {
	boundPolicy() string
	boundKind() string
}

// bindable is implemented by the bodies of policies that bindings bind:
// with returns a body with the bindings added (the body itself is not
// modified).
type bindable interface {
	withBindings(bindings []*Policy) kindBody
}

// attachBindings returns the policies of a set with the bindings among
// them attached to the policies they name (copies of those policies, with
// the bindings they already had and the new ones); the bindings
// themselves are left out, as are bindings of policies the set does not
// hold (the API server ignores them too).
func attachBindings(policies []*Policy) []*Policy {
	byPolicy := map[string][]*Policy{}
	n := 0
	for _, p := range policies {
		if b, ok := p.body.(bindingTarget); ok {
			k := b.boundKind() + "/" + b.boundPolicy()
			byPolicy[k] = append(byPolicy[k], p)
			n++
		}
	}
	if n == 0 {
		return policies
	}
	out := make([]*Policy, 0, len(policies)-n)
	for _, p := range policies {
		if _, ok := p.body.(bindingTarget); ok {
			continue
		}
		if b, ok := p.body.(bindable); ok && len(byPolicy[p.kind+"/"+p.name()]) > 0 {
			cp := *p
			cp.body = b.withBindings(byPolicy[p.kind+"/"+p.name()])
			p = &cp
		}
		out = append(out, p)
	}
	return out
}
