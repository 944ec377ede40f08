package engine

import (
	"context"
	"errors"
	"fmt"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"runtime/debug"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
	"github.com/gavelpolicy/gavel/internal/genlabel"
	"github.com/gavelpolicy/gavel/internal/typeconv"
)

// A MutatingPolicy with mutateExisting mutates existing resources when a
// trigger (a request its matchConstraints and matchConditions select) is
// admitted: Generate then queues an UpdateRequest of type mutate, which
// the controller (generate.Controller) processes by calling Mutate on a
// Request with Controller set; outside admission (the CLI, policytest) Mutate does
// the same at once. The targets are the objects the target expression
// resolves from the trigger, or else those the targetMatchConstraints
// (without resource rules: the matchConstraints) select, listed through
// the CEL libraries' resource client (cel.ResourceClient) by the
// resources their rules name (rules with wildcards list nothing), in the
// policy's namespace for a namespaced policy. Each target is evaluated
// with object the target and request the trigger's request (its object
// the trigger), its targetMatchConditions selecting it; each gives a
// result, a pass carrying the patched target (PatchedTargets), as
// upstream's engine and CLI give them.

// existingTarget is an existing resource a policy may mutate, with the
// resource it was listed by (empty for the targets of an expression).
type existingTarget struct {
	obj map[string]any
	res celpolicy.Resource
}

// mutateTargets evaluates the policy on the existing resources its
// trigger, the request, selects.
func (b *mutatingPolicy) mutateTargets(rs *reqState, p *Policy) {
	v := &b.variants[0]
	ok, err := v.match.Matches(&rs.kindData().attrs)
	if err != nil {
		rs.mutationResult(RuleMatch, StatusError, "failed to execute matching: "+err.Error(), err, nil)
		return
	}
	if !ok {
		return
	}
	targets, err := b.targets(rs, p, v)
	if err != nil {
		rs.mutationResult(RuleEvaluation, StatusError, msgMutationFailed+err.Error(), err, nil)
		return
	}
	schemas, err := typeconv.Builtin()
	if err != nil {
		rs.mutationResult(RuleEvaluation, StatusError, msgMutationFailed+err.Error(), err, nil)
		return
	}
	request := rs.kindRequest()
	for _, t := range targets {
		if err := rs.ctx.Err(); err != nil {
			rs.mutationResult(RuleEvaluation, StatusError, msgMutationFailed+err.Error(), err, nil)
			return
		}
		if b.targetExpr && rs.e.filteredObject(t.obj) {
			continue // listed targets were filtered by listTargets
		}
		if !b.targetExpr {
			ok, err := b.selectsTarget(rs, t)
			if err != nil {
				rs.mutationResult(RuleMatch, StatusError, "failed to execute matching: "+err.Error(), err, nil)
				continue
			}
			if !ok {
				continue
			}
		}
		b.mutateTarget(rs, p, v, t.obj, request, schemas)
	}
}

// targets resolves the existing resources of a trigger: the target
// expression's (after the matchConditions) or the listed ones (when the
// matchConditions hold).
func (b *mutatingPolicy) targets(rs *reqState, p *Policy, v *mpolVariant) ([]existingTarget, error) {
	var in cel.Input
	if err := rs.kindInput(&in, v.body.Reads()); err != nil {
		return nil, err
	}
	in.Extra = rs.e.noCELExceptions
	if b.targetExpr {
		objs, err := v.body.Targets(rs.ctx, &in, rs.celScope())
		out := make([]existingTarget, len(objs))
		for i, o := range objs {
			out[i].obj, _ = normalize(o).(map[string]any)
		}
		return out, err
	}
	ok, err := v.body.Matches(rs.ctx, &in, rs.celScope())
	if err != nil || !ok {
		return nil, err
	}
	return b.listTargets(rs, p)
}

// listTargets lists the objects of the resources the target constraints
// name.
func (b *mutatingPolicy) listTargets(rs *reqState, p *Policy) ([]existingTarget, error) {
	rc := rs.e.celLibs.Resource
	ns := ""
	if api.IsNamespaced(p.src) {
		ns = p.src.GetNamespace()
	}
	var out []existingTarget
	var errs []error
	for _, r := range b.targetConstraints().Resources() {
		av := r.Version
		if r.Group != "" {
			av = r.Group + "/" + r.Version
		}
		ctx, done := rs.hostContext()
		list, err := rc.ListResources(ctx, av, r.Resource, ns, nil)
		if err = done(err); err != nil {
			errs = append(errs, fmt.Errorf("failed to list %s %s: %w", av, r.Resource, err))
			continue
		}
		items, _ := list["items"].([]any)
		for _, it := range items {
			if o, ok := normalize(it).(map[string]any); ok && o != nil && !rs.e.filteredObject(o) {
				out = append(out, existingTarget{obj: o, res: r})
			}
		}
	}
	return out, errors.Join(errs...)
}

// targetConstraints are the constraints that select the targets.
func (b *mutatingPolicy) targetConstraints() *celpolicy.Constraints {
	if b.targetMatch != nil {
		return b.targetMatch
	}
	return b.variants[0].match
}

// selectsTarget tells whether the target constraints select a listed
// object, whatever the operations of their rules.
func (b *mutatingPolicy) selectsTarget(rs *reqState, t existingTarget) (bool, error) {
	name, ns := objectMeta(t.obj)
	a := &celpolicy.Attributes{Group: t.res.Group, Version: t.res.Version, Resource: t.res.Resource, Subresource: t.res.Subresource,
		Namespace: ns, Name: name, Object: t.obj,
		NamespaceLabels: func() (map[string]string, error) { return rs.labelsOfNamespace(ns) }}
	return b.targetConstraints().Matches(a)
}

// labelsOfNamespace reads the labels of a namespace through the Client.
func (rs *reqState) labelsOfNamespace(ns string) (map[string]string, error) {
	if ns == rs.matchRes.Namespace {
		return rs.celNamespaceLabels()
	}
	c := rs.e.cfg.client
	if c == nil {
		return nil, fmt.Errorf("namespace %q: no Client: %w", ns, ErrNotConfigured)
	}
	ctx, done := rs.hostContext()
	obj, err := c.Get(ctx, "v1", "Namespace", "", ns)
	if err = done(err); err != nil {
		if errors.Is(err, ErrNotFound) {
			return map[string]string{metadataNameLabel: ns}, nil
		}
		return nil, err
	}
	md, _ := obj["metadata"].(map[string]any)
	l, _ := md["labels"].(map[string]any)
	out := map[string]string{metadataNameLabel: ns}
	for k, v := range l {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out, nil
}

// mutateTarget evaluates the policy on one target and appends its result.
func (b *mutatingPolicy) mutateTarget(rs *reqState, p *Policy, v *mpolVariant, obj, request map[string]any, schemas celpolicy.Schemas) {
	in := &cel.Input{Object: obj, Request: request, Libraries: rs.e.celLibs}
	excepted, extra, err := rs.celExceptions(b.env, p, in, false)
	if err != nil {
		rs.mutationResult(RuleEvaluation, StatusError, msgMutationFailed+err.Error(), err, nil)
		return
	}
	if len(excepted) > 0 {
		rs.exceptedResult(excepted).Type = Mutation
		return
	}
	in.Extra = extra
	o := v.body.MutateTarget(rs.ctx, in, rs.celScope(), schemas)
	switch o.Status {
	case celpolicy.NoMatch:
		rs.mutationResult("", StatusSkip, msgMutationSkip, nil, nil)
	case celpolicy.Error:
		rs.mutationResult(RuleEvaluation, StatusError, msgMutationFailed+o.Message, o.Err, nil)
	case celpolicy.Pass:
		res := rs.mutationResult("", StatusPass, msgMutationSuccess, nil, o.AuditAnnotations)
		// the controller writes the targets that changed; the CLI shows
		// them all, as upstream's
		if !rs.req.Controller || !deepEqual(o.Object, obj) {
			patched, _ := normalize(o.Object).(map[string]any)
			res.PatchedTargets = []map[string]any{patched}
		}
	}
}

// queueExisting is the result of a mutate-existing MutatingPolicy at
// admission (in Generate): a pass when the request is a trigger (its
// matchConstraints and matchConditions select it), for which an
// UpdateRequest of type mutate is queued.
func (b *mutatingPolicy) queueExisting(rs *reqState, p *Policy) []RuleResult {
	if !b.existing || !p.admission {
		return nil
	}
	v := &b.variants[0]
	res := RuleResult{Type: Mutation}
	ok, err := v.match.Matches(&rs.kindData().attrs)
	if err == nil && ok {
		var in cel.Input
		if err = rs.kindInput(&in, v.body.Reads()); err == nil {
			in.Extra = rs.e.noCELExceptions
			ok, err = v.body.Matches(rs.ctx, &in, rs.celScope())
		}
	}
	switch {
	case err != nil:
		res.Name, res.Status, res.Message, res.Err = RuleEvaluation, StatusError, msgMutationFailed+err.Error(), resultErr(err)
	case !ok:
		return nil
	default:
		res.Status, res.Message = StatusPass, msgMutateExistingQueued
	}
	return []RuleResult{res}
}

// existingUpdateRequest is the UpdateRequest a mutate-existing
// MutatingPolicy queues for a trigger it passed.
func (e *Engine) existingUpdateRequest(rs *reqState, p *Policy, results []RuleResult) []*api.UpdateRequest {
	for _, res := range results {
		if res.Type == Mutation && res.Status == StatusPass {
			trigger := genlabel.Spec(rs.obj)
			return []*api.UpdateRequest{e.newUpdateRequest(rs, p, api.URMutate, trigger, []api.RuleContext{{Trigger: trigger}})}
		}
	}
	return nil
}

// MutateExisting evaluates a MutatingPolicy with mutateExisting on the
// existing resources it selects, without a trigger, as upstream's
// controller does when the policy is created or updated and on its
// periodic reconciliation: the objects its targetMatchConstraints (or its
// matchConstraints) select, each evaluated with the request of its own
// UPDATE (request.object is the target). It gives a response with one
// PolicyResult (none for a policy of another kind, without mutateExisting,
// or with a target expression, which needs a trigger). Each target is
// evaluated as by the controller (Request.Controller): its pass results
// carry only the targets that change (PatchedTargets). The objects are
// not written: the host writes them (generate.Controller does).
func (s *PolicySet) MutateExisting(ctx context.Context, p *Policy) (*Response, error) {
	resp := &Response{}
	b, ok := p.body.(*mutatingPolicy)
	if !ok || !b.existing || b.targetExpr {
		return resp, nil
	}
	lister := s.eng.newReqStateFrom(ctx, &Request{}, false, nil, nil)
	targets, listErr := b.listTargets(lister, p)
	schemas, err := typeconv.Builtin()
	if err != nil {
		return resp, err
	}
	pr := PolicyResult{Policy: p, FailureAction: p.failureAction}
	v := &b.variants[0]
	for _, t := range targets {
		if err := ctx.Err(); err != nil {
			return resp, err
		}
		req := &Request{Operation: api.Update, Object: t.obj, OldObject: t.obj, Controller: true,
			Resource: schema.GroupVersionResource{Group: t.res.Group, Version: t.res.Version, Resource: t.res.Resource}}
		object, oldObject, _, err := req.check()
		if err != nil {
			continue
		}
		rs := s.eng.newReqStateFrom(ctx, req, false, object, oldObject)
		b.existingTarget(rs, p, v, t, schemas)
		pr.Rules = append(pr.Rules, rs.results...)
	}
	resp.Policies = []PolicyResult{pr}
	return resp, listErr
}

// existingTarget evaluates the policy on one target of MutateExisting, the
// object of rs; a panic becomes an error result.
func (b *mutatingPolicy) existingTarget(rs *reqState, p *Policy, v *mpolVariant, t existingTarget, schemas celpolicy.Schemas) {
	defer func() {
		if r := recover(); r != nil {
			rs.results = rs.results[:0]
			rs.mutationResult("", StatusError, "policy evaluation panicked", fmt.Errorf("%v\n%s", r, firstFrames(debug.Stack())), nil)
		}
	}()
	ok, err := b.selectsTarget(rs, t)
	switch {
	case err != nil:
		rs.mutationResult(RuleMatch, StatusError, "failed to execute matching: "+err.Error(), err, nil)
	case ok:
		b.mutateTarget(rs, p, v, rs.obj, rs.kindRequest(), schemas)
	}
}
