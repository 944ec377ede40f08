package engine

import (
	"fmt"
	"github.com/gavelpolicy/gavel/internal/polex"
	"github.com/gavelpolicy/gavel/internal/policykey"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/autogen"
	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
	"github.com/gavelpolicy/gavel/internal/match"
)

// Rule names of the results of ValidatingPolicies, as upstream names
// them: the policy's own results have no rule name.
const (
	// RuleException names the result of a resource a CEL PolicyException
	// exempts.
	RuleException = "exception"
	// RuleEvaluation names the errors outside the validations (a
	// matchCondition, an audit annotation, an exception's condition).
	RuleEvaluation = "evaluation"
	// RuleMatch names the errors of matchConstraints (a namespace that
	// cannot be read).
	RuleMatch = "match"
)

// validatingPolicy is the body of a ValidatingPolicy or
// NamespacedValidatingPolicy: the policy and its Pod controller variants
// (autogen), each with its matchConstraints and compiled body.
type validatingPolicy struct {
	// namespace is a NamespacedValidatingPolicy's: the resource library
	// keeps to it
	namespace string
	json      bool
	env       *cel.Env
	variants  []vpolVariant
	actions   validationActions
}

type vpolVariant struct {
	match *celpolicy.Constraints
	body  *celpolicy.Validating
}

// validationActions are the validationActions of a policy or binding.
type validationActions struct{ deny, warn, audit bool }

// compileActions compiles validationActions (Deny when empty): Deny,
// Warn and Audit, each at most once, Deny and Warn not together.
func compileActions(in []admissionregistrationv1.ValidationAction, path *field.Path) (validationActions, field.ErrorList) {
	var a validationActions
	var errs field.ErrorList
	if len(in) == 0 {
		return validationActions{deny: true}, nil
	}
	seen := map[admissionregistrationv1.ValidationAction]bool{}
	for i, x := range in {
		if seen[x] {
			errs = append(errs, field.Duplicate(path.Index(i), x))
		}
		seen[x] = true
		switch x {
		case admissionregistrationv1.Deny:
			a.deny = true
		case admissionregistrationv1.Warn:
			a.warn = true
		case admissionregistrationv1.Audit:
			a.audit = true
		default:
			errs = append(errs, field.NotSupported(path.Index(i), x, []string{"Deny", "Warn", "Audit"}))
		}
	}
	if a.deny && a.warn {
		errs = append(errs, field.Invalid(path, in, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	return a, errs
}

// failureAction is the failure action the actions amount to: Enforce when
// they deny.
func (a validationActions) failureAction() api.ValidationFailureAction {
	if a.deny {
		return api.Enforce
	}
	return api.Audit
}

// celFailurePolicy is the failure policy of a CEL kind (Fail by default).
func celFailurePolicy(fp *admissionregistrationv1.FailurePolicyType) api.FailurePolicyType {
	if fp != nil && *fp == admissionregistrationv1.Ignore {
		return api.Ignore
	}
	return api.Fail
}

// compileValidatingPolicy compiles a ValidatingPolicy: its body, its
// matchConstraints and its Pod controller variants.
func (e *Engine) compileValidatingPolicy(p *api.ValidatingPolicy) (*Policy, error) {
	spec := &p.Spec
	cp := &Policy{src: p, kind: api.KindOf(p), key: policykey.Key(p), annotations: p.GetAnnotations(),
		background: spec.BackgroundEnabled(), admission: spec.AdmissionEnabled(),
		failurePolicy: celFailurePolicy(spec.FailurePolicy), types: typeBit(Validation)}
	if wc := spec.WebhookConfiguration; wc != nil && wc.TimeoutSeconds != nil {
		cp.timeout = *wc.TimeoutSeconds
	}
	path := field.NewPath("spec")
	body := &validatingPolicy{namespace: p.GetNamespace()}
	var errs field.ErrorList
	body.actions, errs = compileActions(spec.ValidationAction, path.Child("validationActions"))
	cp.failureAction = body.actions.failureAction()
	cp.action = cp.failureAction
	switch mode := spec.EvaluationMode(); mode {
	case api.EvaluationModeKubernetes:
	case api.EvaluationModeJSON:
		body.json = true
	default:
		errs = append(errs, field.NotSupported(path.Child("evaluation", "mode"), mode, []string{api.EvaluationModeKubernetes, api.EvaluationModeJSON}))
	}
	env, err := e.vpolEnv()
	if err != nil {
		return nil, &CompileError{Policy: cp.key, Errs: field.ErrorList{field.InternalError(path, err)}}
	}
	body.env = env
	v, verrs := body.compileVariant(spec, path, false)
	errs = append(errs, verrs...)
	body.variants = append(body.variants, v)
	if len(errs) == 0 && !body.json {
		cp.variants = ownVariant(spec.MatchConstraints, spec.MatchConditions)
		errs = append(errs, body.compileAutogen(spec, &cp.variants)...)
	}
	if len(errs) > 0 {
		return nil, &CompileError{Policy: cp.key, Errs: errs}
	}
	cp.body = body
	return cp, nil
}

// compileVariant compiles the matchConstraints (Kubernetes mode) and the
// body of one spec. The Pod controller variants (lazy) instantiate their
// programs on first use: a run on Pods never needs them.
func (b *validatingPolicy) compileVariant(spec *policiesv1alpha1.ValidatingPolicySpec, path *field.Path, lazy bool) (vpolVariant, field.ErrorList) {
	var v vpolVariant
	var errs field.ErrorList
	if !b.json {
		var merrs field.ErrorList
		v.match, merrs = celpolicy.CompileConstraints(spec.MatchConstraints, path.Child("matchConstraints"), false)
		errs = append(errs, merrs...)
	}
	var berrs field.ErrorList
	v.body, berrs = celpolicy.Compile(b.env, &celpolicy.Spec{MatchConditions: spec.MatchConditions, Variables: spec.Variables,
		Validations: spec.Validations, AuditAnnotations: spec.AuditAnnotations, FailurePolicy: spec.FailurePolicy},
		celpolicy.Kyverno, celpolicy.Options{Lazy: lazy, Namespace: b.namespace}, path)
	return v, append(errs, berrs...)
}

// compileAutogen compiles the Pod controller variants of the policy; it
// appends them to variants.
func (b *validatingPolicy) compileAutogen(spec *policiesv1alpha1.ValidatingPolicySpec, variants *[]Variant) field.ErrorList {
	gen, err := autogen.ValidatingPolicy(spec)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec", "autogen"), err)}
	}
	var errs field.ErrorList
	for _, av := range gen {
		v, verrs := b.compileVariant(av.Spec, field.NewPath("status", "autogen", "configs").Key(av.Config).Child("spec"), true)
		errs = append(errs, verrs...)
		b.variants = append(b.variants, v)
		*variants = append(*variants, autogenVariant(av.Config, av.Targets, av.Spec.MatchConstraints, av.Spec.MatchConditions))
	}
	return errs
}

func (b *validatingPolicy) jsonMode() bool { return b.json }

// validate evaluates a ValidatingPolicy on a request as upstream's engine
// does: each variant whose matchConstraints select the request (in JSON
// mode, the policy on the object as a JSON payload), the CEL
// PolicyExceptions first.
func (b *validatingPolicy) validate(rs *reqState, p *Policy, out []PolicyResult) []PolicyResult {
	pr := PolicyResult{Policy: p, Resource: rs.obj, PatchedResource: rs.obj, FailureAction: p.failureAction}
	if (rs.req.Background && !p.background) || (!rs.req.Background && !p.admission) ||
		(api.IsNamespaced(p.src) && !match.NamespacedPolicyApplies(p.src.GetNamespace(), rs.matchRes)) {
		return append(out, pr)
	}
	start := len(rs.results)
	for i := range b.variants {
		v := &b.variants[i]
		if !b.json {
			ok, err := v.match.Matches(&rs.kindData().attrs)
			if err != nil {
				rs.celKindResult(RuleMatch, StatusError, "failed to execute matching: "+err.Error(), err, nil)
				break
			}
			if !ok {
				continue
			}
		}
		b.evaluate(rs, p, v)
		if rs.ctx.Err() != nil {
			break
		}
	}
	if n := len(rs.results); n > start {
		pr.Rules = rs.results[start:n:n]
		for i := range pr.Rules {
			r := &pr.Rules[i]
			r.EmitWarning = b.actions.warn && (r.Status == StatusFail || r.Status == StatusError)
		}
	}
	return append(out, pr)
}

// validatePayload evaluates a JSON-mode policy on a payload.
func (b *validatingPolicy) validatePayload(rs *reqState, p *Policy, out []PolicyResult) []PolicyResult {
	pr := PolicyResult{Policy: p, Resource: rs.obj, PatchedResource: rs.obj, FailureAction: p.failureAction}
	start := len(rs.results)
	b.evaluate(rs, p, &b.variants[0])
	if n := len(rs.results); n > start {
		pr.Rules = rs.results[start:n:n]
		for i := range pr.Rules {
			r := &pr.Rules[i]
			r.EmitWarning = b.actions.warn && (r.Status == StatusFail || r.Status == StatusError)
		}
	}
	return append(out, pr)
}

// evaluate evaluates one variant that applies, appending its result.
func (b *validatingPolicy) evaluate(rs *reqState, p *Policy, v *vpolVariant) {
	var in cel.Input
	if err := b.input(rs, &in, v.body.Reads()); err != nil {
		rs.celKindResult(RuleEvaluation, StatusError, "failed to load context: "+err.Error(), err, nil)
		return
	}
	excepted, extra, err := rs.celExceptions(b.env, p, &in, !b.json)
	if err != nil {
		rs.celKindResult(RuleEvaluation, StatusError, "failed to load context: "+err.Error(), err, nil)
		return
	}
	if len(excepted) > 0 {
		rs.exceptedResult(excepted)
		return
	}
	in.Extra = extra
	outcomeResult(rs, v.body.Evaluate(rs.ctx, &in, rs.celScope()))
}

// input binds the request for a body of a ValidatingPolicy into in, a
// zero Input.
func (b *validatingPolicy) input(rs *reqState, in *cel.Input, reads celpolicy.Reads) error {
	if b.json {
		in.Object, in.Libraries = rs.obj, rs.e.celLibs
		return nil
	}
	return rs.kindInput(in, reads)
}

// kindInput binds the request for a body of a CEL policy kind into in, a
// zero Input: its objects (the object null for a DELETE), and the request
// and namespaceObject variables when the body reads them.
func (rs *reqState) kindInput(in *cel.Input, reads celpolicy.Reads) error {
	kd := rs.kindData()
	in.Object, in.OldObject, in.Libraries = kd.attrs.Object, kd.attrs.OldObject, rs.e.celLibs
	if reads.Request {
		in.Request = rs.kindRequest()
	}
	if reads.Namespace {
		ns, err := rs.kindNamespace()
		if err != nil {
			return err
		}
		in.Namespace = ns
	}
	return nil
}

// outcomeResult appends the result of a ValidatingPolicy's outcome, with
// upstream's rule names and messages.
func outcomeResult(rs *reqState, o celpolicy.Outcome) {
	switch o.Status {
	case celpolicy.NoMatch:
		rs.celKindResult("", StatusSkip, "skip", nil, nil)
	case celpolicy.Pass:
		rs.celKindResult("", StatusPass, "success", nil, o.AuditAnnotations)
	case celpolicy.Fail:
		rs.celKindResult("", StatusFail, o.Message, nil, withIndex(o.AuditAnnotations, o.Index))
	case celpolicy.Error:
		rs.celKindResult("", StatusError, "error: "+o.Message, o.Err, withIndex(nil, o.Index))
	case celpolicy.EvalError:
		rs.celKindResult(RuleEvaluation, StatusError, "failed to load context: "+o.Message, o.Err, nil)
	}
}

// withIndex adds the validation index to the properties of a result.
func withIndex(props map[string]string, i int) map[string]string {
	out := make(map[string]string, len(props)+1)
	for k, v := range props {
		out[k] = v
	}
	if _, ok := out[validationIndexProperty]; !ok {
		out[validationIndexProperty] = strconv.Itoa(i)
	}
	return out
}

// exceptedResult appends the result of a resource that CEL
// PolicyExceptions exempt: a skip (a pass when the exception with the
// highest priority says so), named "exception".
func (rs *reqState) exceptedResult(excs []*polex.CELException) *RuleResult {
	keys := make([]string, len(excs))
	chosen := excs[0]
	for i, x := range excs {
		keys[i] = x.Key()
		if x.Priority() > chosen.Priority() {
			chosen = x
		}
	}
	status, verb := StatusSkip, "skipped"
	if chosen.ReportsPass() {
		status, verb = StatusPass, "passed"
	}
	res := rs.celKindResult(RuleException, status, fmt.Sprintf("rule is %s due to policy exception: %s", verb, joinKeys(keys)), nil, nil)
	res.Exceptions = keys
	return res
}

// kindExceptions returns the host's CEL exceptions for a policy (none
// without an exception source).
func (rs *reqState) kindExceptions(p *Policy) ([]*polex.CELException, error) {
	if rs.e.cfg.exceptions == nil {
		return nil, nil
	}
	set, err := rs.exceptions()
	if err != nil || set == nil {
		return nil, err
	}
	return set.CELCandidates(p.kind, p.name()), nil
}

// celExceptions evaluates the CEL PolicyExceptions of a policy on the
// input, as upstream: an exception applies when all its matchConditions
// hold (an expired one never does; under failurePolicy Ignore, one whose
// conditions fail does not either). It returns the applying exceptions
// when one of them exempts the resource fully; otherwise the Extra of the
// input, which binds the exceptions variable: the images and values the
// applying exceptions allow (the engine's shared noCELExceptions when they
// allow none). Conditions that fail are an error, unless a full exemption
// was found before.
func (rs *reqState) celExceptions(env *cel.Env, p *Policy, in *cel.Input, ofRequest bool) ([]*polex.CELException, map[string]any, error) {
	var images, values []any
	cands, err := rs.kindExceptions(p)
	if err != nil || len(cands) == 0 {
		return nil, rs.e.noCELExceptions, err
	}
	now := rs.e.cfg.now()
	var matched []*polex.CELException
	full := false
	for _, x := range cands {
		if x.Expired(now) {
			continue
		}
		ok, err := rs.celExceptionApplies(env, x, in, ofRequest)
		if err != nil {
			if full || (p.failurePolicy == api.Ignore && rs.ctx.Err() == nil) {
				continue
			}
			return nil, nil, fmt.Errorf("policy exception %s: %w", x.Key(), err)
		}
		if !ok {
			continue
		}
		matched = append(matched, x)
		switch {
		case x.FullExemption():
			full = true
		case !full:
			for _, im := range x.Source.Spec.Images {
				images = append(images, im)
			}
			for _, v := range x.Source.Spec.AllowedValues {
				values = append(values, v)
			}
		}
	}
	if full {
		return matched, nil, nil
	}
	if images == nil && values == nil {
		return nil, rs.e.noCELExceptions, nil
	}
	if images == nil {
		images = []any{}
	}
	if values == nil {
		values = []any{}
	}
	return nil, map[string]any{celpolicy.ExceptionsVar: map[string]any{"allowedImages": images, "allowedValues": values}}, nil
}

// excCondKey keys the compiled conditions of a CEL exception: they are
// compiled on the environment of the policy they except.
type excCondKey struct {
	x   *polex.CELException
	env *cel.Env
}

type excConds struct {
	conds *celpolicy.Conditions
	err   error
}

// celExceptionApplies evaluates the matchConditions of a CEL exception,
// compiled once per exception and environment, on in (the policy's
// input). When in is the request's (kindInput; ofRequest), the request
// and namespaceObject variables the conditions read and the policy does
// not are bound too, as upstream binds them all.
func (rs *reqState) celExceptionApplies(env *cel.Env, x *polex.CELException, in *cel.Input, ofRequest bool) (bool, error) {
	k := excCondKey{x: x, env: env}
	v, ok := rs.e.celExcConds.Load(k)
	if !ok {
		conds, errs := celpolicy.CompileConditions(env.NewCompiler(false), x.Source.Spec.MatchConditions, field.NewPath("spec", "matchConditions"))
		c := &excConds{conds: conds}
		if len(errs) > 0 {
			c.err = errs.ToAggregate()
		}
		v, _ = rs.e.celExcConds.LoadOrStore(k, c)
	}
	c := v.(*excConds)
	if c.err != nil {
		return false, c.err
	}
	cin := *in
	cin.Extra = nil
	if ofRequest {
		reads := c.conds.Reads()
		if reads.Request && cin.Request == nil {
			cin.Request = rs.kindRequest()
		}
		if reads.Namespace && cin.Namespace == nil {
			ns, err := rs.kindNamespace()
			if err != nil {
				return false, err
			}
			cin.Namespace = ns
		}
	}
	return c.conds.Eval(rs.ctx, &cin, rs.celScope())
}
