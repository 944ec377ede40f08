package engine

import "context"

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
// response then holds the steps evaluated so far.
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
