package generate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gavelpolicy/gavel/internal/policykey"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/internal/genlabel"
)

// errDoesNotApply marks a rule that no longer applies to its trigger.
var errDoesNotApply = errors.New("policy does not apply to resource")

// processOnce is one attempt at an UpdateRequest. It sets the request's
// status and returns the rule results and the failure, if any.
func (c *Controller) processOnce(ctx context.Context, ur *api.UpdateRequest) ([]engine.PolicyResult, error) {
	ur.Status.State = api.URPending
	ur.Status.Message = ""
	var (
		results []engine.PolicyResult
		specs   []api.ResourceSpec
		applied bool
		err     error
	)
	switch ur.Spec.Type {
	case api.URMutate:
		results, applied, err = c.processMutate(ctx, ur)
	case api.URCELGenerate:
		results, specs, applied, err = c.processCELGenerate(ctx, ur)
	default:
		results, specs, applied, err = c.processGenerate(ctx, ur)
	}
	switch {
	case err != nil:
		ur.Status.State = api.URFailed
		ur.Status.Message = err.Error()
	case !applied:
		ur.Status.State = api.URSkip
		ur.Status.Message = errDoesNotApply.Error()
	default:
		ur.Status.State = api.URCompleted
	}
	if specs != nil || ur.Spec.Type != api.URMutate {
		if len(specs) > 0 || !hasDeleteDownstream(ur) {
			ur.Status.GeneratedResources = specs
		}
	}
	return results, err
}

func hasDeleteDownstream(ur *api.UpdateRequest) bool {
	for _, rc := range ruleContexts(ur) {
		if rc.DeleteDownstream {
			return true
		}
	}
	return false
}

// ruleContexts returns the request's rule contexts, or the one its
// deprecated rule and resource fields describe.
func ruleContexts(ur *api.UpdateRequest) []api.RuleContext {
	if len(ur.Spec.RuleContext) > 0 {
		return ur.Spec.RuleContext
	}
	if ur.Spec.Rule == "" {
		return nil
	}
	return []api.RuleContext{{Rule: ur.Spec.Rule, Trigger: ur.Spec.Resource, DeleteDownstream: ur.Spec.DeleteDownstream}}
}

func (c *Controller) processGenerate(ctx context.Context, ur *api.UpdateRequest) ([]engine.PolicyResult, []api.ResourceSpec, bool, error) {
	policy := c.policy(ur.Spec.Policy)
	var (
		failures []error
		specs    []api.ResourceSpec
		results  []engine.PolicyResult
		applied  bool
	)
	for _, rc := range ruleContexts(ur) {
		if rc.DeleteDownstream || policy == nil {
			if err := c.deleteDownstream(ctx, policy, rc, ur); err != nil {
				failures = append(failures, fmt.Errorf("rule %s failed: %w", rc.Rule, err))
			}
			applied = true
			continue
		}
		trigger, err := c.trigger(ctx, ur, rc)
		if err != nil {
			failures = append(failures, fmt.Errorf("rule %s failed: failed to fetch trigger resource: %w", rc.Rule, err))
			continue
		}
		prs, written, err := c.applyGenerate(ctx, policy, rc, ur, trigger)
		results = append(results, prs...)
		specs = append(specs, written...)
		switch {
		case errors.Is(err, errDoesNotApply):
		case err != nil:
			failures = append(failures, fmt.Errorf("rule %s failed: %w", rc.Rule, err))
			applied = true
		default:
			applied = true
		}
	}
	return results, specs, applied, errors.Join(failures...)
}

// applyGenerate evaluates the policy on the trigger for one rule and writes
// the rule's downstream resources.
func (c *Controller) applyGenerate(ctx context.Context, policy *engine.Policy, rc api.RuleContext, ur *api.UpdateRequest, trigger map[string]any) ([]engine.PolicyResult, []api.ResourceSpec, error) {
	set := c.engine().NewPolicySet(policy)
	resp, err := set.Generate(ctx, c.request(ur, trigger))
	if err != nil {
		return nil, nil, err
	}
	pr, idx := findRule(resp.Policies, rc.Rule)
	if pr == nil {
		return resp.Policies, nil, errDoesNotApply
	}
	res := &pr.Rules[idx]
	switch res.Status {
	case engine.StatusPass:
	case engine.StatusError:
		return resp.Policies, nil, errors.New(res.Message)
	default:
		return resp.Policies, nil, errDoesNotApply
	}
	ssa := classicSpec(policy).UseServerSideApply
	var specs []api.ResourceSpec
	var errs []error
	for _, obj := range res.GeneratedResources {
		spec, err := c.write(ctx, obj, ssa)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		specs = append(specs, spec)
		c.tagSource(ctx, obj)
	}
	if len(errs) > 0 {
		err := errors.Join(errs...)
		res.Status = engine.StatusError
		res.Message = err.Error()
		return resp.Policies, specs, err
	}
	return resp.Policies, specs, nil
}

// findRule returns the policy result holding the named rule's first result.
func findRule(prs []engine.PolicyResult, name string) (*engine.PolicyResult, int) {
	for i := range prs {
		for j := range prs[i].Rules {
			if prs[i].Rules[j].Name == name {
				return &prs[i], j
			}
		}
	}
	return nil, 0
}

// write creates a downstream object, or updates the existing one.
func (c *Controller) write(ctx context.Context, obj map[string]any, ssa bool) (api.ResourceSpec, error) {
	spec := genlabel.Spec(obj)
	spec.UID = ""
	where := fmt.Sprintf("%s %s", spec.Kind, objKey(spec.Namespace, spec.Name))
	if ssa {
		if a, ok := c.client.(ServerSideApplier); ok {
			if _, err := a.Apply(ctx, obj, "kyverno-generate"); err != nil {
				return spec, fmt.Errorf("failed to apply %s: %w", where, err)
			}
			return spec, nil
		}
	}
	existing, err := c.client.Get(ctx, spec.APIVersion, spec.Kind, spec.Namespace, spec.Name)
	switch {
	case errors.Is(err, engine.ErrNotFound) || (err == nil && existing == nil):
		if _, err := c.client.Create(ctx, obj); err != nil {
			return spec, fmt.Errorf("failed to create %s: %w", where, err)
		}
	case err != nil:
		return spec, fmt.Errorf("failed to get %s: %w", where, err)
	default:
		upd := withResourceVersion(obj, existing)
		if _, err := c.client.Update(ctx, upd); err != nil {
			return spec, fmt.Errorf("failed to update %s: %w", where, err)
		}
	}
	return spec, nil
}

func objKey(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// withResourceVersion returns a copy of obj carrying existing's
// resourceVersion.
func withResourceVersion(obj, existing map[string]any) map[string]any {
	emd, _ := existing["metadata"].(map[string]any)
	rv, ok := emd["resourceVersion"]
	if !ok {
		return obj
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	md, _ := obj["metadata"].(map[string]any)
	m := make(map[string]any, len(md)+1)
	for k, v := range md {
		m[k] = v
	}
	m["resourceVersion"] = rv
	out["metadata"] = m
	return out
}

// tagSource adds upstream's clone-source label to the source of a cloned
// downstream object. As upstream, a failure is not an error of the request.
func (c *Controller) tagSource(ctx context.Context, downstream map[string]any) {
	labels := genlabel.Of(downstream)
	kind, ok := labels[genlabel.SourceKind]
	if !ok {
		return
	}
	av := labels[genlabel.SourceVersion]
	if g := labels[genlabel.SourceGroup]; g != "" {
		av = g + "/" + av
	}
	src, err := c.client.Get(ctx, av, kind, labels[genlabel.SourceNS], labels[genlabel.SourceName])
	if err != nil || src == nil {
		return
	}
	if _, tagged := genlabel.Of(src)[genlabel.CloneSource]; tagged {
		return
	}
	md, _ := src["metadata"].(map[string]any)
	if md == nil {
		return
	}
	l, _ := md["labels"].(map[string]any)
	if l == nil {
		l = map[string]any{}
		md["labels"] = l
	}
	l[genlabel.CloneSource] = ""
	_, _ = c.client.Update(ctx, src)
}

// admissionRequest returns the recorded admission request as a JSON-like
// map (nil when absent).
func admissionRequest(ur *api.UpdateRequest) map[string]any {
	switch v := ur.Spec.Context.AdmissionRequestInfo.AdmissionRequest.(type) {
	case nil:
		return nil
	case map[string]any:
		return v
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil {
			return nil
		}
		return m
	}
}

func operation(ur *api.UpdateRequest) api.AdmissionOperation {
	if op := ur.Spec.Context.AdmissionRequestInfo.Operation; op != "" {
		return op
	}
	if adm := admissionRequest(ur); adm != nil {
		if op, _ := adm["operation"].(string); op != "" {
			return api.AdmissionOperation(op)
		}
	}
	return api.Create
}

// trigger returns the trigger of a rule context as upstream's getTrigger:
// the admission request's old object for a deleted trigger, its object for
// an update, otherwise the resource read from the cluster.
func (c *Controller) trigger(ctx context.Context, ur *api.UpdateRequest, rc api.RuleContext) (map[string]any, error) {
	adm := admissionRequest(ur)
	if adm == nil {
		return c.fetch(ctx, rc.Trigger)
	}
	newObj, _ := adm["object"].(map[string]any)
	oldObj, _ := adm["oldObject"].(map[string]any)
	switch operation(ur) {
	case api.Delete:
		if oldObj == nil || genlabel.Of(oldObj)[genlabel.PolicyName] != "" {
			return c.fetch(ctx, rc.Trigger)
		}
		return oldObj, nil
	case api.Create:
		obj, err := c.fetch(ctx, rc.Trigger)
		if err != nil {
			if sub, _ := adm["subResource"].(string); sub != "" && newObj != nil {
				return newObj, nil
			}
			return nil, err
		}
		return obj, nil
	default:
		if newObj != nil {
			return newObj, nil
		}
		if oldObj != nil {
			return oldObj, nil
		}
		return c.fetch(ctx, rc.Trigger)
	}
}

// fetch reads a resource by name, or by UID when the name is unknown.
func (c *Controller) fetch(ctx context.Context, spec api.ResourceSpec) (map[string]any, error) {
	if spec.Name != "" {
		obj, err := c.client.Get(ctx, spec.APIVersion, spec.Kind, spec.Namespace, spec.Name)
		if err != nil {
			return nil, err
		}
		if obj == nil {
			return nil, fmt.Errorf("%s %s: %w", spec.Kind, objKey(spec.Namespace, spec.Name), engine.ErrNotFound)
		}
		return obj, nil
	}
	if spec.UID != "" {
		objs, err := c.client.List(ctx, spec.APIVersion, spec.Kind, spec.Namespace, nil)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if genlabel.Spec(o).UID == spec.UID {
				return o, nil
			}
		}
	}
	return nil, fmt.Errorf("%s with uid %q in namespace %q: %w", spec.Kind, spec.UID, spec.Namespace, engine.ErrNotFound)
}

// request rebuilds the engine request of a trigger from the recorded
// admission request.
func (c *Controller) request(ur *api.UpdateRequest, trigger map[string]any) *engine.Request {
	info := ur.Spec.Context.UserRequestInfo
	op := operation(ur)
	req := &engine.Request{
		Controller:   true,
		Operation:    op,
		Object:       trigger,
		UserInfo:     info.AdmissionUserInfo,
		Roles:        info.Roles,
		ClusterRoles: info.ClusterRoles,
	}
	if op == api.Delete {
		req.OldObject = trigger
	}
	if adm := admissionRequest(ur); adm != nil {
		req.Name, _ = adm["name"].(string)
		req.Namespace, _ = adm["namespace"].(string)
		req.UID, _ = adm["uid"].(string)
		req.SubResource, _ = adm["subResource"].(string)
		req.DryRun, _ = adm["dryRun"].(bool)
		if k, ok := adm["kind"].(map[string]any); ok {
			g, _ := k["group"].(string)
			v, _ := k["version"].(string)
			kind, _ := k["kind"].(string)
			if kind != "" && kind == genlabel.Spec(trigger).Kind {
				req.Kind = schema.GroupVersionKind{Group: g, Version: v, Kind: kind}
			}
		}
		if r, ok := adm["resource"].(map[string]any); ok {
			g, _ := r["group"].(string)
			v, _ := r["version"].(string)
			res, _ := r["resource"].(string)
			req.Resource = schema.GroupVersionResource{Group: g, Version: v, Resource: res}
		}
	}
	return req
}

// deleteDownstream deletes the downstream resources of a rule context:
// those recorded in the request's status (policy or rule deletion), or
// those found by their tracking labels (trigger deleted or no longer
// matching, clone source deleted).
func (c *Controller) deleteDownstream(ctx context.Context, policy *engine.Policy, rc api.RuleContext, ur *api.UpdateRequest) error {
	if ur.Status.GeneratedResources != nil {
		var errs []error
		for _, r := range ur.Status.GeneratedResources {
			if err := c.client.Delete(ctx, r.APIVersion, r.Kind, r.Namespace, r.Name); err != nil && !errors.Is(err, engine.ErrNotFound) {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("failed to clean up downstream resources on policy deletion: %w", errors.Join(errs...))
		}
		return nil
	}
	if policy == nil {
		return nil
	}
	rule := findAPIRule(policy, rc.Rule)
	if rule == nil || rule.Generation == nil {
		return nil
	}
	selector := map[string]string{
		genlabel.PolicyName:      policy.Source().GetName(),
		genlabel.PolicyNamespace: policykey.Namespace(policy.Source()),
		genlabel.RuleName:        rule.Name,
		genlabel.ManagedBy:       genlabel.ManagedByValue,
	}
	if src := deletedCloneSource(ur); src != nil {
		s := genlabel.Spec(src)
		if s.UID != "" {
			selector[genlabel.SourceUID] = s.UID
		} else {
			selector[genlabel.SourceName] = s.Name
			selector[genlabel.SourceNS] = s.Namespace
		}
	}
	downstreams, err := c.downstreams(ctx, rule.Generation, selector, rc.Trigger)
	if err != nil {
		return fmt.Errorf("failed to fetch downstream resources: %w", err)
	}
	var errs []error
	for _, d := range downstreams {
		s := genlabel.Spec(d)
		if err := c.client.Delete(ctx, s.APIVersion, s.Kind, s.Namespace, s.Name); err != nil && !errors.Is(err, engine.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("failed to clean up downstream resources: %w", errors.Join(errs...))
	}
	return nil
}

// deletedCloneSource returns the deleted clone source recorded in the
// request, if the request was caused by one.
func deletedCloneSource(ur *api.UpdateRequest) map[string]any {
	if operation(ur) != api.Delete {
		return nil
	}
	adm := admissionRequest(ur)
	old, _ := adm["oldObject"].(map[string]any)
	if old == nil {
		return nil
	}
	if _, ok := genlabel.Of(old)[genlabel.CloneSource]; !ok {
		return nil
	}
	return old
}

func findAPIRule(p *engine.Policy, name string) *api.Rule {
	for _, r := range p.Rules() {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// downstreams lists the downstream resources of a generate rule for a
// trigger: by the trigger's UID label first, then by its name label.
func (c *Controller) downstreams(ctx context.Context, g *api.Generation, base map[string]string, trigger api.ResourceSpec) ([]map[string]any, error) {
	group, version := splitAPIVersion(trigger.APIVersion)
	sel := copyLabels(base)
	sel[genlabel.TriggerNS] = trigger.Namespace
	sel[genlabel.TriggerKind] = trigger.Kind
	sel[genlabel.TriggerGroup] = group
	sel[genlabel.TriggerVersion] = version
	var out []map[string]any
	for _, k := range generatedKinds(g) {
		var found []map[string]any
		if trigger.UID != "" {
			byUID := copyLabels(sel)
			byUID[genlabel.TriggerUID] = trigger.UID
			objs, err := c.list(ctx, k.apiVersion, k.kind, byUID)
			if err != nil {
				return out, err
			}
			found = objs
		}
		if len(found) == 0 && trigger.Name != "" {
			byName := copyLabels(sel)
			byName[genlabel.TriggerName] = trigger.Name
			objs, err := c.list(ctx, k.apiVersion, k.kind, byName)
			if err != nil {
				return out, err
			}
			found = objs
		}
		out = append(out, found...)
	}
	return out, nil
}

func (c *Controller) list(ctx context.Context, apiVersion, kind string, labels map[string]string) ([]map[string]any, error) {
	return c.client.List(ctx, apiVersion, kind, "", &metav1.LabelSelector{MatchLabels: labels})
}

type kindRef struct{ apiVersion, kind string }

// generatedKinds returns the kinds a generate rule produces.
func generatedKinds(g *api.Generation) []kindRef {
	var out []kindRef
	add := func(rs api.ResourceSpec, cl *api.CloneList) {
		if rs.Kind != "" {
			out = append(out, kindRef{rs.APIVersion, rs.Kind})
			return
		}
		if cl != nil {
			for _, k := range cl.Kinds {
				av, kind := splitKind(k)
				out = append(out, kindRef{av, kind})
			}
		}
	}
	if len(g.ForEachGeneration) > 0 {
		for i := range g.ForEachGeneration {
			f := &g.ForEachGeneration[i]
			add(f.ResourceSpec, f.CloneList)
		}
		return out
	}
	add(g.ResourceSpec, g.CloneList)
	return out
}

// splitKind splits "v1/Secret", "apps/v1/Deployment" or "Secret".
func splitKind(s string) (apiVersion, kind string) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return "", s
	}
	return s[:i], s[i+1:]
}

func splitAPIVersion(av string) (group, version string) {
	if i := strings.IndexByte(av, '/'); i >= 0 {
		return av[:i], av[i+1:]
	}
	return "", av
}

func copyLabels(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+6)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// processMutate applies the mutate-existing rules of a request to their
// targets and writes the patched targets.
func (c *Controller) processMutate(ctx context.Context, ur *api.UpdateRequest) ([]engine.PolicyResult, bool, error) {
	policy := c.mutatePolicy(ur)
	if policy == nil {
		return nil, false, nil
	}
	var (
		failures []error
		results  []engine.PolicyResult
		applied  bool
	)
	for _, rc := range ruleContexts(ur) {
		set := c.engine().NewPolicySet(policy)
		var resp *engine.Response
		var err error
		if mutatingPolicy(policy) && rc.Trigger.Kind == "" {
			// a policy event: every existing resource the policy selects
			resp, err = set.MutateExisting(ctx, policy)
		} else {
			trigger, terr := c.trigger(ctx, ur, rc)
			if terr != nil {
				failures = append(failures, fmt.Errorf("rule %s failed: failed to fetch trigger resource: %w", rc.Rule, terr))
				continue
			}
			resp, err = set.Mutate(ctx, c.request(ur, trigger))
		}
		if err != nil {
			failures = append(failures, fmt.Errorf("rule %s failed: %w", rc.Rule, err))
			continue
		}
		for pi := range resp.Policies {
			pr := &resp.Policies[pi]
			for ri := range pr.Rules {
				res := &pr.Rules[ri]
				// a MutatingPolicy's results are the policy's, whatever
				// their names
				if res.Name != rc.Rule && !mutatingPolicy(policy) {
					continue
				}
				applied = true
				switch res.Status {
				case engine.StatusFail, engine.StatusError, engine.StatusWarn:
					failures = append(failures, fmt.Errorf("failed to mutate existing resource, rule %s, response %s: %s", res.Name, res.Status, res.Message))
				case engine.StatusPass:
					var errs []error
					for _, t := range res.PatchedTargets {
						s := genlabel.Spec(t)
						if _, err := c.client.Update(ctx, t); err != nil {
							errs = append(errs, fmt.Errorf("failed to update %s %s: %w", s.Kind, objKey(s.Namespace, s.Name), err))
						}
					}
					if len(errs) > 0 {
						err := errors.Join(errs...)
						res.Status = engine.StatusError
						res.Message = err.Error()
						failures = append(failures, err)
					}
				}
			}
			results = append(results, *pr)
		}
	}
	return results, applied, errors.Join(failures...)
}

// mutatingPolicy tells a MutatingPolicy, whose UpdateRequests name no
// rule.
// mutatePolicy returns the policy of a mutate request. A MutatingPolicy's
// requests name no rule, a ClusterPolicy's or Policy's do: that tells
// them apart when a MutatingPolicy has the key of another policy.
func (c *Controller) mutatePolicy(ur *api.UpdateRequest) *engine.Policy {
	cel := true
	for _, rc := range ruleContexts(ur) {
		cel = cel && rc.Rule == ""
	}
	if set := c.Policies(); set != nil {
		for _, p := range set.Policies() {
			if p.Key() == ur.Spec.Policy && mutatingPolicy(p) == cel {
				return p
			}
		}
	}
	return c.policy(ur.Spec.Policy)
}

func mutatingPolicy(p *engine.Policy) bool {
	return api.KindOf(p.Source()) == api.KindMutatingPolicy || api.KindOf(p.Source()) == api.KindNamespacedMutatingPolicy
}

// existingMutator tells a MutatingPolicy with mutateExisting whose
// targets need no trigger (no target expression).
func existingMutator(p *engine.Policy) bool {
	mp, ok := p.Source().(*api.MutatingPolicy)
	if !ok || !mp.Spec.MutateExistingEnabled() {
		return false
	}
	t := mp.Spec.TargetMatchConstraints
	return t == nil || t.Expression == ""
}

// classicSpec returns the spec of a ClusterPolicy or Policy (the kinds
// with generate and mutate-existing rules), an empty one for other kinds.
func classicSpec(p *engine.Policy) *api.Spec {
	if cp, ok := p.Source().(api.ClassicPolicy); ok {
		return cp.GetSpec()
	}
	return &api.Spec{}
}
