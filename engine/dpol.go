package engine

import (
	"errors"
	"fmt"
	"github.com/gavelpolicy/gavel/internal/polex"
	"github.com/gavelpolicy/gavel/internal/policykey"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
	"github.com/gavelpolicy/gavel/internal/match"
)

// Deletion is the type of the results of the deleting policies (Cleanup).
const Deletion RuleType = "Deletion"

// deletingPolicy is the body of a DeletingPolicy or
// NamespacedDeletingPolicy.
type deletingPolicy struct {
	namespace string
	env       *cel.Env
	// match are the matchConstraints for every operation (upstream
	// ignores their operations: the objects exist)
	match *celpolicy.Constraints
	body  *celpolicy.Deleting
	del   deletion
	spec  *policiesv1alpha1.DeletingPolicySpec
}

// compileDeletingPolicy compiles a DeletingPolicy: matchConstraints,
// variables, conditions, schedule and propagation policy.
func (e *Engine) compileDeletingPolicy(p *api.DeletingPolicy) (*Policy, error) {
	spec := &p.Spec
	cp := &Policy{src: p, kind: api.KindOf(p), key: policykey.Key(p), annotations: p.GetAnnotations(),
		background: true, admission: false, failurePolicy: api.Fail, failureAction: api.Audit, action: api.Audit,
		types: typeBit(Deletion)}
	path := field.NewPath("spec")
	env, err := e.kindEnv(cel.DeletingPolicyLibraries)
	if err != nil {
		return nil, &CompileError{Policy: cp.key, Errs: field.ErrorList{field.InternalError(path, err)}}
	}
	b := &deletingPolicy{env: env, spec: spec}
	if api.IsNamespaced(p) {
		b.namespace = p.GetNamespace()
	}
	var errs field.ErrorList
	if spec.MatchConstraints == nil || len(spec.MatchConstraints.ResourceRules) == 0 {
		errs = append(errs, field.Required(path.Child("matchConstraints"), "a matchConstraints with at least one resource rule is required"))
	} else {
		var merrs field.ErrorList
		b.match, merrs = celpolicy.CompileConstraints(anyOperation(spec.MatchConstraints), path.Child("matchConstraints"), false)
		errs = append(errs, merrs...)
	}
	var berrs, derrs field.ErrorList
	b.body, berrs = celpolicy.CompileDeleting(env, spec, celpolicy.Options{Namespace: b.namespace}, path)
	b.del, derrs = compileDeletion(spec.Schedule, spec.DeletionPropagationPolicy, path, "deletingPolicy")
	errs = append(append(errs, berrs...), derrs...)
	if len(errs) > 0 {
		return nil, &CompileError{Policy: cp.key, Errs: errs}
	}
	cp.body = b
	cp.variants = ownVariant(spec.MatchConstraints, nil)
	return cp, nil
}

func (b *deletingPolicy) validate(_ *reqState, _ *Policy, out []PolicyResult) []PolicyResult {
	return out
}

func (b *deletingPolicy) jsonMode() bool { return false }

func (b *deletingPolicy) deletionSpec() *deletion { return &b.del }

func (b *deletingPolicy) targets() []CleanupTarget {
	var out []CleanupTarget
	for _, r := range b.spec.MatchConstraints.ResourceRules {
		for _, g := range r.APIGroups {
			for _, v := range r.APIVersions {
				for _, res := range r.Resources {
					out = append(out, CleanupTarget{Group: g, Version: v, Resource: res})
				}
			}
		}
	}
	return out
}

// cleanup evaluates the policy on an existing object as upstream's
// deleting engine: the matchConstraints (any operation) select it, CEL
// PolicyExceptions that apply keep it, then the conditions decide.
func (b *deletingPolicy) cleanup(rs *reqState, p *Policy) {
	if b.namespace != "" && !match.NamespacedPolicyApplies(b.namespace, rs.matchRes) {
		return
	}
	kd := rs.kindData()
	ok, err := b.match.Matches(&kd.attrs)
	if err != nil {
		deletionResult(rs, p, StatusError, "failed to execute matching: "+err.Error(), err)
		return
	}
	if !ok {
		return
	}
	in := &cel.Input{Object: kd.attrs.Object, Libraries: rs.e.celLibs}
	if b.body.Reads().Namespace {
		ns, err := rs.kindNamespace()
		if err != nil {
			deletionResult(rs, p, StatusError, err.Error(), err)
			return
		}
		in.Namespace = ns
	}
	excepted, err := rs.anyCELException(b.env, p, in)
	if err != nil {
		deletionResult(rs, p, StatusError, err.Error(), err)
		return
	}
	if len(excepted) > 0 {
		// upstream keeps the object ("did not match"); the result names
		// the exceptions
		res := deletionResult(rs, p, StatusFail, "resource did not match", nil)
		for _, x := range excepted {
			res.Exceptions = append(res.Exceptions, x.Key())
		}
		return
	}
	in.Extra = rs.e.noCELExceptions
	ok, err = b.body.Evaluate(rs.ctx, in, rs.celScope())
	switch {
	case err != nil:
		deletionResult(rs, p, StatusError, err.Error(), err)
	case ok:
		deletionResult(rs, p, StatusPass, "resource matched", nil)
	default:
		deletionResult(rs, p, StatusFail, "resource did not match", nil)
	}
}

// anyCELException returns the CEL PolicyExceptions of p that apply to the
// input (all their matchConditions hold; expired ones never do), as
// upstream's DeletingPolicy: one that applies exempts the object, whatever
// it allows. An exception whose conditions fail is an error.
func (rs *reqState) anyCELException(env *cel.Env, p *Policy, in *cel.Input) ([]*polex.CELException, error) {
	cands, err := rs.kindExceptions(p)
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	now := rs.e.cfg.now()
	var out []*polex.CELException
	for _, x := range cands {
		if x.Expired(now) {
			continue
		}
		ok, err := rs.celExceptionApplies(env, x, in, false)
		if err != nil {
			return nil, fmt.Errorf("policy exception %s: %w", x.Key(), err)
		}
		if ok {
			out = append(out, x)
		}
	}
	return out, nil
}

// deletionResult appends the result of a deleting policy (named after
// it, as upstream's CLI names it).
func deletionResult(rs *reqState, p *Policy, status Status, msg string, err error) *RuleResult {
	res := rs.nextResult()
	*res = RuleResult{Name: p.name(), Type: Deletion, Status: status, Message: msg}
	if status == StatusError {
		if err == nil {
			err = errors.New(msg)
		}
		res.Err = resultErr(celLimit(err))
	}
	return res
}
