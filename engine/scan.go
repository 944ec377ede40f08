package engine

import (
	"context"
	"errors"
)

// Scan evaluates a resource the way `gavel apply` and upstream's CLI do:
// the mutate rules first (Mutate), then the validate rules (Validate) and
// the generate rules (Generate) on the mutated resource. It is the one call
// a batch host needs, for instance to build reports (report.Build).
//
// The response holds the policy results of the three steps in that order,
// only those with rule results; Resource and Patch are Mutate's, and
// UpdateRequests Generate's (queued as Generate queues them). With
// req.Background set the request is a background scan: no admission data,
// and the rules of policies with background: false are not evaluated. The
// request's object is never modified. An error stops the scan: the
// response then holds the steps evaluated so far. A verifyImages rule
// that could not verify for want of an ImageVerifier is one error result
// (Mutate's): its checks at validation (digest, annotation) are left out.
func (s *PolicySet) Scan(ctx context.Context, req *Request) (*Response, error) {
	if req == nil {
		return nil, ErrNoObject
	}
	out := &Response{}
	keep := func(r *Response) {
		for i := range r.Policies {
			if len(r.Policies[i].Rules) > 0 {
				out.Policies = append(out.Policies, r.Policies[i])
			}
		}
	}
	m, err := s.Mutate(ctx, req)
	if m != nil {
		keep(m)
		out.Resource, out.Patch = m.Resource, m.Patch
	}
	if err != nil {
		return out, err
	}
	next := *req
	if req.Object != nil {
		next.Object = m.Resource
	}
	v, err := s.Validate(ctx, &next)
	if v != nil {
		dropUnverifiable(v, m)
		keep(v)
	}
	if err != nil {
		return out, err
	}
	g, err := s.Generate(ctx, &next)
	if g != nil {
		keep(g)
		out.UpdateRequests = g.UpdateRequests
	}
	return out, err
}

// dropUnverifiable removes from v (a Validate response) the results of
// the verifyImages rules whose results in m (the Mutate response before
// it) are errors for want of an ImageVerifier.
func dropUnverifiable(v, m *Response) {
	type key struct {
		p    *Policy
		rule string
	}
	var skip map[key]bool
	for p, r := range m.Rules() {
		if r.Type == ImageVerify && r.Status == StatusError && errors.Is(r.Err, ErrNotConfigured) {
			if skip == nil {
				skip = map[key]bool{}
			}
			skip[key{p.Policy, r.Name}] = true
		}
	}
	if skip == nil {
		return
	}
	for i := range v.Policies {
		pr := &v.Policies[i]
		kept := pr.Rules[:0:0]
		for _, r := range pr.Rules {
			if r.Type != ImageVerify || !skip[key{pr.Policy, r.Name}] {
				kept = append(kept, r)
			}
		}
		pr.Rules = kept
	}
}
