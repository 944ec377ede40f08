package engine

// backgroundRequest reports whether p skips rs: an admission request of
// the host's background controller (Request.ControllerWrite; not a scan,
// not the controller's own evaluation), and p skips background requests.
func (e *Engine) backgroundRequest(rs *reqState, p *Policy) bool {
	return p.skipBackground && controllerWrite(rs.req)
}

func controllerWrite(req *Request) bool {
	return req.ControllerWrite && !req.Background && !req.Controller
}

// backgroundRule reports whether a ClusterPolicy's rule skips rs: a
// generate or mutate-existing rule with skipBackgroundRequests (the
// default) on an admission request of the background controller, as
// upstream's webhooks leave such rules out of the UpdateRequests they
// make.
func (e *Engine) backgroundRule(rs *reqState, r *rule) bool {
	if !r.skipBackground || !controllerWrite(rs.req) {
		return false
	}
	return r.generate != nil || (r.mutate != nil && len(r.mutate.targets) > 0)
}
