package engine

// WithBackgroundUser names the user the host's background controller
// writes as (upstream's --backgroundServiceAccountName, such as
// "system:serviceaccount:kyverno:kyverno-background-controller"): the
// admission requests of that user, the controller's own writes of
// mutate-existing targets and generated resources, are not evaluated by
// the MutatingPolicies and GeneratingPolicies (and their namespaced
// kinds) whose skipBackgroundRequests is on (the default), as upstream's
// webhooks skip them; so a policy's background write is not undone by
// another policy's mutation at admission. Empty: no user is the
// controller.
func WithBackgroundUser(username string) Option {
	return func(c *config) error { c.backgroundUser = username; return nil }
}

// backgroundRequest reports whether p skips rs: an admission request (not
// a scan, not the controller's evaluation) of the background user, and p
// skips background requests.
func (e *Engine) backgroundRequest(rs *reqState, p *Policy) bool {
	return p.skipBackground && e.cfg.backgroundUser != "" && !rs.req.Background && !rs.req.Controller &&
		rs.req.UserInfo.Username == e.cfg.backgroundUser
}

// backgroundRule reports whether a ClusterPolicy's rule skips rs: a
// generate or mutate-existing rule with skipBackgroundRequests (the
// default) on an admission request of the background user, as upstream's
// webhooks leave such rules out of the UpdateRequests they make.
func (e *Engine) backgroundRule(rs *reqState, r *rule) bool {
	if !r.skipBackground || e.cfg.backgroundUser == "" || rs.req.Background || rs.req.Controller ||
		rs.req.UserInfo.Username != e.cfg.backgroundUser {
		return false
	}
	return r.generate != nil || (r.mutate != nil && len(r.mutate.targets) > 0)
}
