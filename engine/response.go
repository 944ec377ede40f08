package engine

import "github.com/gavelpolicy/gavel/api"

// Status is the outcome of a rule.
type Status string

// Rule statuses.
const (
	StatusPass  Status = "pass"
	StatusFail  Status = "fail"
	StatusWarn  Status = "warn"
	StatusError Status = "error"
	StatusSkip  Status = "skip"
)

// RuleType says what kind of rule produced a result.
type RuleType string

// Rule types.
const (
	Validation  RuleType = "Validation"
	Mutation    RuleType = "Mutation"
	Generation  RuleType = "Generation"
	ImageVerify RuleType = "ImageVerify"
)

// RuleResult is the result of one rule for one resource.
type RuleResult struct {
	Name    string
	Type    RuleType
	Status  Status
	Message string
	// Exceptions lists "namespace/name" of the PolicyExceptions that
	// turned this result into a skip.
	Exceptions []string
	// PodSecurityChecks lists the failed Pod Security controls. Results
	// of one response that report the same checks share the slice (and
	// the Images in it): read only.
	PodSecurityChecks []PodSecurityCheck
	// EmitWarning is set when the rule asks for an admission warning.
	EmitWarning bool
	// Properties are the rule's reportProperties.
	Properties map[string]string
	// GeneratedResources are the resources a generate rule produced (when
	// evaluated with a client that can produce them).
	GeneratedResources []map[string]any
	// PatchedTargets are mutate-existing targets after patching.
	PatchedTargets []map[string]any
	// Err is the cause of an error result when there is one, nil
	// otherwise: errors.Is(Err, ErrLimitExceeded) tells a result stopped by
	// one of the engine's Limits (errors.As gives the *LimitError),
	// errors.Is(Err, context.DeadlineExceeded) one stopped by a deadline.
	Err error
}

// PodSecurityCheck is one failed Pod Security control.
type PodSecurityCheck struct {
	ID              string
	Name            string
	ForbiddenReason string
	ForbiddenDetail string
	Images          []string
}

// PolicyResult holds the results of one policy for one resource.
type PolicyResult struct {
	// Policy is the compiled policy.
	Policy *Policy
	// Resource is the resource the policy was evaluated on.
	Resource map[string]any
	// PatchedResource is the resource after this policy's mutations (for
	// mutate; otherwise equal to Resource).
	PatchedResource map[string]any
	// FailureAction is the effective action for this resource after
	// overrides (Audit or Enforce).
	FailureAction api.ValidationFailureAction
	// Rules are the results of the rules that applied, in order.
	Rules []RuleResult
}

// Response is the result of a Validate, Mutate or Generate call.
type Response struct {
	// Policies holds one entry per evaluated policy, in order.
	Policies []PolicyResult
	// Resource is the final resource (after all mutations for Mutate).
	Resource map[string]any
	// Patch is the RFC 6902 patch from the request object to Resource
	// (Mutate only), ready for an AdmissionReview response.
	Patch []byte
	// UpdateRequests are the generate and mutate-existing requests queued
	// by this call.
	UpdateRequests []*api.UpdateRequest
}

// Blocked reports whether an Enforce-mode validate rule failed or errored,
// that is whether an admission controller must deny the request.
func (r *Response) Blocked() bool {
	for _, p := range r.Policies {
		if !p.FailureAction.IsEnforce() {
			continue
		}
		for _, rr := range p.Rules {
			if rr.Type == Validation || rr.Type == ImageVerify {
				if rr.Status == StatusFail || rr.Status == StatusError {
					return true
				}
			}
		}
	}
	return false
}
