package engine

import (
	"iter"
	"time"

	"github.com/gavelpolicy/gavel/api"
)

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
	// Name is the rule's; for the CEL kinds upstream's: "" for a
	// ValidatingPolicy's results (RuleException, RuleEvaluation,
	// RuleMatch for the others), the policy's name for a
	// ValidatingAdmissionPolicy's.
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
	// EmitWarning is set when the rule asks for an admission warning
	// (for the CEL kinds: a failure or error under validationActions
	// Warn).
	EmitWarning bool
	// Properties are the rule's reportProperties; for the CEL kinds the
	// audit annotations, cel.validationIndex (the failing validation) and
	// binding (PropertyBinding).
	Properties map[string]string
	// GeneratedResources are the resources a generate rule produced (when
	// evaluated with a client that can produce them).
	GeneratedResources []map[string]any
	// PatchedTargets are mutate-existing targets after patching.
	PatchedTargets []map[string]any
	// Err is the cause of an error result, set on every one (an error
	// with the message when nothing more precise is known), nil on the
	// other results: errors.Is(Err, ErrLimitExceeded) tells a result
	// stopped by one of the engine's Limits (errors.As gives the
	// *LimitError), errors.Is(Err, context.DeadlineExceeded) one stopped by
	// a deadline, errors.Is(Err, ErrNotConfigured) one whose rule needs a
	// host dependency the engine was not given.
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
	// overrides (Audit or Enforce); for the CEL kinds, Enforce when the
	// validation actions hold Deny.
	FailureAction api.ValidationFailureAction
	// Rules are the results of the rules that applied, in order.
	Rules []RuleResult
	// Duration is the time the policy's rules took, with the engine
	// option WithPolicyTiming (zero without it).
	Duration time.Duration

	// perRule: the rules' own failure actions decide whether a failure
	// blocks (ClusterPolicy and Policy), and enforcedFail holds whether
	// one that failed is Enforce (Policy.ruleEnforced)
	perRule, enforcedFail bool
}

// Response is the result of a Validate, Mutate, Generate or Scan call.
type Response struct {
	// Policies holds one entry per policy of the set that has rules of the
	// call's type, in order, also when none of its rules applied (Rules is
	// then empty): PatchedResource and FailureAction are still set. A
	// ValidatingAdmissionPolicy has one entry per binding that selects the
	// resource (each binding's actions make its FailureAction). Scan
	// keeps only the entries with rule results. Use Response.Rules to
	// visit only the rule results.
	Policies []PolicyResult
	// Resource is the final resource (after all mutations for Mutate).
	Resource map[string]any
	// Patch is the RFC 6902 patch from the request object to Resource
	// (Mutate only), ready for an AdmissionReview response.
	Patch []byte
	// UpdateRequests are the generate and mutate-existing requests queued
	// by this call; one the queue refused has status Failed with the
	// queue's error as its message.
	UpdateRequests []*api.UpdateRequest
}

// Rules returns an iterator over the rule results of the response with
// their policy, in order; policies without rule results yield nothing:
//
//	for p, r := range resp.Rules() {
//		fmt.Println(p.Policy.Name(), r.Name, r.Status)
//	}
//
// Both pointers point into the response: read only.
func (r *Response) Rules() iter.Seq2[*PolicyResult, *RuleResult] {
	return func(yield func(*PolicyResult, *RuleResult) bool) {
		for i := range r.Policies {
			p := &r.Policies[i]
			for j := range p.Rules {
				if !yield(p, &p.Rules[j]) {
					return
				}
			}
		}
	}
}

// Blocked reports whether an admission controller must deny the request:
// whether one of the policies blocks it (PolicyResult.Blocks). It is the
// one block decision of gavel, used by the admission package, the report
// Store and the CLI's exit status.
func (r *Response) Blocked() bool {
	for i := range r.Policies {
		if r.Policies[i].Blocks() {
			return true
		}
	}
	return false
}

// Blocks reports whether the results of this policy deny an admission
// request, as upstream's webhooks decide:
//
//   - a validate or verifyImages rule that failed, in a policy whose
//     effective failure action (FailureAction) is Enforce; for a
//     ClusterPolicy or Policy, a rule that failed whose own effective
//     action is Enforce (its failureAction or overrides, else the
//     policy's), as upstream since kyverno#16558: a failing Audit rule
//     does not block in a policy that also has Enforce rules;
//   - a validate or verifyImages rule that errored, in an Enforce policy
//     whose failure policy (Policy.FailurePolicy) is Fail, the default;
//   - a mutate rule that errored in a policy whose failure policy is
//     Fail, or failed in an Enforce policy.
//
// Audit policies' validate results never block (upstream evaluates them
// after admission), nor do generate results (applied in the background).
//
// For the CEL kinds, FailureAction is Enforce when the validation actions
// (of the policy, or of the binding of a ValidatingAdmissionPolicy) hold
// Deny: a failure blocks, and so does an error under failurePolicy Fail.
func (p *PolicyResult) Blocks() bool {
	if p.Policy == nil {
		return false
	}
	enforce := p.FailureAction.IsEnforce()
	failBlocks := enforce
	if p.perRule {
		failBlocks = p.enforcedFail
	}
	var failOnError, known bool
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.Status != StatusFail && r.Status != StatusError {
			continue
		}
		if r.Status == StatusError && !known {
			failOnError, known = p.Policy.FailurePolicy() != api.Ignore, true
		}
		switch r.Type {
		case Validation, ImageVerify:
			if (r.Status == StatusFail && failBlocks) || (r.Status == StatusError && enforce && failOnError) {
				return true
			}
		case Mutation:
			if (r.Status == StatusFail && failBlocks) || (r.Status == StatusError && failOnError) {
				return true
			}
		}
	}
	return false
}
