package generate

import (
	"context"
	"errors"
	"fmt"
	"github.com/gavelpolicy/gavel/internal/policykey"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/internal/deepcopy"
	"github.com/gavelpolicy/gavel/internal/genlabel"
	"github.com/gavelpolicy/gavel/internal/wildcard"
)

// The event handlers below (On*) build the UpdateRequests upstream builds
// for an event, process them at once (Process, with retries) and return
// them with their final status, for the host to record or log: the host
// must not process or enqueue them again. Errors of single requests are
// joined into the returned error. With WithQueue, the handlers of object
// events enqueue their requests instead (see dispatch) and return them
// Pending, or Failed when the queue refused them.

// OnPolicyUpdate handles a created (old nil) or updated policy: cur
// replaces the policy with the same key in the controller's policies (serve
// admission from Policies() afterwards, see SetPolicies). Then, as
// upstream (the requests it returns are already processed):
//   - downstream resources of data rules with synchronize that were deleted
//     from the policy are deleted, unless orphanDownstreamOnPolicyDelete;
//   - downstream resources of data rules with synchronize are synced with
//     the new rule (clone rules, and rules without synchronize, are left
//     alone);
//   - generate rules with generateExisting (rule field, else the policy's
//     generateExisting or deprecated generateExistingOnPolicyUpdate) are
//     applied to every existing trigger;
//   - mutate-existing rules with mutateExistingOnPolicyUpdate (rule field,
//     else the policy's) are applied to every existing trigger.
func (c *Controller) OnPolicyUpdate(ctx context.Context, old, cur *engine.Policy) ([]*api.UpdateRequest, error) {
	if cur == nil {
		return nil, errors.New("OnPolicyUpdate: nil policy")
	}
	if err := c.replacePolicy(cur, false); err != nil {
		return nil, err
	}
	if isGenerating(cur) {
		return c.gpolPolicyUpdate(ctx, old, cur)
	}
	var urs []*api.UpdateRequest
	var errs []error
	if old != nil {
		kept := map[string]bool{}
		for _, r := range cur.Rules() {
			kept[r.Name] = true
		}
		var deleted []*api.Rule
		for _, r := range old.Rules() {
			if !kept[r.Name] {
				deleted = append(deleted, r)
			}
		}
		u, err := c.deleteRulesDownstream(ctx, old, deleted)
		urs, errs = append(urs, u...), append(errs, err)
		u, err = c.syncDataRules(ctx, cur)
		urs, errs = append(urs, u...), append(errs, err)
	}
	u, err := c.applyExisting(ctx, cur)
	urs, errs = append(urs, u...), append(errs, err)
	return urs, errors.Join(errs...)
}

// OnPolicyDelete handles a deleted policy: it is removed from the
// controller's policies and the downstream resources of its data rules
// with synchronize are deleted, unless orphanDownstreamOnPolicyDelete is
// set. Downstream resources of clone rules are retained.
func (c *Controller) OnPolicyDelete(ctx context.Context, p *engine.Policy) ([]*api.UpdateRequest, error) {
	if p == nil {
		return nil, errors.New("OnPolicyDelete: nil policy")
	}
	if err := c.replacePolicy(p, true); err != nil {
		return nil, err
	}
	if isGenerating(p) {
		return c.gpolPolicyDelete(ctx, p)
	}
	return c.deleteRulesDownstream(ctx, p, p.Rules())
}

// deleteRulesDownstream deletes the downstream resources of the deleted
// data rules with synchronize and without orphanDownstreamOnPolicyDelete,
// with one request per downstream resource recording it in its status.
func (c *Controller) deleteRulesDownstream(ctx context.Context, p *engine.Policy, rules []*api.Rule) ([]*api.UpdateRequest, error) {
	var urs []*api.UpdateRequest
	var errs []error
	for _, r := range rules {
		g := r.Generation
		if g == nil || !g.Synchronize || g.OrphanDownstreamOnPolicyDelete || !isDataRule(g) {
			continue
		}
		downstreams, err := c.ruleDownstreams(ctx, p, r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, d := range downstreams {
			ur := newRequest(p.Key(), api.URGenerate, api.RuleContext{Rule: r.Name, Trigger: triggerFromLabels(genlabel.Of(d)), DeleteDownstream: true})
			s := genlabel.Spec(d)
			s.UID = ""
			ur.Status.GeneratedResources = []api.ResourceSpec{s}
			urs = append(urs, ur)
			errs = append(errs, c.Process(ctx, ur))
		}
	}
	return urs, errors.Join(errs...)
}

// syncDataRules regenerates the downstream resources of the policy's data
// rules with synchronize, so that they follow a changed rule.
func (c *Controller) syncDataRules(ctx context.Context, p *engine.Policy) ([]*api.UpdateRequest, error) {
	var urs []*api.UpdateRequest
	var errs []error
	for _, r := range p.Rules() {
		g := r.Generation
		if g == nil || !g.Synchronize || !isDataRule(g) {
			continue
		}
		downstreams, err := c.ruleDownstreams(ctx, p, r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		seen := map[api.ResourceSpec]bool{}
		for _, d := range downstreams {
			t := triggerFromLabels(genlabel.Of(d))
			if seen[t] {
				continue
			}
			seen[t] = true
			ur := newRequest(p.Key(), api.URGenerate, api.RuleContext{Rule: r.Name, Trigger: t})
			urs = append(urs, ur)
			errs = append(errs, c.Process(ctx, ur))
		}
	}
	return urs, errors.Join(errs...)
}

// isDataRule reports whether a generate rule (or all its foreach entries)
// takes its source from data.
func isDataRule(g *api.Generation) bool {
	if len(g.ForEachGeneration) > 0 {
		for i := range g.ForEachGeneration {
			if g.ForEachGeneration[i].RawData == nil {
				return false
			}
		}
		return true
	}
	return g.RawData != nil
}

// ruleDownstreams lists every downstream resource of a rule.
func (c *Controller) ruleDownstreams(ctx context.Context, p *engine.Policy, r *api.Rule) ([]map[string]any, error) {
	sel := map[string]string{
		genlabel.PolicyName:      p.Source().GetName(),
		genlabel.PolicyNamespace: policykey.Namespace(p.Source()),
		genlabel.RuleName:        r.Name,
		genlabel.ManagedBy:       genlabel.ManagedByValue,
	}
	var out []map[string]any
	for _, k := range generatedKinds(r.Generation) {
		objs, err := c.list(ctx, k.apiVersion, k.kind, sel)
		if err != nil {
			return out, fmt.Errorf("failed to list downstream resources of rule %s: %w", r.Name, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// applyExisting applies generateExisting and mutateExistingOnPolicyUpdate
// rules to the existing triggers. Triggers the rule does not apply to give
// Skip requests, which are not returned.
func (c *Controller) applyExisting(ctx context.Context, p *engine.Policy) ([]*api.UpdateRequest, error) {
	if mutatingPolicy(p) {
		return c.mutateExisting(ctx, p)
	}
	spec := classicSpec(p)
	var urs []*api.UpdateRequest
	var errs []error
	for _, r := range p.Rules() {
		var typ api.UpdateRequestType
		switch {
		case r.Generation != nil:
			existing := spec.GenerateExisting || (spec.GenerateExistingOnPolicyUpdate != nil && *spec.GenerateExistingOnPolicyUpdate)
			if r.Generation.GenerateExisting != nil {
				existing = *r.Generation.GenerateExisting
			}
			if !existing {
				continue
			}
			typ = api.URGenerate
		case r.Mutation != nil && len(r.Mutation.Targets) > 0:
			existing := spec.MutateExistingOnPolicyUpdate
			if r.Mutation.MutateExistingOnPolicyUpdate != nil {
				existing = *r.Mutation.MutateExistingOnPolicyUpdate
			}
			if !existing {
				continue
			}
			typ = api.URMutate
		default:
			continue
		}
		triggers, err := c.listTriggers(ctx, p, r)
		if err != nil {
			errs = append(errs, err)
		}
		for _, t := range triggers {
			ur := newRequest(p.Key(), typ, api.RuleContext{Rule: r.Name, Trigger: genlabel.Spec(t)})
			err := c.Process(ctx, ur)
			if ur.Status.State == api.URSkip {
				continue
			}
			urs = append(urs, ur)
			errs = append(errs, err)
		}
	}
	return urs, errors.Join(errs...)
}

// mutateExisting applies a MutatingPolicy with mutateExisting to the
// existing resources it selects, as upstream's policy controller does when
// the policy is created or updated: one request naming no rule and no
// trigger (engine.PolicySet.MutateExisting); with a target expression,
// which resolves the targets from a trigger, one request per existing
// trigger, as an update of it. A policy without mutateExisting gives
// none.
func (c *Controller) mutateExisting(ctx context.Context, p *engine.Policy) ([]*api.UpdateRequest, error) {
	if mp, ok := p.Source().(*api.MutatingPolicy); ok && mp.Spec.MutateExistingEnabled() && !existingMutator(p) {
		return c.mutateExistingTriggers(ctx, p, mp)
	}
	if !existingMutator(p) {
		return nil, nil
	}
	ur := newRequest(p.Key(), api.URMutate, api.RuleContext{})
	err := c.Process(ctx, ur)
	if ur.Status.State == api.URSkip {
		return nil, err
	}
	return []*api.UpdateRequest{ur}, err
}

// mutateExistingTriggers processes a request per existing trigger of a
// MutatingPolicy with a target expression: the objects of the resources
// its matchConstraints name (in its namespace for a namespaced policy),
// listed through the client's resource listing (cel.ResourceClient);
// resources with wildcards and subresources are not listed.
func (c *Controller) mutateExistingTriggers(ctx context.Context, p *engine.Policy, mp *api.MutatingPolicy) ([]*api.UpdateRequest, error) {
	m := mp.Spec.MatchConstraints
	if m == nil {
		return nil, nil
	}
	rc, ok := c.client.(cel.ResourceClient)
	if !ok {
		return nil, fmt.Errorf("listing the triggers of %s: the client lists no resources: %w", p.Key(), engine.ErrNotConfigured)
	}
	var urs []*api.UpdateRequest
	var errs []error
	seen := map[string]bool{}
	for _, r := range m.ResourceRules {
		for _, g := range r.APIGroups {
			for _, v := range r.APIVersions {
				for _, res := range r.Resources {
					if g == "*" || v == "*" || strings.ContainsAny(res, "*/") {
						continue
					}
					av := v
					if g != "" {
						av = g + "/" + v
					}
					if seen[av+" "+res] {
						continue
					}
					seen[av+" "+res] = true
					list, err := rc.ListResources(ctx, av, res, policykey.Namespace(p.Source()), nil)
					if err != nil {
						errs = append(errs, fmt.Errorf("listing %s %s: %w", av, res, err))
						continue
					}
					items, _ := list["items"].([]any)
					for _, it := range items {
						t, ok := it.(map[string]any)
						if !ok {
							continue
						}
						ur := newRequest(p.Key(), api.URMutate, api.RuleContext{Trigger: genlabel.Spec(t)})
						ur.Spec.Context.AdmissionRequestInfo.Operation = api.Update
						err := c.Process(ctx, ur)
						if ur.Status.State == api.URSkip {
							continue
						}
						urs, errs = append(urs, ur), append(errs, err)
					}
				}
			}
		}
	}
	return urs, errors.Join(errs...)
}

// listTriggers lists the existing resources of the kinds a rule matches
// (in the policy's namespace for a namespaced Policy). Kinds with
// wildcards and subresources cannot be listed and are ignored.
func (c *Controller) listTriggers(ctx context.Context, p *engine.Policy, r *api.Rule) ([]map[string]any, error) {
	var kinds []string
	add := func(d api.ResourceDescription) { kinds = append(kinds, d.Kinds...) }
	add(r.MatchResources.ResourceDescription)
	for _, f := range r.MatchResources.Any {
		add(f.ResourceDescription)
	}
	for _, f := range r.MatchResources.All {
		add(f.ResourceDescription)
	}
	seen := map[string]bool{}
	var out []map[string]any
	var errs []error
	for _, k := range kinds {
		av, kind := splitMatchKind(k)
		if kind == "" || wildcard.Has(av) || wildcard.Has(kind) || seen[av+"|"+kind] {
			continue
		}
		seen[av+"|"+kind] = true
		objs, err := c.client.List(ctx, av, kind, policykey.Namespace(p.Source()), nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("failed to list %s triggers of rule %s: %w", k, r.Name, err))
			continue
		}
		out = append(out, objs...)
	}
	return out, errors.Join(errs...)
}

// splitMatchKind splits a match kind ("Pod", "v1/Pod", "apps/v1/Deployment",
// "Pod/status") into apiVersion and kind; the kind is empty for a
// subresource.
func splitMatchKind(s string) (apiVersion, kind string) {
	parts := strings.Split(s, "/")
	last := parts[len(parts)-1]
	if last == "" || (last[0] >= 'a' && last[0] <= 'z') {
		return "", ""
	}
	return strings.Join(parts[:len(parts)-1], "/"), last
}

// OnTriggerDelete handles the deletion of a trigger: for every generate
// rule that applied to it, the downstream resources are deleted when the
// rule synchronizes, and the rule is applied when its match block names
// the DELETE operation (generation on deletion), as upstream.
func (c *Controller) OnTriggerDelete(ctx context.Context, trigger map[string]any) ([]*api.UpdateRequest, error) {
	if trigger == nil {
		return nil, errors.New("OnTriggerDelete: nil trigger")
	}
	set := c.Policies()
	if set == nil {
		return nil, nil
	}
	resp, err := set.Generate(ctx, &engine.Request{Controller: true, Operation: api.Delete, Object: trigger, OldObject: trigger})
	if err != nil {
		return nil, err
	}
	spec := genlabel.Spec(trigger)
	adm := map[string]any{"operation": string(api.Delete), "oldObject": trigger, "object": trigger, "name": spec.Name, "namespace": spec.Namespace}
	urs, err := c.gpolTriggerEvent(ctx, set, api.Delete, trigger, trigger)
	errs := []error{err}
	for _, pr := range resp.Policies {
		var rcs []api.RuleContext
		for _, res := range pr.Rules {
			r := findAPIRule(pr.Policy, res.Name)
			if r == nil || r.Generation == nil || res.Status == engine.StatusSkip {
				continue
			}
			switch {
			case matchesOperation(r, api.Delete):
				rcs = append(rcs, api.RuleContext{Rule: r.Name, Trigger: spec})
			case r.Generation.Synchronize:
				rcs = append(rcs, api.RuleContext{Rule: r.Name, Trigger: spec, DeleteDownstream: true, Synchronize: true})
			}
		}
		if len(rcs) == 0 {
			continue
		}
		ur := newRequest(pr.Policy.Key(), api.URGenerate, rcs...)
		ur.Spec.Context.AdmissionRequestInfo = api.AdmissionRequestInfo{AdmissionRequest: adm, Operation: api.Delete}
		urs = append(urs, ur)
		errs = append(errs, c.dispatch(ctx, ur))
	}
	return urs, errors.Join(errs...)
}

// OnTriggerUpdate handles an updated trigger: rules that still apply are
// applied again (synchronized data is updated), and the downstream
// resources of synchronized rules that applied to the old object but no
// longer apply to the new one are deleted.
func (c *Controller) OnTriggerUpdate(ctx context.Context, old, cur map[string]any) ([]*api.UpdateRequest, error) {
	if old == nil || cur == nil {
		return nil, errors.New("OnTriggerUpdate: nil object")
	}
	set := c.Policies()
	if set == nil {
		return nil, nil
	}
	resp, err := set.Generate(ctx, &engine.Request{Controller: true, Operation: api.Update, Object: cur, OldObject: old})
	if err != nil {
		return nil, err
	}
	newSpec, oldSpec := genlabel.Spec(cur), genlabel.Spec(old)
	urs, err := c.gpolTriggerEvent(ctx, set, api.Update, old, cur)
	errs := []error{err}
	for _, pr := range resp.Policies {
		var gen, del []api.RuleContext
		for _, res := range pr.Rules {
			r := findAPIRule(pr.Policy, res.Name)
			if r == nil || r.Generation == nil {
				continue
			}
			switch {
			case res.Status == engine.StatusPass:
				gen = append(gen, api.RuleContext{Rule: r.Name, Trigger: newSpec})
			case res.Status == engine.StatusFail && r.Generation.Synchronize:
				del = append(del, api.RuleContext{Rule: r.Name, Trigger: oldSpec, DeleteDownstream: true, Synchronize: true})
			}
		}
		for _, rcs := range [][]api.RuleContext{gen, del} {
			if len(rcs) == 0 {
				continue
			}
			ur := newRequest(pr.Policy.Key(), api.URGenerate, rcs...)
			urs = append(urs, ur)
			errs = append(errs, c.dispatch(ctx, ur))
		}
	}
	return urs, errors.Join(errs...)
}

// OnDownstreamChange handles a modified (cur set) or deleted (cur nil)
// downstream resource: when the rule that generated it synchronizes, the
// rule is applied again for its trigger, which reverts the change or
// recreates the resource. Without synchronize nothing happens.
func (c *Controller) OnDownstreamChange(ctx context.Context, old, cur map[string]any) ([]*api.UpdateRequest, error) {
	obj := old
	if obj == nil {
		obj = cur
	}
	if obj == nil {
		return nil, errors.New("OnDownstreamChange: nil object")
	}
	labels := genlabel.Of(obj)
	if labels[genlabel.ManagedBy] != genlabel.ManagedByValue || labels[genlabel.PolicyName] == "" {
		return nil, nil
	}
	return c.resync(ctx, obj, []map[string]string{labels}, false)
}

// OnSourceChange handles a modified (cur set) or deleted (cur nil) clone
// source: for the downstream resources cloned from it by rules that
// synchronize, the rule is applied again (modified source: the downstream
// resources are synced) or the downstream resources cloned from this
// source are deleted (deleted source). Without synchronize nothing happens.
func (c *Controller) OnSourceChange(ctx context.Context, old, cur map[string]any) ([]*api.UpdateRequest, error) {
	if old == nil {
		return nil, errors.New("OnSourceChange: nil old object")
	}
	spec := genlabel.Spec(old)
	group, version := splitAPIVersion(spec.APIVersion)
	base := map[string]string{
		genlabel.SourceGroup:   group,
		genlabel.SourceVersion: version,
		genlabel.SourceKind:    spec.Kind,
		genlabel.SourceNS:      spec.Namespace,
	}
	selectors := []map[string]string{copyLabels(base)}
	selectors[0][genlabel.SourceName] = spec.Name
	if spec.UID != "" {
		byUID := copyLabels(base)
		byUID[genlabel.SourceUID] = spec.UID
		selectors = append(selectors, byUID)
	}
	var labelSets []map[string]string
	seen := map[string]bool{}
	for _, sel := range selectors {
		objs, err := c.client.List(ctx, "", spec.Kind, "", &metav1.LabelSelector{MatchLabels: sel})
		if err != nil {
			return nil, fmt.Errorf("failed to list targets resources: %w", err)
		}
		for _, o := range objs {
			s := genlabel.Spec(o)
			key := s.Kind + "/" + s.Namespace + "/" + s.Name
			if seen[key] {
				continue
			}
			seen[key] = true
			labelSets = append(labelSets, genlabel.Of(o))
		}
	}
	return c.resync(ctx, old, labelSets, cur == nil)
}

// resync builds, for each downstream label set, a request re-applying (or,
// with deleteDownstream, deleting the downstream of) the synchronized rule
// that generated it, as upstream's processRequest.
func (c *Controller) resync(ctx context.Context, changed map[string]any, labelSets []map[string]string, deleteDownstream bool) ([]*api.UpdateRequest, error) {
	var urs []*api.UpdateRequest
	var errs []error
	for _, labels := range labelSets {
		key := labels[genlabel.PolicyName]
		if ns := labels[genlabel.PolicyNamespace]; ns != "" {
			key = ns + "/" + key
		}
		if _, rule := labels[genlabel.RuleName]; !rule {
			ur, err := c.resyncGpol(ctx, key, changed, labels, deleteDownstream)
			if ur != nil {
				urs = append(urs, ur)
			}
			errs = append(errs, err)
			continue
		}
		p := c.policy(key)
		if p == nil {
			continue
		}
		r := findAPIRule(p, labels[genlabel.RuleName])
		if r == nil || r.Generation == nil || !r.Generation.Synchronize {
			continue
		}
		if c.appliesTo(ctx, p, r.Name, changed) {
			continue // the changed resource is also a trigger of the rule
		}
		ur := newRequest(key, api.URGenerate, api.RuleContext{Rule: r.Name, Trigger: triggerFromLabels(labels), DeleteDownstream: deleteDownstream, Synchronize: true})
		if deleteDownstream {
			old := deepcopy.Object(changed)
			md, _ := old["metadata"].(map[string]any)
			l, _ := md["labels"].(map[string]any)
			if md != nil {
				if l == nil {
					l = map[string]any{}
					md["labels"] = l
				}
				l[genlabel.CloneSource] = ""
			}
			ur.Spec.Context.AdmissionRequestInfo = api.AdmissionRequestInfo{
				AdmissionRequest: map[string]any{"operation": string(api.Delete), "oldObject": old},
				Operation:        api.Delete,
			}
		}
		urs = append(urs, ur)
		errs = append(errs, c.dispatch(ctx, ur))
	}
	return urs, errors.Join(errs...)
}

// dispatch processes a request built by an object event's handler, or,
// with WithQueue, enqueues it (one the queue refuses is Failed with the
// queue's error as its message).
func (c *Controller) dispatch(ctx context.Context, ur *api.UpdateRequest) error {
	if c.queue == nil {
		return c.Process(ctx, ur)
	}
	if err := c.queue.Enqueue(ctx, ur); err != nil {
		ur.Status.State, ur.Status.Message = api.URFailed, err.Error()
		return fmt.Errorf("failed to enqueue the update request of policy %s: %w", ur.Spec.Policy, err)
	}
	return nil
}

// appliesTo reports whether the rule of p matches obj (as a trigger).
func (c *Controller) appliesTo(ctx context.Context, p *engine.Policy, rule string, obj map[string]any) bool {
	resp, err := c.engine().NewPolicySet(p).Generate(ctx, &engine.Request{Controller: true, Operation: api.Update, Object: obj})
	if err != nil {
		return false
	}
	pr, _ := findRule(resp.Policies, rule)
	return pr != nil
}

// triggerFromLabels is the trigger a downstream resource's labels name.
func triggerFromLabels(labels map[string]string) api.ResourceSpec {
	av := labels[genlabel.TriggerVersion]
	if g := labels[genlabel.TriggerGroup]; g != "" {
		av = g + "/" + av
	}
	return api.ResourceSpec{
		APIVersion: av,
		Kind:       labels[genlabel.TriggerKind],
		Namespace:  labels[genlabel.TriggerNS],
		Name:       labels[genlabel.TriggerName],
		UID:        labels[genlabel.TriggerUID],
	}
}

// matchesOperation reports whether a rule's match block names op.
func matchesOperation(r *api.Rule, op api.AdmissionOperation) bool {
	has := func(d api.ResourceDescription) bool {
		for _, o := range d.Operations {
			if o == op {
				return true
			}
		}
		return false
	}
	if has(r.MatchResources.ResourceDescription) {
		return true
	}
	for _, f := range r.MatchResources.Any {
		if has(f.ResourceDescription) {
			return true
		}
	}
	for _, f := range r.MatchResources.All {
		if has(f.ResourceDescription) {
			return true
		}
	}
	return false
}

// newRequest builds a Pending UpdateRequest.
func newRequest(policyKey string, typ api.UpdateRequestType, rcs ...api.RuleContext) *api.UpdateRequest {
	ur := &api.UpdateRequest{}
	ur.APIVersion = "kyverno.io/v2"
	ur.Kind = api.KindUpdateRequest
	ur.GenerateName = "ur-"
	ur.Namespace = "kyverno"
	_, name, _ := strings.Cut(policyKey, "/")
	if name == "" {
		name = policyKey
	}
	if typ == api.URMutate {
		ur.Labels = map[string]string{genlabel.URMutatePolicy: name}
	} else {
		ur.Labels = map[string]string{genlabel.URGeneratePolicy: name}
	}
	ur.Spec = api.UpdateRequestSpec{Type: typ, Policy: policyKey, RuleContext: rcs}
	if len(rcs) > 0 {
		ur.Spec.Resource = rcs[0].Trigger
	}
	if len(rcs) == 1 {
		ur.Spec.Rule = rcs[0].Rule
		ur.Spec.DeleteDownstream = rcs[0].DeleteDownstream
	}
	ur.Status.State = api.URPending
	return ur
}
