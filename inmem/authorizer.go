package inmem

import (
	"context"
	"strings"

	"github.com/gavelpolicy/gavel/engine"
)

// Authorizer is an in-memory engine.Authorizer for the authorizer variable
// of CEL expressions: a list of rules, each allowing or denying a user (or
// a group, "group:<name>") a verb on a resource or a path. The first rule
// that matches a check decides; a check no rule matches is denied. Its
// rules are fixed by NewAuthorizer: it is safe for concurrent use.
type Authorizer struct {
	rules []AuthzRule
}

// AuthzRule is one rule of an Authorizer. Empty fields and "*" match
// anything.
type AuthzRule struct {
	// Allow tells an allowing rule from a denying one.
	Allow bool
	// Subject is a user name, or "group:<name>".
	Subject string
	Verb    string
	// APIGroup, Resource, Subresource, Namespace and Name select
	// resource checks; Path selects non-resource checks.
	APIGroup, Resource, Subresource, Namespace, Name string
	Path                                             string
	// Reason is the reason returned with the decision.
	Reason string
}

// NewAuthorizer returns an Authorizer with the given rules.
func NewAuthorizer(rules ...AuthzRule) *Authorizer {
	return &Authorizer{rules: append([]AuthzRule(nil), rules...)}
}

// Authorize implements engine.Authorizer.
func (a *Authorizer) Authorize(_ context.Context, c engine.AuthorizationCheck) (bool, string, error) {
	for _, r := range a.rules {
		if r.matches(c) {
			return r.Allow, r.Reason, nil
		}
	}
	return false, "no rule allows it", nil
}

func (r *AuthzRule) matches(c engine.AuthorizationCheck) bool {
	if !r.subject(c) || !anyOf(r.Verb, c.Verb) {
		return false
	}
	if !c.ResourceRequest {
		return r.Resource == "" && anyOf(r.Path, c.Path)
	}
	return r.Path == "" && anyOf(r.APIGroup, c.APIGroup) && anyOf(r.Resource, c.Resource) &&
		anyOf(r.Subresource, c.Subresource) && anyOf(r.Namespace, c.Namespace) && anyOf(r.Name, c.Name)
}

func (r *AuthzRule) subject(c engine.AuthorizationCheck) bool {
	if r.Subject == "" || r.Subject == "*" {
		return true
	}
	if g, ok := strings.CutPrefix(r.Subject, "group:"); ok {
		for _, cg := range c.User.Groups {
			if cg == g {
				return true
			}
		}
		return false
	}
	return r.Subject == c.User.Username
}

func anyOf(pattern, value string) bool { return pattern == "" || pattern == "*" || pattern == value }
