package engine

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
	"github.com/gavelpolicy/gavel/internal/typeconv"
)

// Messages of the results of MutatingAdmissionPolicies, as upstream's CLI
// gives them.
const (
	msgMAPApplied    = "mutation is successfully applied"
	msgMAPConditions = "match conditions aren't met"
)

// mapPolicy is the body of a MutatingAdmissionPolicy: its
// matchConstraints and body, and the bindings of the set it is in.
type mapPolicy struct {
	match     *celpolicy.Constraints
	body      *celpolicy.Mutating
	paramKind *admissionregistrationv1.ParamKind
	bindings  []*Policy
	reinvoke  bool
}

// mapBinding is the body of a MutatingAdmissionPolicyBinding.
type mapBinding struct {
	policyName string
	// match is nil when the binding has no matchResources
	match    *celpolicy.Constraints
	paramRef *admissionregistrationv1.ParamRef
}

func (b *mapBinding) boundPolicy() string { return b.policyName }
func (b *mapBinding) boundKind() string   { return api.KindMutatingAdmissionPolicy }
func (b *mapBinding) jsonMode() bool      { return false }

// validate of a binding: a binding is evaluated with its policy only.
func (b *mapBinding) validate(_ *reqState, _ *Policy, out []PolicyResult) []PolicyResult { return out }

// compileMAP compiles a MutatingAdmissionPolicy on the API server's
// environment: the patch types are declared in its mutations only.
func (e *Engine) compileMAP(p *api.MutatingAdmissionPolicy) (*Policy, error) {
	spec := &p.Spec
	cp := &Policy{src: p, kind: api.KindMutatingAdmissionPolicy, key: p.GetName(), annotations: p.GetAnnotations(),
		background: true, admission: true, failurePolicy: celFailurePolicy(spec.FailurePolicy),
		failureAction: api.Audit, action: api.Audit, types: typeBit(Mutation)}
	path := field.NewPath("spec")
	var errs field.ErrorList
	if pk := spec.ParamKind; pk != nil && (pk.APIVersion == "" || pk.Kind == "") {
		errs = append(errs, field.Required(path.Child("paramKind"), "apiVersion and kind are required"))
	}
	if spec.MatchConstraints == nil || len(spec.MatchConstraints.ResourceRules) == 0 {
		errs = append(errs, field.Required(path.Child("matchConstraints", "resourceRules"), ""))
	}
	switch rp := spec.ReinvocationPolicy; rp {
	case "", admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.IfNeededReinvocationPolicy:
	default:
		errs = append(errs, field.NotSupported(path.Child("reinvocationPolicy"), rp, []string{"Never", "IfNeeded"}))
	}
	body := &mapPolicy{paramKind: spec.ParamKind, reinvoke: spec.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy}
	var merrs field.ErrorList
	body.match, merrs = celpolicy.CompileConstraints(spec.MatchConstraints, path.Child("matchConstraints"), true)
	errs = append(errs, merrs...)
	env, err := e.celEnv()
	if err != nil {
		return nil, &CompileError{Policy: cp.key, Errs: field.ErrorList{field.InternalError(path, err)}}
	}
	muts := make([]celpolicy.Mutation, len(spec.Mutations))
	for i, m := range spec.Mutations {
		muts[i].PatchType = string(m.PatchType)
		switch {
		case m.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
			muts[i].Expression = m.ApplyConfiguration.Expression
		case m.PatchType == admissionregistrationv1.PatchTypeJSONPatch && m.JSONPatch != nil:
			muts[i].Expression = m.JSONPatch.Expression
		}
	}
	var berrs field.ErrorList
	body.body, berrs = celpolicy.CompileMutating(env, &celpolicy.MutatingSpec{MatchConditions: spec.MatchConditions, Variables: spec.Variables,
		Mutations: muts, FailurePolicy: spec.FailurePolicy},
		celpolicy.APIServer, celpolicy.MutatingOptions{Options: celpolicy.Options{Params: spec.ParamKind != nil}}, path)
	errs = append(errs, berrs...)
	if len(errs) > 0 {
		return nil, &CompileError{Policy: cp.key, Errs: errs}
	}
	cp.body = body
	cp.variants = ownVariant(spec.MatchConstraints, spec.MatchConditions)
	return cp, nil
}

// compileMAPBinding compiles a MutatingAdmissionPolicyBinding.
func (e *Engine) compileMAPBinding(p *api.MutatingAdmissionPolicyBinding) (*Policy, error) {
	spec := &p.Spec
	cp := &Policy{src: p, kind: api.KindMutatingAdmissionPolicyBinding, key: p.GetName(), annotations: p.GetAnnotations(),
		failurePolicy: api.Fail}
	path := field.NewPath("spec")
	var errs field.ErrorList
	if spec.PolicyName == "" {
		errs = append(errs, field.Required(path.Child("policyName"), ""))
	}
	body := &mapBinding{policyName: spec.PolicyName, paramRef: spec.ParamRef}
	errs = append(errs, validateParamRef(spec.ParamRef, path.Child("paramRef"))...)
	if m := spec.MatchResources; m != nil {
		var merrs field.ErrorList
		body.match, merrs = celpolicy.CompileConstraints(m, path.Child("matchResources"), true)
		errs = append(errs, merrs...)
	}
	if len(errs) > 0 {
		return nil, &CompileError{Policy: cp.key, Errs: errs}
	}
	cp.body = body
	return cp, nil
}

// validateParamRef checks a binding's paramRef as the API server does.
func validateParamRef(r *admissionregistrationv1.ParamRef, rp *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if (r.Name == "") == (r.Selector == nil) {
		errs = append(errs, field.Invalid(rp, "", "exactly one of name and selector must be set"))
	}
	if a := r.ParameterNotFoundAction; a != nil && *a != admissionregistrationv1.AllowAction && *a != admissionregistrationv1.DenyAction {
		errs = append(errs, field.NotSupported(rp.Child("parameterNotFoundAction"), *a, []string{"Allow", "Deny"}))
	}
	if r.Selector != nil {
		if _, err := metav1.LabelSelectorAsSelector(r.Selector); err != nil {
			errs = append(errs, field.Invalid(rp.Child("selector"), r.Selector, err.Error()))
		}
	}
	return errs
}

func (b *mapPolicy) jsonMode() bool    { return false }
func (b *mapPolicy) reinvocable() bool { return b.reinvoke }

// validate of a mutating admission policy: it has no validations.
func (b *mapPolicy) validate(_ *reqState, _ *Policy, out []PolicyResult) []PolicyResult { return out }

func (b *mapPolicy) withBindings(bindings []*Policy) kindBody {
	out := *b
	out.bindings = append([]*Policy(nil), b.bindings...)
	for _, nb := range bindings {
		dup := false
		for _, ob := range out.bindings {
			dup = dup || ob.name() == nb.name()
		}
		if !dup {
			out.bindings = append(out.bindings, nb)
		}
	}
	return &out
}

// mutate evaluates a MutatingAdmissionPolicy as the API server does: when
// its matchConstraints select the request, for each binding whose
// matchResources select it, with each parameter object of the binding (an
// invocation each), its mutations applied in order. Each binding that
// applies gives a PolicyResult with one result per invocation, named after
// the policy and carrying the binding's name (PropertyMAPBinding). A
// policy without bindings is evaluated once, without parameters (as
// upstream's CLI does). In a
// background scan the object is not mutated: an invocation that would
// change it fails ("mutation is not applied").
func (b *mapPolicy) mutate(rs *reqState, p *Policy, out []PolicyResult) []PolicyResult {
	pr := PolicyResult{Policy: p, Resource: rs.obj, PatchedResource: rs.obj, FailureAction: p.failureAction}
	if rs.gvk.Group == api.GroupAdmissionRegistration && admissionConfigurationKinds[rs.gvk.Kind] {
		return append(out, pr)
	}
	ok, err := b.match.Matches(&rs.kindData().attrs)
	if err != nil {
		return append(out, mapResult(rs, pr, func() {
			rs.mutationResult(p.name(), StatusError, "failed to execute matching: "+err.Error(), err, nil)
		}))
	}
	if !ok {
		return append(out, pr)
	}
	if len(b.bindings) == 0 {
		return append(out, mapResult(rs, pr, func() { b.invoke(rs, p, nil, nil) }))
	}
	n := len(out)
	for _, bp := range b.bindings {
		bb := bp.body.(*mapBinding)
		props := map[string]string{PropertyMAPBinding: bp.name()}
		if bb.match != nil {
			ok, err := bb.match.Matches(&rs.kindData().attrs)
			if err != nil {
				out = append(out, mapResult(rs, pr, func() {
					rs.mutationResult(p.name(), StatusError, "failed to execute matching: "+err.Error(), err, props)
				}))
				continue
			}
			if !ok {
				continue
			}
		}
		out = append(out, mapResult(rs, pr, func() {
			params, err := bindingParams(rs, b.paramKind, bb.paramRef)
			if err != nil {
				rs.mutationResult(p.name(), StatusError, "failed to configure binding: "+err.Error(), err, props)
				return
			}
			for _, param := range params {
				b.invoke(rs, p, param, props)
				if rs.ctx.Err() != nil {
					return
				}
			}
		}))
	}
	if len(out) == n {
		out = append(out, pr)
	}
	return out
}

// mapResult runs eval, which appends rule results, and returns pr with
// them and the object they left.
func mapResult(rs *reqState, pr PolicyResult, eval func()) PolicyResult {
	start := len(rs.results)
	eval()
	if n := len(rs.results); n > start {
		pr.Rules = rs.results[start:n:n]
	}
	pr.PatchedResource = rs.obj
	return pr
}

// invoke evaluates the policy with one parameter object (nil: none) and
// appends its result.
func (b *mapPolicy) invoke(rs *reqState, p *Policy, param map[string]any, props map[string]string) {
	reads := b.body.Reads()
	var ns map[string]any
	if reads.Namespace {
		var err error
		if ns, err = rs.vapNamespace(); err != nil {
			rs.mutationResult(p.name(), StatusError, err.Error(), err, props)
			return
		}
	}
	var in cel.Input
	if err := rs.celInputFor(&in, false, reads.Request, param); err != nil {
		rs.mutationResult(p.name(), StatusError, err.Error(), err, props)
		return
	}
	in.Namespace = ns
	if in.Object == nil {
		return // nothing to mutate (a DELETE)
	}
	schemas, err := typeconv.Builtin()
	if err != nil {
		rs.mutationResult(p.name(), StatusError, err.Error(), err, props)
		return
	}
	before := in.Object
	o := b.body.Mutate(rs.ctx, &in, rs.celScope(), schemas)
	switch o.Status {
	case celpolicy.NoMatch:
		rs.mutationResult(p.name(), StatusSkip, msgMAPConditions, nil, props)
		return
	case celpolicy.Error:
		rs.mutationResult(p.name(), StatusError, o.Message, o.Err, props)
	case celpolicy.Pass:
		if rs.req.Background && !deepEqual(o.Object, before) {
			rs.mutationResult(p.name(), StatusFail, msgMutationNotApplied, nil, props)
			return
		}
		rs.mutationResult(p.name(), StatusPass, msgMAPApplied, nil, props)
	}
	// the mutations that succeeded stay applied (the API server skips a
	// failed mutation)
	if o.Object != nil && !rs.req.Background && !deepEqual(o.Object, before) {
		rs.setObject(o.Object)
	}
}
