package generate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gavelpolicy/gavel/internal/policykey"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/internal/deepcopy"
	"github.com/gavelpolicy/gavel/internal/genlabel"
)

// GeneratingPolicies (policies.kyverno.io) go through the same
// UpdateRequests as generate rules, with upstream's type cel-generate
// (api.URCELGenerate) and one rule context per trigger (its rule is the
// policy's key). Their
// downstream resources carry upstream's tracking labels without a rule
// name. Unlike a generate rule, a GeneratingPolicy does not tell which
// kinds it generates: the controller learns them from what it writes (and
// from Restore), to find the downstream resources again by their labels.

// isGenerating reports whether p is a GeneratingPolicy or a
// NamespacedGeneratingPolicy.
func isGenerating(p *engine.Policy) bool {
	k := api.KindOf(p.Source())
	return k == api.KindGeneratingPolicy || k == api.KindNamespacedGeneratingPolicy
}

// gpolSpec returns the spec of a GeneratingPolicy.
func gpolSpec(p *engine.Policy) *policiesv1alpha1.GeneratingPolicySpec {
	if gp, ok := p.Source().(*api.GeneratingPolicy); ok {
		return &gp.Spec
	}
	return &policiesv1alpha1.GeneratingPolicySpec{}
}

// gpolKindsOf returns the downstream kinds the controller knows for a
// GeneratingPolicy, sorted.
func (c *Controller) gpolKindsOf(key string) []kindRef {
	c.kindsMu.Lock()
	defer c.kindsMu.Unlock()
	out := make([]kindRef, 0, len(c.gpolKinds[key]))
	for k := range c.gpolKinds[key] {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].apiVersion != out[j].apiVersion {
			return out[i].apiVersion < out[j].apiVersion
		}
		return out[i].kind < out[j].kind
	})
	return out
}

// noteKinds records the kinds of objects a GeneratingPolicy generates and
// tells the host about the kinds it did not know (WithDownstreamKinds).
func (c *Controller) noteKinds(key string, objs []map[string]any) {
	var fresh []kindRef
	c.kindsMu.Lock()
	for _, o := range objs {
		s := genlabel.Spec(o)
		if s.Kind == "" {
			continue
		}
		k := kindRef{s.APIVersion, s.Kind}
		if c.gpolKinds[key] == nil {
			c.gpolKinds[key] = map[kindRef]bool{}
		}
		if !c.gpolKinds[key][k] {
			c.gpolKinds[key][k] = true
			fresh = append(fresh, k)
		}
	}
	c.kindsMu.Unlock()
	if c.onKind != nil {
		for _, k := range fresh {
			c.onKind(k.apiVersion, k.kind)
		}
	}
}

// processCELGenerate processes an UpdateRequest of a GeneratingPolicy as
// upstream's CEL generate controller: for each trigger, the downstream
// resources are deleted (deleteDownstream), or the policy is evaluated
// and its downstream written; with synchronize on an updated trigger, the
// downstream of a trigger the policy no longer applies to, or that the
// policy no longer generates, is deleted.
func (c *Controller) processCELGenerate(ctx context.Context, ur *api.UpdateRequest) ([]engine.PolicyResult, []api.ResourceSpec, bool, error) {
	p := c.policyOf(ur.Spec.Policy, true)
	var (
		failures []error
		specs    []api.ResourceSpec
		results  []engine.PolicyResult
		applied  bool
	)
	for _, rc := range ruleContexts(ur) {
		if rc.DeleteDownstream {
			if err := c.deleteGpolDownstream(ctx, ur.Spec.Policy, p, rc.Trigger, nil, clonedFrom(ur, rc)); err != nil {
				failures = append(failures, fmt.Errorf("gpol %s failed: %w", ur.Spec.Policy, err))
			}
			applied = true
			continue
		}
		if p == nil {
			continue
		}
		trigger, err := c.trigger(ctx, ur, rc)
		if err != nil {
			failures = append(failures, fmt.Errorf("gpol %s failed: failed to fetch trigger resource: %w", ur.Spec.Policy, err))
			continue
		}
		prs, written, ok, err := c.applyGpol(ctx, p, rc, ur, trigger)
		results, specs = append(results, prs...), append(specs, written...)
		applied = applied || ok
		if err != nil {
			failures = append(failures, fmt.Errorf("gpol %s failed: %w", ur.Spec.Policy, err))
		}
	}
	return results, specs, applied, errors.Join(failures...)
}

// applyGpol evaluates a GeneratingPolicy on one trigger and writes its
// downstream. It reports whether the policy applied to the trigger.
func (c *Controller) applyGpol(ctx context.Context, p *engine.Policy, rc api.RuleContext, ur *api.UpdateRequest, trigger map[string]any) ([]engine.PolicyResult, []api.ResourceSpec, bool, error) {
	resp, err := c.engine().NewPolicySet(p).Generate(ctx, c.request(ur, trigger))
	if err != nil {
		return nil, nil, false, err
	}
	var res *engine.RuleResult
	for i := range resp.Policies {
		if len(resp.Policies[i].Rules) > 0 {
			res = &resp.Policies[i].Rules[0]
		}
	}
	sync := gpolSpec(p).SynchronizationEnabled()
	tspec := genlabel.Spec(trigger)
	if res == nil {
		// the trigger no longer matches the policy: with synchronize, its
		// downstream goes
		if rc.Synchronize && sync {
			return resp.Policies, nil, true, c.deleteGpolDownstream(ctx, p.Key(), p, tspec, nil, nil)
		}
		return resp.Policies, nil, false, nil
	}
	switch res.Status {
	case engine.StatusPass:
	case engine.StatusSkip:
		return resp.Policies, nil, true, nil
	default:
		return resp.Policies, nil, true, fmt.Errorf("rule %s %s for trigger %s: %s", res.Name, res.Status, objKey(tspec.Namespace, tspec.Name), res.Message)
	}
	c.noteKinds(p.Key(), res.GeneratedResources)
	ssa := gpolSpec(p).UseServerSideApply
	var specs []api.ResourceSpec
	var errs []error
	for _, obj := range res.GeneratedResources {
		spec, written, err := c.writeGpol(ctx, obj, ssa)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if written {
			specs = append(specs, spec)
			c.tagSource(ctx, obj)
		}
	}
	if rc.Synchronize && sync {
		errs = append(errs, c.deleteGpolDownstream(ctx, p.Key(), p, tspec, res.GeneratedResources, nil))
	}
	if err := errors.Join(errs...); err != nil {
		res.Status, res.Message, res.Err = engine.StatusError, err.Error(), err
		return resp.Policies, specs, true, err
	}
	return resp.Policies, specs, true, nil
}

// writeGpol writes a downstream object of a GeneratingPolicy: created when
// missing, updated when it is this policy's downstream of this trigger,
// left alone (not adopted, not reported) when another owner's object has
// its name.
func (c *Controller) writeGpol(ctx context.Context, obj map[string]any, ssa bool) (api.ResourceSpec, bool, error) {
	spec := genlabel.Spec(obj)
	spec.UID = ""
	where := fmt.Sprintf("%s %s", spec.Kind, objKey(spec.Namespace, spec.Name))
	existing, err := c.client.Get(ctx, spec.APIVersion, spec.Kind, spec.Namespace, spec.Name)
	switch {
	case errors.Is(err, engine.ErrNotFound) || (err == nil && existing == nil):
		existing = nil
	case err != nil:
		return spec, false, fmt.Errorf("failed to get %s: %w", where, err)
	}
	if existing != nil && !sameOwner(existing, obj) {
		return spec, false, nil
	}
	if ssa {
		if a, ok := c.client.(ServerSideApplier); ok {
			if _, err := a.Apply(ctx, obj, "generate"); err != nil {
				return spec, false, fmt.Errorf("failed to apply %s: %w", where, err)
			}
			return spec, true, nil
		}
	}
	if existing == nil {
		if _, err := c.client.Create(ctx, obj); err != nil {
			return spec, false, fmt.Errorf("failed to create %s: %w", where, err)
		}
		return spec, true, nil
	}
	if holds(existing, obj) {
		// up to date: no write (a write would reach the webhooks, whose
		// downstream handler would queue the same request again)
		return spec, true, nil
	}
	if _, err := c.client.Update(ctx, withResourceVersion(obj, existing)); err != nil {
		return spec, false, fmt.Errorf("failed to update %s: %w", where, err)
	}
	return spec, true, nil
}

// sameOwner reports whether an existing object is the downstream of the
// same GeneratingPolicy and trigger as obj (upstream's isManagedByPolicy).
func sameOwner(existing, obj map[string]any) bool {
	el, ol := genlabel.Of(existing), genlabel.Of(obj)
	return el[genlabel.ManagedBy] == genlabel.ManagedByValue &&
		el[genlabel.PolicyName] == ol[genlabel.PolicyName] &&
		el[genlabel.PolicyNamespace] == ol[genlabel.PolicyNamespace] &&
		el[genlabel.TriggerUID] == ol[genlabel.TriggerUID]
}

// gpolSelector selects the downstream of a GeneratingPolicy (by the key's
// name and namespace), of one trigger when trigger is set (by its UID,
// else its name).
func gpolSelector(key string, trigger *api.ResourceSpec) map[string]string {
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		ns, name = "", key
	}
	sel := map[string]string{
		genlabel.ManagedBy:       genlabel.ManagedByValue,
		genlabel.PolicyName:      name,
		genlabel.PolicyNamespace: ns,
	}
	if trigger == nil {
		return sel
	}
	if trigger.UID != "" {
		sel[genlabel.TriggerUID] = trigger.UID
		return sel
	}
	group, version := splitAPIVersion(trigger.APIVersion)
	sel[genlabel.TriggerName] = trigger.Name
	sel[genlabel.TriggerNS] = trigger.Namespace
	sel[genlabel.TriggerKind] = trigger.Kind
	sel[genlabel.TriggerGroup] = group
	sel[genlabel.TriggerVersion] = version
	return sel
}

// gpolDownstream lists the downstream of a GeneratingPolicy (of one
// trigger when trigger is set) in the kinds the controller knows for it.
// A downstream labelled with a rule name is a generate rule's (of a
// ClusterPolicy of the same name), not the policy's.
func (c *Controller) gpolDownstream(ctx context.Context, key string, trigger *api.ResourceSpec) ([]map[string]any, error) {
	sel := gpolSelector(key, trigger)
	var out []map[string]any
	var errs []error
	for _, k := range c.gpolKindsOf(key) {
		objs, err := c.client.List(ctx, k.apiVersion, k.kind, "", &metav1.LabelSelector{MatchLabels: sel})
		if err != nil {
			errs = append(errs, fmt.Errorf("failed to list %s %s downstream resources: %w", k.apiVersion, k.kind, err))
			continue
		}
		for _, o := range objs {
			if _, rule := genlabel.Of(o)[genlabel.RuleName]; !rule {
				out = append(out, o)
			}
		}
	}
	return out, errors.Join(errs...)
}

// clonedFrom returns, for a request that deletes the downstream cloned
// from a deleted clone source (its admission request's old object is the
// source, not the trigger), a test of the objects cloned from it; nil
// otherwise.
func clonedFrom(ur *api.UpdateRequest, rc api.RuleContext) func(map[string]any) bool {
	adm := admissionRequest(ur)
	old, _ := adm["oldObject"].(map[string]any)
	if old == nil || operation(ur) != api.Delete {
		return nil
	}
	src := genlabel.Spec(old)
	if src.Kind == rc.Trigger.Kind && src.Namespace == rc.Trigger.Namespace && src.Name == rc.Trigger.Name {
		return nil
	}
	return func(obj map[string]any) bool {
		l := genlabel.Of(obj)
		if src.UID != "" && l[genlabel.SourceUID] != "" {
			return l[genlabel.SourceUID] == src.UID
		}
		return l[genlabel.SourceKind] == src.Kind && l[genlabel.SourceNS] == src.Namespace && l[genlabel.SourceName] == src.Name
	}
}

// deleteGpolDownstream deletes the downstream of a GeneratingPolicy for a
// trigger (only the objects only accepts, when set), but for the objects
// in keep (by kind, namespace and name). When the policy is known (p
// set), the kinds it generates for the trigger's current state are learnt
// first, so that a downstream is found even when this controller did not
// write it.
func (c *Controller) deleteGpolDownstream(ctx context.Context, key string, p *engine.Policy, trigger api.ResourceSpec, keep []map[string]any, only func(map[string]any) bool) error {
	if p != nil {
		c.learnKinds(ctx, p, trigger)
	}
	objs, err := c.gpolDownstream(ctx, key, &trigger)
	kept := map[string]bool{}
	for _, k := range keep {
		s := genlabel.Spec(k)
		kept[s.APIVersion+"|"+s.Kind+"|"+s.Namespace+"|"+s.Name] = true
	}
	errs := []error{err}
	for _, o := range objs {
		s := genlabel.Spec(o)
		if kept[s.APIVersion+"|"+s.Kind+"|"+s.Namespace+"|"+s.Name] || (only != nil && !only(o)) {
			continue
		}
		if err := c.client.Delete(ctx, s.APIVersion, s.Kind, s.Namespace, s.Name); err != nil && !errors.Is(err, engine.ErrNotFound) {
			errs = append(errs, fmt.Errorf("failed to delete downstream %s %s: %w", s.Kind, objKey(s.Namespace, s.Name), err))
		}
	}
	return errors.Join(errs...)
}

// learnKinds evaluates a GeneratingPolicy on a trigger read from the
// cluster (as a CREATE, whatever operation it names) and records the
// kinds it generates. Failures are ignored: the kinds are a hint.
func (c *Controller) learnKinds(ctx context.Context, p *engine.Policy, trigger api.ResourceSpec) {
	obj, err := c.fetch(ctx, trigger)
	if err != nil {
		return
	}
	resp, err := c.engine().NewPolicySet(p).Generate(ctx, &engine.Request{Controller: true, Operation: api.Create, Object: obj})
	if err != nil {
		return
	}
	for _, pr := range resp.Policies {
		for _, r := range pr.Rules {
			c.noteKinds(p.Key(), r.GeneratedResources)
		}
	}
}

// gpolPolicyUpdate handles a created or updated GeneratingPolicy: with
// synchronize, the downstream of the triggers it generated for is synced
// (what it no longer generates is deleted); with generateExisting, it is
// applied to every existing trigger.
func (c *Controller) gpolPolicyUpdate(ctx context.Context, old, cur *engine.Policy) ([]*api.UpdateRequest, error) {
	spec := gpolSpec(cur)
	var urs []*api.UpdateRequest
	var errs []error
	done := map[string]bool{}
	if old != nil && spec.SynchronizationEnabled() {
		downstream, err := c.gpolDownstream(ctx, cur.Key(), nil)
		errs = append(errs, err)
		for _, d := range downstream {
			t := triggerFromLabels(genlabel.Of(d))
			id := t.UID + "|" + t.Kind + "|" + t.Namespace + "|" + t.Name
			if done[id] {
				continue
			}
			done[id] = true
			ur := newRequest(cur.Key(), api.URCELGenerate, api.RuleContext{Rule: cur.Key(), Trigger: t, Synchronize: true})
			urs = append(urs, ur)
			errs = append(errs, c.Process(ctx, ur))
		}
	}
	if spec.GenerateExistingEnabled() {
		triggers, err := c.gpolTriggers(ctx, cur)
		errs = append(errs, err)
		for _, t := range triggers {
			ts := genlabel.Spec(t)
			if done[ts.UID+"|"+ts.Kind+"|"+ts.Namespace+"|"+ts.Name] {
				continue
			}
			ur := newRequest(cur.Key(), api.URCELGenerate, api.RuleContext{Rule: cur.Key(), Trigger: ts})
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

// gpolPolicyDelete handles a deleted GeneratingPolicy: with synchronize
// and without orphanDownstreamOnPolicyDelete, its downstream is deleted,
// but for the clones (objects with a source), as upstream.
func (c *Controller) gpolPolicyDelete(ctx context.Context, p *engine.Policy) ([]*api.UpdateRequest, error) {
	spec := gpolSpec(p)
	if !spec.SynchronizationEnabled() || spec.OrphanDownstreamOnPolicyDeleteEnabled() {
		return nil, nil
	}
	downstream, err := c.gpolDownstream(ctx, p.Key(), nil)
	errs := []error{err}
	var urs []*api.UpdateRequest
	for _, d := range downstream {
		if _, clone := genlabel.Of(d)[genlabel.SourceUID]; clone {
			continue
		}
		ur := newRequest(p.Key(), api.URCELGenerate, api.RuleContext{Rule: p.Key(), Trigger: triggerFromLabels(genlabel.Of(d)), DeleteDownstream: true})
		s := genlabel.Spec(d)
		if err := c.client.Delete(ctx, s.APIVersion, s.Kind, s.Namespace, s.Name); err != nil && !errors.Is(err, engine.ErrNotFound) {
			ur.Status.State, ur.Status.Message = api.URFailed, err.Error()
			errs = append(errs, err)
		} else {
			ur.Status.State = api.URCompleted
		}
		s.UID = ""
		ur.Status.GeneratedResources = []api.ResourceSpec{s}
		urs = append(urs, ur)
	}
	return urs, errors.Join(errs...)
}

// gpolTriggers lists the existing objects of the resources a
// GeneratingPolicy's resource rules name (in its namespace for a
// NamespacedGeneratingPolicy). Listing by resource needs a Client that is
// a cel.ResourceClient; rules with wildcards or subresources cannot be
// listed and are ignored.
func (c *Controller) gpolTriggers(ctx context.Context, p *engine.Policy) ([]map[string]any, error) {
	rc, ok := c.client.(cel.ResourceClient)
	if !ok {
		return nil, fmt.Errorf("listing the triggers of %s: the client does not list by resource (no cel.ResourceClient): %w", p.Key(), engine.ErrNotConfigured)
	}
	spec := gpolSpec(p)
	if spec.MatchConstraints == nil {
		return nil, nil
	}
	var out []map[string]any
	var errs []error
	seen := map[string]bool{}
	for _, r := range spec.MatchConstraints.ResourceRules {
		for _, g := range r.APIGroups {
			for _, v := range r.APIVersions {
				for _, res := range r.Resources {
					if strings.ContainsAny(g+v+res, "*/") {
						continue
					}
					av := v
					if g != "" {
						av = g + "/" + v
					}
					if seen[av+"|"+res] {
						continue
					}
					seen[av+"|"+res] = true
					list, err := rc.ListResources(ctx, av, res, policykey.Namespace(p.Source()), nil)
					if err != nil {
						errs = append(errs, fmt.Errorf("failed to list %s %s: %w", av, res, err))
						continue
					}
					items, _ := list["items"].([]any)
					for _, it := range items {
						if m, ok := it.(map[string]any); ok {
							out = append(out, m)
						}
					}
				}
			}
		}
	}
	return out, errors.Join(errs...)
}

// Restore learns the downstream kinds of the synchronized
// GeneratingPolicies of the controller's policies, as upstream restores
// its watchers when its controller starts: each policy is evaluated on
// its existing triggers (nothing is written). A host that watches the
// downstream kinds (WithDownstreamKinds) calls it when it starts, so that
// the downstream written by an earlier process is watched too.
func (c *Controller) Restore(ctx context.Context) error {
	set := c.Policies()
	if set == nil {
		return nil
	}
	var errs []error
	for _, p := range set.Policies() {
		if !isGenerating(p) || !gpolSpec(p).SynchronizationEnabled() {
			continue
		}
		triggers, err := c.gpolTriggers(ctx, p)
		errs = append(errs, err)
		one := c.engine().NewPolicySet(p)
		for _, t := range triggers {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			resp, err := one.Generate(ctx, &engine.Request{Controller: true, Operation: api.Create, Object: t})
			if err != nil {
				continue
			}
			for _, pr := range resp.Policies {
				for _, r := range pr.Rules {
					c.noteKinds(p.Key(), r.GeneratedResources)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// gpolTriggerEvent builds the requests of the GeneratingPolicies of set
// for an updated (op UPDATE) or deleted (op DELETE) trigger, as
// upstream's webhook handler, for the policies the trigger concerns: on
// DELETE, generation when the policy matches the deletion, else the
// deletion of the trigger's downstream when it has some and the policy
// synchronizes; on UPDATE, generation (synchronized with synchronize)
// when the policy matches the new object, else the deletion of the
// downstream as above.
func (c *Controller) gpolTriggerEvent(ctx context.Context, set *engine.PolicySet, op api.AdmissionOperation, old, cur map[string]any) ([]*api.UpdateRequest, error) {
	var urs []*api.UpdateRequest
	var errs []error
	for _, p := range set.Policies() {
		if !isGenerating(p) {
			continue
		}
		spec := gpolSpec(p)
		req := &engine.Request{Operation: op, Object: cur, OldObject: old, Controller: true}
		if op == api.Delete {
			req.Object = nil
		}
		resp, err := c.engine().NewPolicySet(p).Generate(ctx, req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		matched := false
		for _, pr := range resp.Policies {
			matched = matched || len(pr.Rules) > 0
		}
		t := genlabel.Spec(cur)
		if op == api.Delete {
			t = genlabel.Spec(old)
		}
		rc := api.RuleContext{Rule: p.Key(), Trigger: t, Synchronize: op == api.Update && spec.SynchronizationEnabled()}
		if !matched {
			if !spec.SynchronizationEnabled() {
				continue
			}
			old := genlabel.Spec(old)
			if d, err := c.gpolDownstream(ctx, p.Key(), &old); err != nil || len(d) == 0 {
				errs = append(errs, err)
				continue
			}
			rc = api.RuleContext{Rule: p.Key(), Trigger: old, DeleteDownstream: true, Synchronize: true}
		}
		ur := newRequest(p.Key(), api.URCELGenerate, rc)
		ur.Spec.Context.AdmissionRequestInfo = api.AdmissionRequestInfo{
			AdmissionRequest: map[string]any{"operation": string(op), "object": cur, "oldObject": old},
			Operation:        op,
		}
		if op == api.Delete {
			ur.Spec.Context.AdmissionRequestInfo.AdmissionRequest = map[string]any{"operation": string(op), "oldObject": old}
		}
		urs = append(urs, ur)
		errs = append(errs, c.dispatch(ctx, ur))
	}
	return urs, errors.Join(errs...)
}

// resyncGpol builds the request that re-applies a synchronized
// GeneratingPolicy for the trigger of one of its downstream objects
// (labels), which changed or whose clone source changed; for a deleted
// clone source, the request deletes the objects cloned from it.
func (c *Controller) resyncGpol(ctx context.Context, key string, changed map[string]any, labels map[string]string, deleteDownstream bool) (*api.UpdateRequest, error) {
	p := c.policyOf(key, true)
	if p == nil || !gpolSpec(p).SynchronizationEnabled() {
		return nil, nil
	}
	if !deleteDownstream && c.gpolApplies(ctx, p, changed) {
		return nil, nil // the changed object is also a trigger of the policy
	}
	ur := newRequest(key, api.URCELGenerate, api.RuleContext{Rule: key, Trigger: triggerFromLabels(labels), DeleteDownstream: deleteDownstream, Synchronize: true})
	if deleteDownstream {
		ur.Spec.Context.AdmissionRequestInfo = api.AdmissionRequestInfo{
			AdmissionRequest: map[string]any{"operation": string(api.Delete), "oldObject": deepcopy.Object(changed)},
			Operation:        api.Delete,
		}
	}
	return ur, c.dispatch(ctx, ur)
}

// gpolApplies reports whether a GeneratingPolicy applies to obj (as a
// trigger being updated).
func (c *Controller) gpolApplies(ctx context.Context, p *engine.Policy, obj map[string]any) bool {
	resp, err := c.engine().NewPolicySet(p).Generate(ctx, &engine.Request{Controller: true, Operation: api.Update, Object: obj, OldObject: obj})
	if err != nil {
		return false
	}
	for _, pr := range resp.Policies {
		if len(pr.Rules) > 0 {
			return true
		}
	}
	return false
}

// holds reports whether an existing object holds every field of desired
// with its value (lists element by element): the fields the API server
// adds (defaults, metadata) do not count.
func holds(existing, desired any) bool {
	switch d := desired.(type) {
	case map[string]any:
		e, ok := existing.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range d {
			if !holds(e[k], v) {
				return false
			}
		}
		return true
	case []any:
		e, ok := existing.([]any)
		if !ok || len(e) != len(d) {
			return false
		}
		for i := range d {
			if !holds(e[i], d[i]) {
				return false
			}
		}
		return true
	case nil:
		return existing == nil
	}
	if a, ok := number(existing); ok {
		b, ok := number(desired)
		return ok && a == b
	}
	return existing == desired
}

// number reads a JSON number of any Go type.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}
