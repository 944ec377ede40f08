package engine

import (
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
)

// PropertyBinding is the property of a ValidatingAdmissionPolicy's result
// that names the binding it was evaluated for (upstream's report property).
const PropertyBinding = "binding"

// PropertyMAPBinding is the property of a MutatingAdmissionPolicy's
// result that names the binding it was evaluated for (upstream's report
// property).
const PropertyMAPBinding = "mapBinding"

// vapPolicy is the body of a ValidatingAdmissionPolicy: its
// matchConstraints and body, and the bindings of the set it is in.
type vapPolicy struct {
	match     *celpolicy.Constraints
	body      *celpolicy.Validating
	paramKind *admissionregistrationv1.ParamKind
	bindings  []*Policy
}

// vapBinding is the body of a ValidatingAdmissionPolicyBinding.
type vapBinding struct {
	policyName string
	// match is nil when the binding has no matchResources
	match    *celpolicy.Constraints
	paramRef *admissionregistrationv1.ParamRef
	actions  validationActions
}

func (b *vapBinding) boundPolicy() string { return b.policyName }
func (b *vapBinding) boundKind() string   { return api.KindValidatingAdmissionPolicy }
func (b *vapBinding) jsonMode() bool      { return false }

// validate of a binding: a binding is evaluated with its policy only.
func (b *vapBinding) validate(_ *reqState, _ *Policy, out []PolicyResult) []PolicyResult { return out }

// compileVAP compiles a ValidatingAdmissionPolicy on the API server's
// environment (the one of validate.cel rules).
func (e *Engine) compileVAP(p *api.ValidatingAdmissionPolicy) (*Policy, error) {
	spec := &p.Spec
	cp := &Policy{src: p, kind: api.KindValidatingAdmissionPolicy, key: p.GetName(), annotations: p.GetAnnotations(),
		background: true, admission: true, failurePolicy: celFailurePolicy(spec.FailurePolicy),
		failureAction: api.Enforce, action: api.Enforce, types: typeBit(Validation)}
	path := field.NewPath("spec")
	var errs field.ErrorList
	if pk := spec.ParamKind; pk != nil && (pk.APIVersion == "" || pk.Kind == "") {
		errs = append(errs, field.Required(path.Child("paramKind"), "apiVersion and kind are required"))
	}
	if spec.MatchConstraints == nil || len(spec.MatchConstraints.ResourceRules) == 0 {
		errs = append(errs, field.Required(path.Child("matchConstraints", "resourceRules"), ""))
	}
	body := &vapPolicy{paramKind: spec.ParamKind}
	var merrs field.ErrorList
	body.match, merrs = celpolicy.CompileConstraints(spec.MatchConstraints, path.Child("matchConstraints"), true)
	errs = append(errs, merrs...)
	env, err := e.celEnv()
	if err != nil {
		return nil, &CompileError{Policy: cp.key, Errs: field.ErrorList{field.InternalError(path, err)}}
	}
	var berrs field.ErrorList
	body.body, berrs = celpolicy.Compile(env, &celpolicy.Spec{MatchConditions: spec.MatchConditions, Variables: spec.Variables,
		Validations: spec.Validations, AuditAnnotations: spec.AuditAnnotations, FailurePolicy: spec.FailurePolicy},
		celpolicy.APIServer, celpolicy.Options{Params: spec.ParamKind != nil}, path)
	errs = append(errs, berrs...)
	if len(errs) > 0 {
		return nil, &CompileError{Policy: cp.key, Errs: errs}
	}
	cp.body = body
	cp.variants = ownVariant(spec.MatchConstraints, spec.MatchConditions)
	return cp, nil
}

// compileVAPBinding compiles a ValidatingAdmissionPolicyBinding. Without
// validationActions (which the API server requires) it denies, as
// upstream's CLI takes it.
func (e *Engine) compileVAPBinding(p *api.ValidatingAdmissionPolicyBinding) (*Policy, error) {
	spec := &p.Spec
	cp := &Policy{src: p, kind: api.KindValidatingAdmissionPolicyBinding, key: p.GetName(), annotations: p.GetAnnotations(),
		failurePolicy: api.Fail}
	path := field.NewPath("spec")
	var errs field.ErrorList
	if spec.PolicyName == "" {
		errs = append(errs, field.Required(path.Child("policyName"), ""))
	}
	body := &vapBinding{policyName: spec.PolicyName, paramRef: spec.ParamRef}
	var aerrs field.ErrorList
	body.actions, aerrs = compileActions(spec.ValidationActions, path.Child("validationActions"))
	errs = append(errs, aerrs...)
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

func (b *vapPolicy) jsonMode() bool { return false }

func (b *vapPolicy) withBindings(bindings []*Policy) kindBody {
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

// admissionConfigurationKinds are the kinds the API server never applies
// admission policies to.
var admissionConfigurationKinds = map[string]bool{
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true,
	api.KindValidatingAdmissionPolicy: true, api.KindValidatingAdmissionPolicyBinding: true,
	api.KindMutatingAdmissionPolicy: true, api.KindMutatingAdmissionPolicyBinding: true,
}

// validate evaluates a ValidatingAdmissionPolicy as the API server does:
// when its matchConstraints select the request, for each binding whose
// matchResources select it, with each parameter object of the binding.
// Each binding that applies gives a PolicyResult (its validation actions
// make its FailureAction: Enforce with Deny), whose one result is named
// after the policy and carries the binding's name. A policy without
// bindings is evaluated once, without parameters, as if bound with Deny
// (as upstream's CLI does).
func (b *vapPolicy) validate(rs *reqState, p *Policy, out []PolicyResult) []PolicyResult {
	pr := PolicyResult{Policy: p, Resource: rs.obj, PatchedResource: rs.obj, FailureAction: api.Enforce}
	if rs.gvk.Group == api.GroupAdmissionRegistration && admissionConfigurationKinds[rs.gvk.Kind] {
		return append(out, pr)
	}
	attrs := &rs.kindData().attrs
	ok, err := b.match.Matches(attrs)
	if err != nil {
		return append(out, b.result(rs, pr, func() {
			rs.celKindResult(p.name(), StatusError, "failed to execute matching: "+err.Error(), err, nil)
		}))
	}
	if !ok {
		return append(out, pr)
	}
	if len(b.bindings) == 0 {
		return append(out, b.result(rs, pr, func() { b.evaluate(rs, p, nil, nil) }))
	}
	n := len(out)
	for _, bp := range b.bindings {
		bb := bp.body.(*vapBinding)
		if bb.match != nil {
			ok, err := bb.match.Matches(attrs)
			if err != nil {
				out = append(out, b.result(rs, pr, func() {
					res := rs.celKindResult(p.name(), StatusError, "failed to execute matching: "+err.Error(), err, nil)
					res.Properties = map[string]string{PropertyBinding: bp.name()}
				}))
				continue
			}
			if !ok {
				continue
			}
		}
		bpr := pr
		bpr.FailureAction = bb.actions.failureAction()
		configErr := false
		bpr = b.result(rs, bpr, func() { configErr = b.evaluateBinding(rs, p, bp.name(), bb) })
		if configErr {
			// the API server denies on configuration errors whatever the
			// binding's actions (under failurePolicy Fail)
			bpr.FailureAction = api.Enforce
		}
		out = append(out, bpr)
	}
	if len(out) == n {
		out = append(out, pr)
	}
	return out
}

// result runs eval, which appends rule results, and returns pr with them.
func (b *vapPolicy) result(rs *reqState, pr PolicyResult, eval func()) PolicyResult {
	start := len(rs.results)
	eval()
	if n := len(rs.results); n > start {
		pr.Rules = rs.results[start:n:n]
	}
	return pr
}

// evaluateBinding evaluates the policy for one binding: its parameter
// objects, then the policy. It reports a configuration error (the
// parameters could not be read), which is an error result.
func (b *vapPolicy) evaluateBinding(rs *reqState, p *Policy, name string, bb *vapBinding) (configErr bool) {
	props := map[string]string{PropertyBinding: name}
	params, err := bindingParams(rs, b.paramKind, bb.paramRef)
	if err != nil {
		rs.celKindResult(p.name(), StatusError, "failed to configure binding: "+err.Error(), err, props)
		return true
	}
	if len(params) == 0 {
		return false // parameterNotFoundAction Allow: nothing to validate
	}
	start := len(rs.results)
	b.evaluate(rs, p, params, props)
	for i := start; i < len(rs.results); i++ {
		r := &rs.results[i]
		r.EmitWarning = bb.actions.warn && (r.Status == StatusFail || r.Status == StatusError)
	}
	return false
}

// evaluate evaluates the policy with each parameter object (none: once
// without) and appends one result: the first error or failure, else a
// pass, else a skip when the match conditions selected nothing.
func (b *vapPolicy) evaluate(rs *reqState, p *Policy, params []map[string]any, props map[string]string) {
	if params == nil {
		params = []map[string]any{nil}
	}
	reads := b.body.Reads()
	var ns map[string]any
	if reads.Namespace {
		var err error
		if ns, err = rs.vapNamespace(); err != nil {
			rs.celKindResult(p.name(), StatusError, err.Error(), err, props)
			return
		}
	}
	matched := false
	for _, param := range params {
		var in cel.Input
		if err := rs.celInputFor(&in, false, reads.Request, param); err != nil {
			rs.celKindResult(p.name(), StatusError, err.Error(), err, props)
			return
		}
		in.Namespace = ns
		o := b.body.Evaluate(rs.ctx, &in, rs.celScope())
		switch o.Status {
		case celpolicy.NoMatch:
			continue
		case celpolicy.Error, celpolicy.EvalError:
			rs.celKindResult(p.name(), StatusError, o.Message, o.Err, props)
			return
		case celpolicy.Fail:
			rs.celKindResult(p.name(), StatusFail, o.Message, nil, props)
			return
		}
		matched = true
	}
	if !matched {
		rs.celKindResult(p.name(), StatusSkip, "match conditions aren't met", nil, props)
		return
	}
	rs.celKindResult(p.name(), StatusPass, "", nil, props)
}

// vapNamespace is namespaceObject of a ValidatingAdmissionPolicy: the
// Namespace (see kindNamespace), else, as upstream's CLI gives it, one
// with the namespace's name and labels.
func (rs *reqState) vapNamespace() (map[string]any, error) {
	obj, err := rs.kindNamespace()
	if err != nil || obj != nil {
		return obj, err
	}
	ns := rs.matchRes.Namespace
	if ns == "" || (rs.gvk.Kind == "Namespace" && rs.gvk.Group == "") {
		return nil, nil
	}
	md := map[string]any{"name": ns}
	if l, err := rs.namespaceLabels(); err == nil && len(l) > 0 {
		labels := make(map[string]any, len(l))
		for k, v := range l {
			labels[k] = v
		}
		md["labels"] = labels
	}
	return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": md}, nil
}

// bindingParams reads the parameter objects of a binding as the API
// server does: none without paramKind or paramRef (one evaluation without
// params); paramRef.name names one object, a selector lists them; a
// namespaced paramKind is read in paramRef.namespace, else the request's
// namespace. Nothing found is an error under parameterNotFoundAction
// Deny (the API server's default), and no evaluation with Allow.
func bindingParams(rs *reqState, paramKind *admissionregistrationv1.ParamKind, ref *admissionregistrationv1.ParamRef) ([]map[string]any, error) {
	if paramKind == nil || ref == nil {
		return []map[string]any{nil}, nil
	}
	client := rs.e.cfg.client
	if client == nil {
		return nil, fmt.Errorf("paramKind %s %s: no Client: %w", paramKind.APIVersion, paramKind.Kind, ErrNotConfigured)
	}
	av, kind := paramKind.APIVersion, paramKind.Kind
	namespaced := kindScope(kind) != scopeCluster
	if nk, ok := client.(NamespacedKinds); ok {
		var err error
		if namespaced, err = nk.IsNamespaced(av, kind); err != nil {
			return nil, fmt.Errorf("paramKind kind `%s` not known: %w", kind, err)
		}
	}
	ns := ""
	switch {
	case namespaced && ref.Namespace != "":
		ns = ref.Namespace
	case namespaced:
		ns = rs.matchRes.Namespace
		if rs.gvk.Kind == "Namespace" && rs.gvk.Group == "" {
			ns = ""
		}
		if ns == "" {
			return nil, errors.New("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
		}
	case ref.Namespace != "":
		return nil, errors.New("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
	}
	ctx, done := rs.hostContext()
	var params []map[string]any
	var err error
	if ref.Name != "" {
		var obj map[string]any
		obj, err = client.Get(ctx, av, kind, ns, ref.Name)
		if err == nil {
			params = []map[string]any{obj}
		} else if errors.Is(err, ErrNotFound) {
			err = nil
		}
	} else {
		params, err = client.List(ctx, av, kind, ns, ref.Selector)
	}
	if err = done(err); err != nil {
		return nil, err
	}
	if len(params) == 0 && (ref.ParameterNotFoundAction == nil || *ref.ParameterNotFoundAction == admissionregistrationv1.DenyAction) {
		return nil, errors.New("no params found for policy binding with `Deny` parameterNotFoundAction")
	}
	return params, nil
}
