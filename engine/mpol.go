package engine

import (
	"github.com/gavelpolicy/gavel/internal/policykey"
	celcommon "github.com/google/cel-go/common"
	celast "github.com/google/cel-go/common/ast"
	celparser "github.com/google/cel-go/parser"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1alpha1 "k8s.io/api/admissionregistration/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/autogen"
	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
	"github.com/gavelpolicy/gavel/internal/match"
	"github.com/gavelpolicy/gavel/internal/typeconv"
)

// Messages of the results of CEL mutating policies, as upstream gives
// them.
const (
	msgMutationSuccess    = "success"
	msgMutationSkip       = "skip"
	msgMutationNotApplied = "mutation is not applied"
	msgMutationFailed     = "failed to evaluate policy: "
)

// mutator is implemented by the bodies of the kinds that mutate
// (MutatingPolicy, MutatingAdmissionPolicy): mutate evaluates the policy
// on the request for Mutate, applies its mutations to the request's object
// and appends its PolicyResults, whose rule results it appends to
// rs.results.
type mutator interface {
	mutate(rs *reqState, p *Policy, out []PolicyResult) []PolicyResult
	// reinvocable reports reinvocationPolicy IfNeeded: the policy is
	// evaluated once more when a later policy changed the object.
	reinvocable() bool
}

// mutatingPolicy is the body of a MutatingPolicy or
// NamespacedMutatingPolicy: the policy and its Pod controller variants
// (autogen), each with its matchConstraints and compiled body.
type mutatingPolicy struct {
	// namespace is a NamespacedMutatingPolicy's
	namespace string
	env       *cel.Env
	variants  []mpolVariant
	reinvoke  bool
	// targeted is set when targetMatchConstraints select the resources to
	// mutate: the trigger itself is not mutated at admission
	targeted bool
	// existing is spec.evaluation.mutateExisting: the policy mutates the
	// existing resources targetMatch (or, without resource rules, the
	// matchConstraints) selects, or those its target expression resolves
	existing    bool
	targetMatch *celpolicy.Constraints
	targetExpr  bool
}

type mpolVariant struct {
	match *celpolicy.Constraints
	body  *celpolicy.Mutating
}

// compileMutatingPolicy compiles a MutatingPolicy: its body, its
// matchConstraints and its Pod controller variants.
func (e *Engine) compileMutatingPolicy(p *api.MutatingPolicy) (*Policy, error) {
	spec := &p.Spec
	cp := &Policy{src: p, kind: api.KindOf(p), key: policykey.Key(p), annotations: p.GetAnnotations(),
		background: spec.BackgroundEnabled(), admission: spec.AdmissionEnabled(),
		failurePolicy: celFailurePolicy(spec.FailurePolicy), types: typeBit(Mutation),
		failureAction: api.Audit, action: api.Audit}
	if wc := spec.WebhookConfiguration; wc != nil && wc.TimeoutSeconds != nil {
		cp.timeout = *wc.TimeoutSeconds
	}
	path := field.NewPath("spec")
	errs := validateMutatingPolicy(spec, path)
	body := &mutatingPolicy{namespace: p.GetNamespace(), reinvoke: spec.GetReinvocationPolicy() == admissionregistrationv1.IfNeededReinvocationPolicy}
	body.existing = spec.MutateExistingEnabled()
	cp.skipBackground = spec.SkipBackgroundRequestsEnabled()
	if t := spec.TargetMatchConstraints; t != nil {
		body.targeted = len(t.ResourceRules) > 0 || t.Expression != ""
		body.targetExpr = t.Expression != ""
		if len(t.ResourceRules) > 0 {
			var terrs field.ErrorList
			body.targetMatch, terrs = celpolicy.CompileConstraints(&t.MatchResources, path.Child("targetMatchConstraints"), false)
			errs = append(errs, terrs...)
		}
	}
	env, err := e.mpolEnv()
	if err != nil {
		return nil, &CompileError{Policy: cp.key, Errs: field.ErrorList{field.InternalError(path, err)}}
	}
	body.env = env
	// the variants keep the policy's variables and JSON patches: their
	// programs are shared
	progs := &celpolicy.Programs{}
	v, verrs := body.compileVariant(spec, path, false, progs)
	errs = append(errs, verrs...)
	body.variants = append(body.variants, v)
	if len(errs) == 0 {
		cp.variants = ownVariant(spec.MatchConstraints, spec.MatchConditions)
		for _, av := range autogen.MutatingPolicy(spec) {
			v, verrs := body.compileVariant(av.Spec, field.NewPath("status", "autogen", "configs").Key(av.Config).Child("spec"), true, progs)
			errs = append(errs, verrs...)
			body.variants = append(body.variants, v)
			cp.variants = append(cp.variants, autogenVariant(av.Config, av.Targets, av.Spec.MatchConstraints, av.Spec.MatchConditions))
		}
	}
	if len(errs) > 0 {
		return nil, &CompileError{Policy: cp.key, Errs: errs}
	}
	cp.body = body
	return cp, nil
}

// validateMutatingPolicy checks what upstream checks of a MutatingPolicy
// besides its expressions.
func validateMutatingPolicy(spec *policiesv1alpha1.MutatingPolicySpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.MatchConstraints == nil || len(spec.MatchConstraints.ResourceRules) == 0 {
		errs = append(errs, field.Required(path.Child("matchConstraints"), "a matchConstraints with at least one resource rule is required"))
	}
	if !spec.AdmissionEnabled() && !spec.MutateExistingEnabled() {
		errs = append(errs, field.Forbidden(path.Child("evaluation"), "disabling both admission and mutateExisting evaluation modes is not allowed"))
	}
	if mode := spec.EvaluationMode(); mode != api.EvaluationModeKubernetes {
		errs = append(errs, field.NotSupported(path.Child("evaluation", "mode"), mode, []string{api.EvaluationModeKubernetes}))
	}
	switch rp := spec.ReinvocationPolicy; rp {
	case "", admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.IfNeededReinvocationPolicy:
	default:
		errs = append(errs, field.NotSupported(path.Child("reinvocationPolicy"), rp, []string{"Never", "IfNeeded"}))
	}
	if spec.GenerateMutatingAdmissionPolicyEnabled() {
		// a MutatingAdmissionPolicy made of the policy evaluates its
		// matchConditions before its variables
		for i, c := range spec.MatchConditions {
			if mentionsVariables(c.Expression) {
				errs = append(errs, field.Forbidden(path.Child("matchConditions").Index(i).Child("expression"),
					"variables cannot be referenced in matchConditions when spec.autogen.mutatingAdmissionPolicy.enabled is true; native MutatingAdmissionPolicy evaluates match conditions before variables, so inline the expression instead"))
			}
		}
	}
	return errs
}

// mentionsVariables tells whether a CEL expression that parses names the
// variables identifier.
func mentionsVariables(expr string) bool {
	parsed, issues := celparser.Parse(celcommon.NewStringSource(expr, "matchCondition"))
	if issues != nil && len(issues.GetErrors()) > 0 {
		return false
	}
	found := false
	celast.PreOrderVisit(parsed.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() == celast.IdentKind && e.AsIdent() == cel.VariablesVar {
			found = true
		}
	}))
	return found
}

// mutations converts the mutations of a spec.
func mutations(in []admissionregistrationv1alpha1.Mutation) []celpolicy.Mutation {
	out := make([]celpolicy.Mutation, len(in))
	for i, m := range in {
		out[i].PatchType = string(m.PatchType)
		switch m.PatchType {
		case admissionregistrationv1alpha1.PatchTypeApplyConfiguration:
			if m.ApplyConfiguration != nil {
				out[i].Expression = m.ApplyConfiguration.Expression
			}
		case admissionregistrationv1alpha1.PatchTypeJSONPatch:
			if m.JSONPatch != nil {
				out[i].Expression = m.JSONPatch.Expression
			}
		}
	}
	return out
}

// compileVariant compiles the matchConstraints and the body of one spec.
func (b *mutatingPolicy) compileVariant(spec *policiesv1alpha1.MutatingPolicySpec, path *field.Path, lazy bool, progs *celpolicy.Programs) (mpolVariant, field.ErrorList) {
	var v mpolVariant
	var errs field.ErrorList
	v.match, errs = celpolicy.CompileConstraints(spec.MatchConstraints, path.Child("matchConstraints"), false)
	ssa := spec.EvaluationConfiguration != nil && spec.EvaluationConfiguration.UseServerSideApply
	ms := &celpolicy.MutatingSpec{MatchConditions: spec.MatchConditions, Variables: spec.Variables,
		Mutations: mutations(spec.Mutations), AuditAnnotations: spec.AuditAnnotations, FailurePolicy: spec.FailurePolicy,
		TargetMatchConditions: spec.TargetMatchConditions}
	if t := spec.TargetMatchConstraints; t != nil {
		ms.TargetExpression = t.Expression
	}
	var berrs field.ErrorList
	v.body, berrs = celpolicy.CompileMutating(b.env, ms,
		celpolicy.Kyverno, celpolicy.MutatingOptions{Options: celpolicy.Options{Lazy: lazy, Namespace: b.namespace}, ServerSideApply: ssa, Programs: progs}, path)
	return v, append(errs, berrs...)
}

func (b *mutatingPolicy) jsonMode() bool    { return false }
func (b *mutatingPolicy) reinvocable() bool { return b.reinvoke }

// The message of a mutate-existing policy's result at admission.
const msgMutateExistingQueued = "mutate existing request queued"

// validate of a mutating policy: it has no validations.
func (b *mutatingPolicy) validate(_ *reqState, _ *Policy, out []PolicyResult) []PolicyResult {
	return out
}

// mutate evaluates a MutatingPolicy on a request as upstream's engine
// does: each variant whose matchConstraints select the request, the CEL
// PolicyExceptions first, and its mutations applied to the object. In a
// background scan the object is not mutated: a policy that would change
// it fails ("mutation is not applied").
func (b *mutatingPolicy) mutate(rs *reqState, p *Policy, out []PolicyResult) []PolicyResult {
	pr := PolicyResult{Policy: p, Resource: rs.obj, PatchedResource: rs.obj, FailureAction: p.failureAction}
	if (rs.req.Background && !p.background) ||
		(api.IsNamespaced(p.src) && !match.NamespacedPolicyApplies(p.src.GetNamespace(), rs.matchRes)) ||
		rs.e.backgroundRequest(rs, p) {
		return append(out, pr)
	}
	start := len(rs.results)
	admission, controller := rs.e.admission(rs), rs.req.Controller
	switch {
	case rs.req.Background:
		b.mutateTrigger(rs, p)
	case controller:
		// an UpdateRequest queued at admission: the existing resources
		if b.existing {
			b.mutateTargets(rs, p)
		}
	default:
		if p.admission && !(b.targeted && admission) {
			b.mutateTrigger(rs, p)
		}
		// at admission, Generate queues the existing resources' mutation
		if b.existing && !admission {
			b.mutateTargets(rs, p)
		}
	}
	if n := len(rs.results); n > start {
		pr.Rules = rs.results[start:n:n]
	}
	pr.PatchedResource = rs.obj
	return append(out, pr)
}

// mutateTrigger mutates the request's object: each variant whose
// matchConstraints select the request.
func (b *mutatingPolicy) mutateTrigger(rs *reqState, p *Policy) {
	for i := range b.variants {
		v := &b.variants[i]
		ok, err := v.match.Matches(&rs.kindData().attrs)
		if err != nil {
			rs.mutationResult(RuleMatch, StatusError, "failed to execute matching: "+err.Error(), err, nil)
			return
		}
		if !ok {
			continue
		}
		b.evaluate(rs, p, v)
		if rs.ctx.Err() != nil {
			return
		}
	}
}

// evaluate evaluates one variant that applies, appending its result and
// setting the request's object to the mutated one.
func (b *mutatingPolicy) evaluate(rs *reqState, p *Policy, v *mpolVariant) {
	var in cel.Input
	if err := rs.kindInput(&in, v.body.Reads()); err != nil {
		rs.mutationResult(RuleEvaluation, StatusError, msgMutationFailed+err.Error(), err, nil)
		return
	}
	if in.Object == nil {
		return // nothing to mutate (a DELETE)
	}
	excepted, extra, err := rs.celExceptions(b.env, p, &in, true)
	if err != nil {
		rs.mutationResult(RuleEvaluation, StatusError, msgMutationFailed+err.Error(), err, nil)
		return
	}
	if len(excepted) > 0 {
		rs.exceptedResult(excepted).Type = Mutation
		return
	}
	in.Extra = extra
	schemas, err := typeconv.Builtin()
	if err != nil {
		rs.mutationResult(RuleEvaluation, StatusError, msgMutationFailed+err.Error(), err, nil)
		return
	}
	o := v.body.Mutate(rs.ctx, &in, rs.celScope(), schemas)
	rs.mutationOutcome(in.Object, o, "")
}

// mutationOutcome appends the result of a mutating body's outcome under
// the rule name upstream gives MutatingPolicies (""), and sets the
// request's object to the mutated one (but in a background scan).
func (rs *reqState) mutationOutcome(before map[string]any, o celpolicy.MutateOutcome, name string) {
	switch o.Status {
	case celpolicy.NoMatch:
		rs.mutationResult(name, StatusSkip, msgMutationSkip, nil, nil)
	case celpolicy.Error:
		rs.mutationResult(RuleEvaluation, StatusError, msgMutationFailed+o.Message, o.Err, nil)
	case celpolicy.Pass:
		changed := !deepEqual(o.Object, before)
		if changed && rs.req.Background {
			rs.mutationResult(name, StatusFail, msgMutationNotApplied, nil, nil)
			return
		}
		rs.mutationResult(name, StatusPass, msgMutationSuccess, nil, o.AuditAnnotations)
		if changed {
			rs.setObject(o.Object)
		}
	}
}

// mutationResult appends a result of a CEL mutating kind.
func (rs *reqState) mutationResult(name string, status Status, msg string, err error, props map[string]string) *RuleResult {
	res := rs.celKindResult(name, status, msg, err, props)
	res.Type = Mutation
	return res
}

// mutateKinds evaluates the policies of CEL kinds that mutate, after the
// ClusterPolicies' mutations: the MutatingAdmissionPolicies, then the
// MutatingPolicies, then, once, those with reinvocationPolicy IfNeeded
// that a later policy's change calls for again (see Mutate).
func (s *PolicySet) mutateKinds(rs *reqState, resp *Response) error {
	var waiting []*Policy // IfNeeded policies invoked since the last change
	again := map[*Policy]bool{}
	for pass := 0; pass < 2; pass++ {
		for _, kind := range [...]bool{true, false} {
			for _, p := range s.policies {
				m, ok := p.body.(mutator)
				if !ok || isAdmissionPolicy(p) != kind || (pass == 1 && !again[p]) {
					continue
				}
				if err := rs.ctx.Err(); err != nil {
					return err
				}
				if pass == 1 {
					resp.Policies = withoutPolicy(resp.Policies, p)
				}
				gen, at := rs.gen, len(resp.Policies)
				resp.Policies = s.eng.runBody(rs, p, resp.Policies, func(out []PolicyResult) []PolicyResult {
					return m.mutate(rs, p, out)
				})
				if pass == 1 {
					continue
				}
				if rs.gen != gen {
					for _, w := range waiting {
						again[w] = true
					}
					waiting = waiting[:0]
				}
				if m.reinvocable() && invoked(resp.Policies[at:]) {
					waiting = append(waiting, p)
				}
			}
		}
		if len(again) == 0 {
			break
		}
	}
	return nil
}

// isAdmissionPolicy tells a MutatingAdmissionPolicy's body.
func isAdmissionPolicy(p *Policy) bool { return p.kind == api.KindMutatingAdmissionPolicy }

// invoked tells whether results show mutations evaluated: a result other
// than a skip.
func invoked(prs []PolicyResult) bool {
	for i := range prs {
		for j := range prs[i].Rules {
			if prs[i].Rules[j].Status != StatusSkip {
				return true
			}
		}
	}
	return false
}

// withoutPolicy removes the PolicyResults of p.
func withoutPolicy(prs []PolicyResult, p *Policy) []PolicyResult {
	out := prs[:0]
	for _, pr := range prs {
		if pr.Policy != p {
			out = append(out, pr)
		}
	}
	return out
}
