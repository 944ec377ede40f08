package engine

import (
	"github.com/gavelpolicy/gavel/internal/polex"
	"github.com/gavelpolicy/gavel/internal/policykey"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/autogen"
	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
	"github.com/gavelpolicy/gavel/internal/match"
)

// Rule names of the results of ImageValidatingPolicies that upstream does
// not name after the policy.
const (
	// RuleMutateDigest names the error of a digest that could not be
	// pinned at Mutate (validationConfigurations.mutateDigest).
	RuleMutateDigest = "mutateDigest"
)

// imagePolicy is the body of an ImageValidatingPolicy or
// NamespacedImageValidatingPolicy: the policy and its Pod controller
// variants, each with its matchConstraints and compiled body.
type imagePolicy struct {
	namespace string
	json      bool
	envs      *imageEnvs
	variants  []ivpolVariant
	actions   validationActions
	// mutateDigest and required are validationConfigurations'
	mutateDigest, required bool
	// creds are spec.credentials, classic the same as a verifyImages
	// entry's, credKey their part of cache keys
	creds   *policiesv1alpha1.Credentials
	classic *api.ImageRegistryCredentials
	credKey string
}

type ivpolVariant struct {
	match *celpolicy.Constraints
	body  *celpolicy.ImageValidating
}

// imageEnvs are the environments of ImageValidatingPolicies, built once
// per engine (ivpolEnvs).
type imageEnvs struct {
	env, matchEnv *cel.Env
	defaults      *celpolicy.DefaultExtractors
}

// ivpolEnvs returns the environments of ImageValidatingPolicy expressions,
// built on first use: the API server's with the kind's variables and
// Kyverno's libraries (the image verification library among them), the
// environment of matchImageReferences expressions, and the default image
// extractors.
func (e *Engine) ivpolEnvs() (*imageEnvs, error) {
	e.ivpolOnce.Do(func() {
		out := &imageEnvs{}
		opts := append(celpolicy.ImageEnvOptions(), cel.WithLibraries(cel.ImageValidatingPolicyLibraries))
		if out.env, e.ivpolErr = cel.NewEnv(opts...); e.ivpolErr != nil {
			return
		}
		if out.matchEnv, e.ivpolErr = cel.NewEnv(celpolicy.ImageMatchEnvOptions()...); e.ivpolErr != nil {
			return
		}
		if out.defaults, e.ivpolErr = celpolicy.CompileDefaultExtractors(out.env); e.ivpolErr != nil {
			return
		}
		e.ivpolEnvsV = out
	})
	return e.ivpolEnvsV, e.ivpolErr
}

// compileImageValidatingPolicy compiles an ImageValidatingPolicy: its body,
// its matchConstraints and its Pod controller variants.
func (e *Engine) compileImageValidatingPolicy(p *api.ImageValidatingPolicy) (*Policy, error) {
	spec := &p.Spec
	cp := &Policy{src: p, kind: api.KindOf(p), key: policykey.Key(p), annotations: p.GetAnnotations(),
		background: spec.BackgroundEnabled(), admission: spec.AdmissionEnabled(),
		failurePolicy: celFailurePolicy(spec.FailurePolicy), types: typeBit(Validation)}
	if wc := spec.WebhookConfiguration; wc != nil && wc.TimeoutSeconds != nil {
		cp.timeout = *wc.TimeoutSeconds
	}
	path := field.NewPath("spec")
	vc := spec.ValidationConfigurations
	body := &imagePolicy{namespace: p.GetNamespace(), creds: spec.Credentials,
		mutateDigest: vc.MutateDigest == nil || *vc.MutateDigest, required: vc.Required == nil || *vc.Required}
	body.classic, body.credKey = classicCredentials(spec.Credentials)
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
	if c := spec.Credentials; c != nil {
		for i, pr := range c.Providers {
			switch pr {
			case "default", "amazon", "azure", "google", "github":
			default:
				errs = append(errs, field.NotSupported(path.Child("credentials", "providers").Index(i), pr, []string{"default", "amazon", "azure", "google", "github"}))
			}
		}
	}
	envs, err := e.ivpolEnvs()
	if err != nil {
		return nil, &CompileError{Policy: cp.key, Errs: field.ErrorList{field.InternalError(path, err)}}
	}
	body.envs = envs
	v, verrs := body.compileVariant(spec, path, false)
	errs = append(errs, verrs...)
	body.variants = append(body.variants, v)
	if len(errs) == 0 && !body.json {
		cp.variants = ownVariant(spec.MatchConstraints, spec.MatchConditions)
		variants, err := autogen.ImageValidatingPolicy(spec)
		if err != nil {
			errs = append(errs, field.InternalError(path.Child("autogen"), err))
		}
		for _, av := range variants {
			v, verrs := body.compileVariant(av.Spec, field.NewPath("status", "autogen", "configs").Key(av.Config).Child("spec"), true)
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

// compileVariant compiles the matchConstraints (Kubernetes mode) and the
// body of one spec; lazy variants instantiate their programs on first use.
func (b *imagePolicy) compileVariant(spec *policiesv1alpha1.ImageValidatingPolicySpec, path *field.Path, lazy bool) (ivpolVariant, field.ErrorList) {
	var v ivpolVariant
	var errs field.ErrorList
	if !b.json {
		var merrs field.ErrorList
		v.match, merrs = celpolicy.CompileConstraints(spec.MatchConstraints, path.Child("matchConstraints"), false)
		errs = append(errs, merrs...)
	}
	vc := spec.ValidationConfigurations
	var berrs field.ErrorList
	v.body, berrs = celpolicy.CompileImage(b.envs.env, &celpolicy.ImageSpec{
		Spec: celpolicy.Spec{MatchConditions: spec.MatchConditions, Variables: spec.Variables,
			Validations: spec.Validations, AuditAnnotations: spec.AuditAnnotations, FailurePolicy: spec.FailurePolicy},
		ImageExtractors: spec.ImageExtractors, MatchImageReferences: spec.MatchImageReferences,
		Attestors: spec.Attestors, Attestations: spec.Attestations,
		VerifyDigest: vc.VerifyDigest == nil || *vc.VerifyDigest,
	}, celpolicy.ImageOptions{Options: celpolicy.Options{Lazy: lazy, Namespace: b.namespace}, MatchEnv: b.envs.matchEnv}, path)
	return v, append(errs, berrs...)
}

// classicCredentials converts spec.credentials to the credentials of a
// verifyImages entry (what ImageVerifier.ResolveDigest takes), with their
// part of cache keys.
func classicCredentials(c *policiesv1alpha1.Credentials) (*api.ImageRegistryCredentials, string) {
	if c == nil {
		return nil, ""
	}
	out := &api.ImageRegistryCredentials{AllowInsecureRegistry: c.AllowInsecureRegistry, Secrets: c.Secrets}
	for _, p := range c.Providers {
		out.Providers = append(out.Providers, string(p))
	}
	var b strings.Builder
	if c.AllowInsecureRegistry {
		b.WriteString("insecure")
	}
	b.WriteString("\x00" + strings.Join(out.Providers, ",") + "\x00" + strings.Join(c.Secrets, ","))
	return out, b.String()
}

func (b *imagePolicy) jsonMode() bool { return b.json }

// applies reports whether the policy takes part in the request: its
// admission or background switch, and a namespaced policy's namespace.
func (b *imagePolicy) applies(rs *reqState, p *Policy) bool {
	return !(rs.req.Background && !p.background) && !(!rs.req.Background && !p.admission) &&
		(!api.IsNamespaced(p.src) || match.NamespacedPolicyApplies(p.src.GetNamespace(), rs.matchRes))
}

// validate evaluates an ImageValidatingPolicy on a request as upstream's
// engine does: each variant whose matchConstraints select the request.
// validationConfigurations.required is settled once every policy of the
// request has been evaluated (finishImagePolicies).
func (b *imagePolicy) validate(rs *reqState, p *Policy, out []PolicyResult) []PolicyResult {
	pr := PolicyResult{Policy: p, Resource: rs.obj, PatchedResource: rs.obj, FailureAction: p.failureAction}
	if !b.applies(rs, p) {
		return append(out, pr)
	}
	start := len(rs.results)
	for i := range b.variants {
		v := &b.variants[i]
		if !b.json {
			ok, err := v.match.Matches(&rs.kindData().attrs)
			if err != nil {
				b.result(rs, RuleMatch, StatusError, "failed to execute matching: "+err.Error(), err, nil)
				break
			}
			if !ok {
				continue
			}
		}
		b.evaluate(rs, p, v, false)
		if rs.ctx.Err() != nil {
			break
		}
	}
	return append(out, b.finish(rs, pr, start))
}

// validatePayload evaluates a JSON-mode policy on a payload.
func (b *imagePolicy) validatePayload(rs *reqState, p *Policy, out []PolicyResult) []PolicyResult {
	pr := PolicyResult{Policy: p, Resource: rs.obj, PatchedResource: rs.obj, FailureAction: p.failureAction}
	start := len(rs.results)
	b.evaluate(rs, p, &b.variants[0], true)
	return append(out, b.finish(rs, pr, start))
}

// finish gives the policy result the rule results made since start.
func (b *imagePolicy) finish(rs *reqState, pr PolicyResult, start int) PolicyResult {
	if n := len(rs.results); n > start {
		pr.Rules = rs.results[start:n:n]
		for i := range pr.Rules {
			r := &pr.Rules[i]
			r.EmitWarning = b.actions.warn && (r.Status == StatusFail || r.Status == StatusError)
		}
	}
	return pr
}

// result appends a result of the policy (type ImageVerify, as upstream's).
func (b *imagePolicy) result(rs *reqState, name string, status Status, msg string, err error, props map[string]string) *RuleResult {
	res := rs.celKindResult(name, status, msg, err, props)
	res.Type = ImageVerify
	return res
}

// evaluate evaluates one variant that applies, appending its result (none
// when its matchConditions do not hold, as upstream).
func (b *imagePolicy) evaluate(rs *reqState, p *Policy, v *ivpolVariant, payload bool) {
	evalErr := func(err error) {
		msg := "failed to evaluate policy: "
		if payload {
			msg = "failed to evaluate policy for JSON: "
		}
		b.result(rs, RuleEvaluation, StatusError, msg+err.Error(), err, nil)
	}
	var in cel.Input
	res, err := b.input(rs, &in, v.body.Reads())
	if err != nil {
		evalErr(err)
		return
	}
	ok, err := v.body.Match(rs.ctx, &in, rs.celScope())
	if err != nil {
		evalErr(err)
		return
	}
	if !ok {
		return
	}
	if !payload {
		excepted, err := rs.imageExceptions(b.envs.env, p, v.body, &in, !b.json)
		if err != nil {
			evalErr(err)
			return
		}
		if len(excepted) > 0 {
			keys := make([]string, len(excepted))
			for i, x := range excepted {
				keys[i] = x.Key()
			}
			r := rs.celKindResult(RuleException, StatusSkip, "rule is skipped due to policy exception: "+joinKeys(keys), nil, nil)
			r.Exceptions = keys
			return
		}
	}
	libs := *in.Libraries
	libs.ImageVerify = &imageHost{rs: rs, b: b, body: v.body}
	in.Libraries = &libs
	o := v.body.Evaluate(rs.ctx, &in, rs.celScope(), b.envs.defaults, res)
	switch o.Status {
	case celpolicy.Pass:
		b.result(rs, p.name(), StatusPass, "success", nil, o.AuditAnnotations)
		if b.required && len(o.Images) > 0 {
			st := rs.imageState()
			st.pending = append(st.pending, pendingRequired{at: len(rs.results) - 1, images: o.Images})
		}
	case celpolicy.Fail:
		b.result(rs, p.name(), StatusFail, o.Message, nil, o.AuditAnnotations)
	case celpolicy.Error:
		b.result(rs, p.name(), StatusError, "error: "+o.Message, o.Err, nil)
	default:
		evalErr(o.Err)
	}
}

// input binds the request for a body into in, a zero Input (see
// kindInput); it returns the kind of images of the request's resource.
func (b *imagePolicy) input(rs *reqState, in *cel.Input, reads celpolicy.Reads) (celpolicy.ImageResource, error) {
	if b.json {
		in.Object, in.Libraries = rs.obj, rs.e.celLibs
		return celpolicy.NoImages, nil
	}
	if err := rs.kindInput(in, reads); err != nil {
		return 0, err
	}
	a := &rs.kindData().attrs
	return celpolicy.ImageResourceOf(a.Group, a.Version, a.Resource), nil
}

// imageExceptions returns the CEL PolicyExceptions that exempt the
// resource from an ImageValidatingPolicy, as upstream's engine decides:
// every exception of the policy whose matchConditions hold (an expired
// one never does; under failurePolicy Ignore, one whose conditions fail
// does not either), whatever its images and allowedValues.
func (rs *reqState) imageExceptions(env *cel.Env, p *Policy, body *celpolicy.ImageValidating, in *cel.Input, ofRequest bool) ([]*polex.CELException, error) {
	cands, err := rs.kindExceptions(p)
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	now := rs.e.cfg.now()
	var matched []*polex.CELException
	for _, x := range cands {
		if x.Expired(now) {
			continue
		}
		ok, err := rs.celExceptionApplies(env, x, in, ofRequest)
		if err != nil {
			if body.Ignore() && rs.ctx.Err() == nil {
				continue
			}
			return nil, err
		}
		if ok {
			matched = append(matched, x)
		}
	}
	return matched, nil
}
