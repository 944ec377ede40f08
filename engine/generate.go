package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/gavelpolicy/gavel/internal/polex"
	"reflect"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/deepcopy"
	"github.com/gavelpolicy/gavel/internal/genlabel"
	"github.com/gavelpolicy/gavel/internal/match"
	"github.com/gavelpolicy/gavel/internal/wildcard"
)

// admission reports whether the request is evaluated as an admission
// request: an UpdateRequestQueue is configured, the request is not a
// background scan and it is not evaluated by the controller
// (Request.Controller). At admission generate and mutate-existing rules
// queue UpdateRequests.
func (e *Engine) admission(rs *reqState) bool {
	return e.cfg.queue != nil && !rs.req.Background && !rs.req.Controller
}

// generateSpec is a compiled generate rule.
type generateSpec struct {
	src         *api.Generation
	synchronize bool
	pattern     *genPattern
	foreach     []*genForeach
}

type genType int

const (
	genData genType = iota
	genClone
	genCloneList
)

// genPattern is one compiled generate pattern (the rule's, or one foreach
// entry's): target templates and the data, clone or cloneList source.
type genPattern struct {
	typ                               genType
	apiVersion, kind, name, namespace *template
	data                              *tree
	cloneName, cloneNamespace         *template
	cloneKinds                        []string
	cloneListNamespace                *template
	selector                          *metav1.LabelSelector
}

type genForeach struct {
	list          *listExpr
	context       []*contextEntry
	preconditions *condSet
	pattern       *genPattern
}

func (e *Engine) compileGenerate(g *api.Generation, path *field.Path, errs field.ErrorList) (*generateSpec, field.ErrorList) {
	gs := &generateSpec{src: g, synchronize: g.Synchronize}
	count := 0
	for _, has := range []bool{g.RawData != nil, g.Clone != nil && *g.Clone != (api.CloneFrom{}), g.CloneList != nil && g.CloneList.Kinds != nil, g.ForEachGeneration != nil} {
		if has {
			count++
		}
	}
	if count > 1 {
		return gs, append(errs, field.Forbidden(path, "only one of generate patterns(data, clone, cloneList and foreach) can be specified"))
	}
	if g.ForEachGeneration == nil {
		gs.pattern, errs = e.compileGenPattern(g.ResourceSpec, g.RawData, g.Clone, g.CloneList, path, errs)
		return gs, errs
	}
	for i := range g.ForEachGeneration {
		f := &g.ForEachGeneration[i]
		fp := path.Child("foreach").Index(i)
		gf := &genForeach{}
		l, err := e.compileList(f.List)
		if err != nil {
			errs = append(errs, field.Invalid(fp.Child("list"), f.List, err.Error()))
		}
		gf.list = l
		gf.context, errs = e.compileContext(f.Context, fp.Child("context"), errs)
		gf.preconditions, errs = e.compileConditions(f.Preconditions, fp.Child("preconditions"), errs)
		n := 0
		for _, has := range []bool{f.RawData != nil, f.Clone != nil && *f.Clone != (api.CloneFrom{}), f.CloneList != nil && f.CloneList.Kinds != nil} {
			if has {
				n++
			}
		}
		if n > 1 {
			errs = append(errs, field.Forbidden(fp, "only one of generate patterns(data, clone, cloneList and foreach) can be specified"))
			continue
		}
		gf.pattern, errs = e.compileGenPattern(f.ResourceSpec, f.RawData, f.Clone, f.CloneList, fp, errs)
		gs.foreach = append(gs.foreach, gf)
	}
	return gs, errs
}

// compileGenPattern validates one pattern as upstream's
// GeneratePattern.Validate does (checks that need the policy's namespace
// run at evaluation) and precompiles its templates.
func (e *Engine) compileGenPattern(rs api.ResourceSpec, data any, clone *api.CloneFrom, cloneList *api.CloneList, path *field.Path, errs field.ErrorList) (*genPattern, field.ErrorList) {
	gp := &genPattern{}
	tmpl := func(s string, fp *field.Path) *template {
		t, err := e.compileTemplate(s)
		if err != nil {
			errs = append(errs, field.Invalid(fp, s, err.Error()))
			return nil
		}
		return t
	}
	gp.apiVersion = tmpl(rs.APIVersion, path.Child("apiVersion"))
	gp.kind = tmpl(rs.Kind, path.Child("kind"))
	gp.name = tmpl(rs.Name, path.Child("name"))
	gp.namespace = tmpl(rs.Namespace, path.Child("namespace"))

	hasVars := strings.Contains(rs.Kind, "{{") || strings.Contains(rs.APIVersion, "{{")
	if clone != nil && (strings.Contains(clone.Name, "{{") || strings.Contains(clone.Namespace, "{{")) {
		hasVars = true
	}
	if cloneList != nil {
		if strings.Contains(cloneList.Namespace, "{{") || strings.Contains(strings.Join(cloneList.Kinds, ","), "{{") {
			hasVars = true
		}
		if s := cloneList.Selector; s != nil {
			if strings.Contains(fmt.Sprint(s.MatchLabels, s.MatchExpressions), "{{") {
				hasVars = true
			}
		}
	}
	if hasVars {
		errs = append(errs, field.Forbidden(path.Child("clone/cloneList"), "Generation Rule Clone/CloneList should not have variables"))
	}

	listed := cloneList != nil && len(cloneList.Kinds) > 0
	if !listed {
		if rs.Kind == "" {
			errs = append(errs, field.Forbidden(path.Child("kind"), "kind can not be empty"))
		}
		if rs.Name == "" {
			errs = append(errs, field.Forbidden(path.Child("name"), "name can not be empty"))
		}
		if rs.APIVersion == "" {
			errs = append(errs, field.Forbidden(path.Child("apiVersion"), "apiVersion can not be empty"))
		}
	} else {
		if rs.Name != "" {
			errs = append(errs, field.Forbidden(path.Child("name"), "with cloneList, generate.name. should not be specified"))
		}
		if rs.Kind != "" {
			errs = append(errs, field.Forbidden(path.Child("kind"), "with cloneList, generate.kind. should not be specified"))
		}
	}
	if rs.Kind != "" && !strings.Contains(rs.Kind, "{{") {
		switch kindScope(rs.Kind) {
		case scopeNamespaced:
			if rs.Namespace == "" {
				errs = append(errs, field.Forbidden(path.Child("namespace"), "target namespace must be set for a namespaced resource"))
			}
		case scopeCluster:
			if rs.Namespace != "" {
				errs = append(errs, field.Forbidden(path.Child("namespace"), "target namespace must not be set for a cluster-wide resource"))
			}
		}
	}

	switch {
	case data != nil:
		gp.typ = genData
		if p, ok := findAnchor(data, ""); ok {
			errs = append(errs, field.Invalid(path.Child("data"+p), "", "anchors not supported on generate resources"))
		}
		t, err := e.compileTree(data, "")
		if err != nil {
			errs = append(errs, field.Invalid(path.Child("data"), "", err.Error()))
		}
		gp.data = t
	case clone != nil && *clone != (api.CloneFrom{}):
		gp.typ = genClone
		if clone.Name == "" {
			errs = append(errs, field.Required(path.Child("clone", "name"), "clone name is required"))
		}
		gp.cloneName = tmpl(clone.Name, path.Child("clone", "name"))
		gp.cloneNamespace = tmpl(clone.Namespace, path.Child("clone", "namespace"))
	case listed:
		gp.typ = genCloneList
		gp.cloneKinds = cloneList.Kinds
		gp.cloneListNamespace = tmpl(cloneList.Namespace, path.Child("cloneList", "namespace"))
		gp.selector = cloneList.Selector
		errs = append(errs, validateCloneList(cloneList, path.Child("cloneList"))...)
	default:
		gp.typ = genData
	}
	return gp, errs
}

func validateCloneList(cl *api.CloneList, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s := cl.Selector; s != nil {
		bad := false
		for k, v := range s.MatchLabels {
			if wildcard.Has(k) || wildcard.Has(v) {
				bad = true
			}
		}
		for _, req := range s.MatchExpressions {
			if wildcard.Has(req.Key) || slices.ContainsFunc(req.Values, wildcard.Has) {
				bad = true
			}
		}
		if bad {
			errs = append(errs, field.Invalid(path.Child("selector"), "", "wildcard characters `*/?` not supported"))
		}
		if _, err := metav1.LabelSelectorAsSelector(s); err != nil {
			errs = append(errs, field.Invalid(path.Child("selector"), "", err.Error()))
		}
	}
	first := scopeUnknown
	for i, k := range cl.Kinds {
		_, kind := splitKindGVK(k)
		sc := kindScope(kind)
		if i == 0 {
			first = sc
			continue
		}
		if sc != scopeUnknown && first != scopeUnknown && sc != first {
			errs = append(errs, field.Forbidden(path.Child("kinds"), "mixed scope of target resources is forbidden"))
			break
		}
	}
	switch first {
	case scopeNamespaced:
		if cl.Namespace == "" {
			errs = append(errs, field.Forbidden(path.Child("namespace"), "namespace is required for namespaced target resources"))
		}
	case scopeCluster:
		if cl.Namespace != "" {
			errs = append(errs, field.Forbidden(path.Child("namespace"), "namespace is forbidden for cluster-wide target resources"))
		}
	}
	return errs
}

// findAnchor returns the path of the first anchored key of a document.
func findAnchor(v any, path string) (string, bool) {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if isAnchorKey(k) {
				return path + "." + k, true
			}
			if p, ok := findAnchor(t[k], path+"."+k); ok {
				return p, true
			}
		}
	case []any:
		for i, x := range t {
			if p, ok := findAnchor(x, fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, true
			}
		}
	}
	return "", false
}

func isAnchorKey(k string) bool {
	if !strings.HasSuffix(k, ")") {
		return false
	}
	for _, prefix := range []string{"(", "=(", "+(", "X(", "<(", "^("} {
		if strings.HasPrefix(k, prefix) && len(k) > len(prefix)+1 {
			return true
		}
	}
	return false
}

type scopeKind int

const (
	scopeUnknown scopeKind = iota
	scopeNamespaced
	scopeCluster
)

// kindScope knows the scope of built-in kinds; other kinds (custom
// resources) are unknown, and scope checks are skipped for them.
func kindScope(kind string) scopeKind {
	switch kind {
	case "Namespace", "Node", "PersistentVolume", "StorageClass", "ClusterRole", "ClusterRoleBinding",
		"CustomResourceDefinition", "PriorityClass", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "IngressClass", "CertificateSigningRequest",
		"RuntimeClass", "APIService", "CSIDriver", "CSINode", "VolumeAttachment", "ClusterPolicy",
		"ClusterPolicyReport", "ClusterCleanupPolicy", "FlowSchema", "PriorityLevelConfiguration", "ComponentStatus":
		return scopeCluster
	case "Pod", "Service", "ConfigMap", "Secret", "ServiceAccount", "PersistentVolumeClaim", "Endpoints",
		"EndpointSlice", "Event", "LimitRange", "ResourceQuota", "ReplicationController", "Deployment",
		"DaemonSet", "StatefulSet", "ReplicaSet", "Job", "CronJob", "Ingress", "NetworkPolicy", "Role",
		"RoleBinding", "PodDisruptionBudget", "HorizontalPodAutoscaler", "Lease", "PolicyException",
		"PolicyReport", "ControllerRevision", "PodTemplate", "CleanupPolicy":
		return scopeNamespaced
	}
	return scopeUnknown
}

// splitKindGVK splits a cloneList kind ("v1/Secret", "apps/v1/Deployment",
// "Secret") into apiVersion and kind, as upstream's GetKindFromGVK.
func splitKindGVK(s string) (apiVersion, kind string) {
	parts := strings.Split(s, "/")
	switch len(parts) {
	case 2:
		if looksLikeVersion(parts[0]) || parts[0] == "*" {
			return parts[0], parts[1]
		}
		return "", s
	case 3:
		if looksLikeVersion(parts[0]) || parts[0] == "*" {
			return parts[0], parts[1] + "/" + parts[2]
		}
		return parts[0] + "/" + parts[1], parts[2]
	case 4:
		return parts[0] + "/" + parts[1], parts[2] + "/" + parts[3]
	}
	return "", s
}

func looksLikeVersion(s string) bool {
	if len(s) < 2 || s[0] != 'v' || s[1] < '0' || s[1] > '9' {
		return false
	}
	return true
}

// Generate evaluates the generate rules of every policy in the set on the
// request's resource (the trigger).
//
// A generate rule that applies passes with GeneratedResources: the
// downstream objects as the background controller would create or update
// them (with upstream's tracking labels). Clone sources and existing
// downstream objects are read through the configured Client; a downstream
// object that exists and is not synchronized, or that is already up to
// date, is not listed. On DELETE the rule fails (the trigger is gone), and
// on UPDATE a rule that matched the old object but no longer matches the new
// one fails as well: upstream uses these results to delete synchronized
// downstream resources.
//
// At admission (an UpdateRequestQueue is configured and the request is not a
// background scan, and not evaluated by the controller: Request.Controller) the call also builds upstream's
// UpdateRequests for generate rules and for mutate-existing rules, returns
// them in Response.UpdateRequests and enqueues them; an enqueue failure is
// returned as the error together with the response.
func (s *PolicySet) Generate(ctx context.Context, req *Request) (*Response, error) {
	if req == nil || (req.Object == nil && req.OldObject == nil) {
		return nil, ErrNoObject
	}
	object, oldObject, _, err := req.check()
	if err != nil {
		return nil, err
	}
	e := s.eng
	if e.filtered(req, object, oldObject) {
		return filteredResponse(object, oldObject), nil
	}
	rs := e.newReqStateFrom(ctx, req, s.needsImages, object, oldObject)
	resp := &Response{Resource: rs.obj}
	admission := e.admission(rs)
	var enqueueErrs []error
	for _, p := range s.policies {
		if err := ctx.Err(); err != nil {
			return resp, err
		}
		if gb, ok := p.body.(generatingBody); ok {
			pr, urs := gb.generate(rs, p, admission)
			resp.Policies = append(resp.Policies, pr)
			enqueueErrs = e.enqueue(ctx, p, resp, urs, enqueueErrs)
			continue
		}
		hasGen := p.HasRuleType(Generation)
		mpol, _ := p.body.(*mutatingPolicy)
		hasMutEx := admission && (p.hasMutateExisting() || (mpol != nil && mpol.existing))
		if !hasGen && !hasMutEx {
			continue
		}
		if admission && !p.admission {
			continue
		}
		var pr PolicyResult
		if hasGen {
			pr = e.runPolicy(rs, p, Generation, e.generateRule, policyCands{})
			pr.Rules = e.triggerChangeResults(rs, p, pr.Rules)
		}
		if hasMutEx {
			if !hasGen {
				pr = PolicyResult{Policy: p, Resource: rs.obj, PatchedResource: rs.obj, FailureAction: p.failureActionFor(rs)}
			}
			if mpol != nil {
				if !api.IsNamespaced(p.src) || match.NamespacedPolicyApplies(p.src.GetNamespace(), rs.matchRes) {
					pr.Rules = append(pr.Rules, mpol.queueExisting(rs, p)...)
				}
			} else {
				pr.Rules = append(pr.Rules, e.runMutateExisting(rs, p)...)
			}
		}
		resp.Policies = append(resp.Policies, pr)
		if !admission {
			continue
		}
		urs := e.updateRequests(rs, p, pr.Rules)
		if mpol != nil {
			urs = e.existingUpdateRequest(rs, p, pr.Rules)
		}
		enqueueErrs = e.enqueue(ctx, p, resp, urs, enqueueErrs)
	}
	if err := ctx.Err(); err != nil {
		return resp, err
	}
	return resp, errors.Join(enqueueErrs...)
}

// enqueue queues the UpdateRequests of a policy and adds them to the
// response; one the queue refuses is Failed with the queue's error as its
// message, and the errors are appended to errs.
func (e *Engine) enqueue(ctx context.Context, p *Policy, resp *Response, urs []*api.UpdateRequest, errs []error) []error {
	for _, ur := range urs {
		resp.UpdateRequests = append(resp.UpdateRequests, ur)
		if err := e.cfg.queue.Enqueue(ctx, ur); err != nil {
			ur.Status.State, ur.Status.Message = api.URFailed, err.Error()
			errs = append(errs, fmt.Errorf("policy %s: failed to enqueue update request: %w", p.key, err))
		}
	}
	return errs
}

// runMutateExisting evaluates the mutate-existing rules of a policy at
// admission (match, exceptions, context, preconditions).
func (e *Engine) runMutateExisting(rs *reqState, p *Policy) []RuleResult {
	if api.IsNamespaced(p.src) && !match.NamespacedPolicyApplies(p.src.GetNamespace(), rs.matchRes) {
		return nil
	}
	var out []RuleResult
	for _, r := range p.rules {
		if r.typ != Mutation || r.mutate == nil || len(r.mutate.targets) == 0 {
			continue
		}
		if rs.ctx.Err() != nil {
			break
		}
		at := len(rs.results)
		out = append(out, e.runRule(rs, p, r, e.mutateExistingAdmission, false)...)
		// a result the rule wrote in place (reqState.single) is copied
		rs.results = rs.results[:at]
	}
	return out
}

func (p *Policy) hasMutateExisting() bool {
	for _, r := range p.rules {
		if r.typ == Mutation && r.mutate != nil && len(r.mutate.targets) > 0 {
			return true
		}
	}
	return false
}

// triggerChangeResults adds upstream's fail results for an UPDATE: a
// generate rule whose match/exclude selected the old object but no longer
// selects the new one fails, which deletes its synchronized downstream.
// Only match and exclude count: as policy-generate.md says,
// "Synchronization involving changes to trigger resources are confined to
// the match block and do not take into consideration preconditions", so a
// rule skipped for its preconditions keeps its downstream resources.
func (e *Engine) triggerChangeResults(rs *reqState, p *Policy, results []RuleResult) []RuleResult {
	if rs.op != api.Update || rs.req.OldObject == nil || rs.req.Object == nil {
		return results
	}
	if rs.req.Background && !p.background {
		return results
	}
	var old *reqState
	for _, r := range p.rules {
		if r.typ != Generation || hasResult(results, r.name) {
			continue
		}
		if old == nil {
			oldReq := *rs.req
			oldReq.Object = rs.req.OldObject
			oldReq.NamespaceLabels = rs.nsLabels
			old = e.newReqState(rs.ctx, &oldReq)
			if api.IsNamespaced(p.src) && !match.NamespacedPolicyApplies(p.src.GetNamespace(), old.matchRes) {
				return results
			}
		}
		if ok, _, err := r.match.Matches(old.matchRes, old.matchReq); err != nil || !ok {
			continue
		}
		results = append(results, r.result(StatusFail, "the trigger no longer matches the rule"))
	}
	return results
}

func hasResult(results []RuleResult, name string) bool {
	for i := range results {
		if results[i].Name == name {
			return true
		}
	}
	return false
}

// generateRule is the handler of generate rules.
func (e *Engine) generateRule(rs *reqState, p *Policy, r *rule, sc *scope, _ []*polex.Exception) []RuleResult {
	if rs.op == api.Delete && !rs.req.Controller {
		// upstream evaluates a deletion with an empty new object: the rule
		// matched the old object only, and fails.
		return []RuleResult{r.result(StatusFail, "the trigger is being deleted")}
	}
	objs, err := e.generateObjects(rs, p, r, sc)
	if err != nil {
		return []RuleResult{r.errorResult("failed to generate resources", err)}
	}
	res := r.result(StatusPass, "")
	res.GeneratedResources = objs
	return []RuleResult{res}
}

func (e *Engine) generateObjects(rs *reqState, p *Policy, r *rule, sc *scope) ([]map[string]any, error) {
	g := r.generate
	if g == nil {
		return nil, errors.New("rule has no generate body")
	}
	if g.foreach == nil {
		return e.generatePattern(rs, p, r, sc, g.pattern)
	}
	var out []map[string]any
	var errs []error
	for i, f := range g.foreach {
		elements, err := f.list.evaluate(sc)
		if err != nil {
			errs = append(errs, fmt.Errorf("failed to evaluate %d foreach list: %w", i, err))
			continue
		}
		if len(elements) > e.cfg.limits.MaxForeachElements {
			errs = append(errs, fmt.Errorf("foreach %w", e.foreachLimit(f.list.expr, len(elements))))
			continue
		}
		var elemErrs []error
		for index, el := range elements {
			if el == nil {
				continue
			}
			if err := rs.ctx.Err(); err != nil {
				return out, err
			}
			child := sc.child()
			child.addElement(el, index, 0)
			if err := child.loadContext(f.context); err != nil {
				elemErrs = append(elemErrs, fmt.Errorf("failed to process %d element: failed to load context: %w", index, err))
				continue
			}
			ok, _, err := child.checkConditions(f.preconditions)
			if err != nil {
				elemErrs = append(elemErrs, fmt.Errorf("failed to process %d element: failed to evaluate preconditions: %w", index, err))
				continue
			}
			if !ok {
				continue
			}
			objs, err := e.generatePattern(rs, p, r, child, f.pattern)
			if err != nil {
				elemErrs = append(elemErrs, fmt.Errorf("failed to process %d element: %w", index, err))
			}
			out = append(out, objs...)
		}
		if len(elemErrs) > 0 {
			errs = append(errs, fmt.Errorf("failed to process %d foreach in rule %s: %w", i, r.name, errors.Join(elemErrs...)))
		}
	}
	return out, errors.Join(errs...)
}

// genTarget identifies a downstream resource.
type genTarget struct{ apiVersion, kind, namespace, name string }

func (t genTarget) String() string {
	return fmt.Sprintf("%s/%s/%s/%s", t.apiVersion, t.kind, t.namespace, t.name)
}

// generatePattern computes the downstream objects of one pattern: the
// target's identity, then the objects of its data, clone or cloneList
// source.
func (e *Engine) generatePattern(rs *reqState, p *Policy, r *rule, sc *scope, gp *genPattern) ([]map[string]any, error) {
	target, err := renderTarget(sc, gp)
	if err != nil {
		return nil, err
	}
	if api.IsNamespaced(p.src) {
		if err := checkNamespacedTarget(p, gp, target); err != nil {
			return nil, err
		}
	}
	switch gp.typ {
	case genData:
		return e.generateData(rs, p, r, sc, gp, target)
	case genClone:
		return e.generateClone(rs, p, r, sc, gp, target)
	case genCloneList:
		return e.generateCloneList(rs, p, r, sc, gp, target)
	}
	return nil, nil
}

// renderGen substitutes the variables of one field of a generate pattern.
func renderGen(sc *scope, t *template, what string) (string, error) {
	s, err := sc.renderString(t)
	if err != nil {
		return "", fmt.Errorf("failed to substitute variables in generate.%s: %w", what, err)
	}
	return s, nil
}

// renderTarget resolves the identity of a pattern's downstream resource.
func renderTarget(sc *scope, gp *genPattern) (genTarget, error) {
	var t genTarget
	var err error
	for _, f := range []struct {
		dst  *string
		tmpl *template
		what string
	}{
		{&t.apiVersion, gp.apiVersion, "apiVersion"},
		{&t.kind, gp.kind, "kind"},
		{&t.name, gp.name, "name"},
		{&t.namespace, gp.namespace, "namespace"},
	} {
		if *f.dst, err = renderGen(sc, f.tmpl, f.what); err != nil {
			return t, err
		}
	}
	return t, nil
}

// generateData is the downstream object of a data pattern.
func (e *Engine) generateData(rs *reqState, p *Policy, r *rule, sc *scope, gp *genPattern, target genTarget) ([]map[string]any, error) {
	if gp.data == nil {
		return nil, nil
	}
	v, err := sc.substitute(gp.data)
	if err != nil {
		return nil, fmt.Errorf("failed to substitute variables in generate.data: %w", err)
	}
	data, ok := normalize(v).(map[string]any)
	if !ok {
		if v == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("generate.data must be an object, got %T", v)
	}
	obj := deepcopy.Object(data)
	return e.desired(rs, p, r, e.cfg.client, target, obj)
}

// generateClone is the downstream object cloned from a named source.
func (e *Engine) generateClone(rs *reqState, p *Policy, r *rule, sc *scope, gp *genPattern, target genTarget) ([]map[string]any, error) {
	name, err := renderGen(sc, gp.cloneName, "clone.name")
	if err != nil {
		return nil, err
	}
	ns, err := renderGen(sc, gp.cloneNamespace, "clone.namespace")
	if err != nil {
		return nil, err
	}
	if api.IsNamespaced(p.src) && ns != p.src.GetNamespace() {
		return nil, fmt.Errorf("generate.clone.namespace %q must equal policy namespace %q", ns, p.src.GetNamespace())
	}
	source := genTarget{apiVersion: target.apiVersion, kind: target.kind, namespace: ns, name: name}
	return e.cloneOne(rs, p, r, e.cfg.client, target, source)
}

// generateCloneList is the downstream objects cloned from the sources a
// cloneList selects (every listed kind, by selector, in its namespace),
// each into the target namespace under its own name.
func (e *Engine) generateCloneList(rs *reqState, p *Policy, r *rule, sc *scope, gp *genPattern, target genTarget) ([]map[string]any, error) {
	ns, err := renderGen(sc, gp.cloneListNamespace, "cloneList.namespace")
	if err != nil {
		return nil, err
	}
	if api.IsNamespaced(p.src) && ns != p.src.GetNamespace() {
		return nil, fmt.Errorf("generate.cloneList.namespace %q must equal policy namespace %q", ns, p.src.GetNamespace())
	}
	client := e.cfg.client
	if client == nil {
		if e.admission(rs) {
			return nil, nil
		}
		return nil, fmt.Errorf("cannot list clone sources in namespace %q: client %w", ns, ErrNotConfigured)
	}
	var out []map[string]any
	for _, k := range gp.cloneKinds {
		apiVersion, kind := splitKindGVK(k)
		cctx, done := rs.hostContext()
		sources, err := client.List(cctx, apiVersion, kind, ns, gp.selector)
		err = done(err)
		if err != nil {
			return out, fmt.Errorf("failed to list source resource for cloneList %s %s/%s. %w", apiVersion, kind, ns, err)
		}
		for _, src := range sources {
			src, ok := normalize(src).(map[string]any)
			if !ok {
				continue
			}
			sav, _ := src["apiVersion"].(string)
			skind, _ := src["kind"].(string)
			sname, sns := objectMeta(src)
			if sns == target.namespace {
				continue // self-clone
			}
			t := genTarget{apiVersion: sav, kind: skind, namespace: target.namespace, name: sname}
			objs, err := e.cloneFrom(rs, p, r, client, t, src)
			if err != nil {
				return out, err
			}
			out = append(out, objs...)
		}
	}
	return out, nil
}

func checkNamespacedTarget(p *Policy, gp *genPattern, target genTarget) error {
	pns := p.src.GetNamespace()
	if gp.typ == genCloneList {
		for _, k := range gp.cloneKinds {
			_, kind := splitKindGVK(k)
			if kindScope(kind) == scopeCluster {
				return fmt.Errorf("the source in cloneList must be a namespaced resource: %v", k)
			}
		}
		if target.namespace != "" && target.namespace != pns {
			return fmt.Errorf("a namespaced policy cannot generate resources in other namespaces, expected: %v, received: %v", pns, target.namespace)
		}
		return nil
	}
	if kindScope(target.kind) == scopeCluster {
		return fmt.Errorf("the target must be a namespaced resource: %v/%v", target.apiVersion, target.kind)
	}
	if target.namespace != pns {
		return fmt.Errorf("a namespaced policy cannot generate resources in other namespaces, expected: %v, received: %v", pns, target.namespace)
	}
	return nil
}

// cloneOne reads a named clone source and derives the downstream object.
func (e *Engine) cloneOne(rs *reqState, p *Policy, r *rule, client Client, target, source genTarget) ([]map[string]any, error) {
	if source.namespace == target.namespace && source.name == target.name {
		return nil, nil // self-clone
	}
	if client == nil {
		if e.admission(rs) {
			return nil, nil
		}
		return nil, fmt.Errorf("cannot read clone source %s: client %w", source, ErrNotConfigured)
	}
	cctx, done := rs.hostContext()
	src, err := client.Get(cctx, source.apiVersion, source.kind, source.namespace, source.name)
	err = done(err)
	if err != nil {
		return nil, fmt.Errorf("source resource %s not found: %w", target, err)
	}
	if src == nil {
		return nil, fmt.Errorf("source resource %s not found: %w", target, ErrNotFound)
	}
	obj, ok := normalize(src).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("source resource %s is not an object", source)
	}
	return e.cloneFrom(rs, p, r, client, target, obj)
}

// cloneFrom copies a clone source into the downstream object, as upstream's
// manageClone: tracking labels of the source, server-set metadata dropped,
// owner references dropped across namespaces.
func (e *Engine) cloneFrom(rs *reqState, p *Policy, r *rule, client Client, target genTarget, src map[string]any) ([]map[string]any, error) {
	obj := deepcopy.Object(src)
	md := metaOf(obj)
	sav, _ := src["apiVersion"].(string)
	skind, _ := src["kind"].(string)
	sname, sns := objectMeta(src)
	suid, _ := md["uid"].(string)
	group, version := splitAPIVersion(sav)
	labels := labelsOf(md)
	labels[genlabel.CloneSource] = ""
	labels[genlabel.SourceGroup] = group
	labels[genlabel.SourceVersion] = version
	labels[genlabel.SourceKind] = skind
	labels[genlabel.SourceNS] = sns
	labels[genlabel.SourceName] = sname
	if suid != "" {
		labels[genlabel.SourceUID] = suid
	}
	if sns != target.namespace {
		delete(md, "ownerReferences")
	}
	for _, k := range serverManagedMeta {
		delete(md, k)
	}
	return e.desired(rs, p, r, client, target, obj)
}

// serverManagedMeta are the metadata fields the API server owns.
var serverManagedMeta = []string{"uid", "selfLink", "creationTimestamp", "managedFields", "resourceVersion", "generation", "deletionTimestamp", "deletionGracePeriodSeconds"}

// desired finishes a downstream object (identity and tracking labels) and
// decides, as upstream, whether it would be written: a new object is
// created; an existing one is updated only when the rule synchronizes and
// the object differs.
func (e *Engine) desired(rs *reqState, p *Policy, r *rule, client Client, target genTarget, obj map[string]any) ([]map[string]any, error) {
	md := metaOf(obj)
	md["name"] = target.name
	if target.namespace != "" {
		md["namespace"] = target.namespace
	} else {
		delete(md, "namespace")
	}
	if k, _ := obj["kind"].(string); k == "" {
		obj["kind"] = target.kind
	}
	obj["apiVersion"] = target.apiVersion
	labels := labelsOf(md)
	e.trackingLabels(labels, rs, p, r)
	delete(md, "resourceVersion")
	if client == nil {
		return []map[string]any{obj}, nil
	}
	cctx, done := rs.hostContext()
	existing, err := client.Get(cctx, target.apiVersion, target.kind, target.namespace, target.name)
	err = done(err)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return []map[string]any{obj}, nil
		}
		return nil, fmt.Errorf("failed to get the target resource %s: %w", target, err)
	}
	if existing == nil {
		return []map[string]any{obj}, nil
	}
	if !r.generate.synchronize {
		return nil, nil
	}
	if sameDownstream(obj, existing) {
		return nil, nil
	}
	return []map[string]any{obj}, nil
}

// trackingLabels adds upstream's managed-by, policy and trigger labels.
func (e *Engine) trackingLabels(labels map[string]any, rs *reqState, p *Policy, r *rule) {
	trigger := rs.obj
	tav, _ := trigger["apiVersion"].(string)
	group, version := splitAPIVersion(tav)
	tkind, _ := trigger["kind"].(string)
	tname, tns := objectMeta(trigger)
	tmd, _ := trigger["metadata"].(map[string]any)
	tuid, _ := tmd["uid"].(string)
	labels[genlabel.ManagedBy] = genlabel.ManagedByValue
	labels[genlabel.PolicyName] = p.src.GetName()
	if api.IsNamespaced(p.src) {
		labels[genlabel.PolicyNamespace] = p.src.GetNamespace()
	} else {
		labels[genlabel.PolicyNamespace] = ""
	}
	labels[genlabel.RuleName] = r.name
	labels[genlabel.TriggerGroup] = group
	labels[genlabel.TriggerVersion] = version
	labels[genlabel.TriggerKind] = tkind
	labels[genlabel.TriggerNS] = tns
	labels[genlabel.TriggerUID] = tuid
	if len(tname) <= 63 {
		labels[genlabel.TriggerName] = tname
	}
}

// SameDownstream reports whether a desired downstream object equals an
// existing one, ignoring the metadata fields the API server owns. The
// controller skips the update of a synchronized downstream when it holds.
func sameDownstream(desired, existing map[string]any) bool {
	a, _ := normalize(desired).(map[string]any)
	b, _ := normalize(existing).(map[string]any)
	return reflect.DeepEqual(stripServerMeta(a), stripServerMeta(b))
}

func stripServerMeta(obj map[string]any) map[string]any {
	out := copyShallow(obj)
	md, _ := obj["metadata"].(map[string]any)
	m := make(map[string]any, len(md))
	for k, v := range md {
		m[k] = v
	}
	for _, k := range serverManagedMeta {
		delete(m, k)
	}
	if l, ok := m["labels"].(map[string]any); ok && len(l) == 0 {
		delete(m, "labels")
	}
	if a, ok := m["annotations"].(map[string]any); ok && len(a) == 0 {
		delete(m, "annotations")
	}
	out["metadata"] = m
	delete(out, "status")
	return out
}

// metaOf returns obj's metadata map, creating it when absent (obj must be
// owned by the caller).
func metaOf(obj map[string]any) map[string]any {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		md = map[string]any{}
		obj["metadata"] = md
	}
	return md
}

// labelsOf returns md's labels map, creating it when absent.
func labelsOf(md map[string]any) map[string]any {
	l, ok := md["labels"].(map[string]any)
	if !ok {
		l = map[string]any{}
		md["labels"] = l
	}
	return l
}

func copyShallow(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ruleMatchesOperation reports whether the rule's match block names the
// operation explicitly (upstream's MatchDeleteOperation for DELETE).
func ruleMatchesOperation(r *api.Rule, op api.AdmissionOperation) bool {
	has := func(ops []api.AdmissionOperation) bool {
		for _, o := range ops {
			if o == op {
				return true
			}
		}
		return false
	}
	m := r.MatchResources
	if has(m.ResourceDescription.Operations) {
		return true
	}
	for _, f := range m.Any {
		if has(f.ResourceDescription.Operations) {
			return true
		}
	}
	for _, f := range m.All {
		if has(f.ResourceDescription.Operations) {
			return true
		}
	}
	return false
}

// updateRequests builds upstream's UpdateRequests from the admission results
// of one policy: generate on pass, delete downstream (or generate on a
// matched deletion) on fail, mutate-existing on pass.
func (e *Engine) updateRequests(rs *reqState, p *Policy, results []RuleResult) []*api.UpdateRequest {
	rules := map[string]*rule{}
	for _, r := range p.rules {
		rules[r.name] = r
	}
	trigger := genlabel.Spec(rs.obj)
	var gen, sync, mut []api.RuleContext
	for _, res := range results {
		r := rules[res.Name]
		if r == nil {
			continue
		}
		switch {
		case res.Type == Generation && (res.Status == StatusPass || res.Status == StatusError):
			// an error computing the downstream preview is the controller's
			// to retry and report, as upstream (which computes nothing at
			// admission)
			gen = append(gen, api.RuleContext{Rule: r.name, Trigger: trigger})
		case res.Type == Generation && res.Status == StatusFail:
			old := trigger
			if o, ok := normalize(rs.req.OldObject).(map[string]any); ok && rs.op == api.Update && o != nil {
				old = genlabel.Spec(o)
			}
			if rs.op == api.Delete && ruleMatchesOperation(r.src, api.Delete) {
				sync = append(sync, api.RuleContext{Rule: r.name, Trigger: old})
			} else if r.generate != nil && r.generate.synchronize {
				sync = append(sync, api.RuleContext{Rule: r.name, Trigger: old, DeleteDownstream: true, Synchronize: true})
			}
		case res.Type == Mutation && res.Status == StatusPass:
			mut = append(mut, api.RuleContext{Rule: r.name, Trigger: trigger})
		}
	}
	var out []*api.UpdateRequest
	if len(gen) > 0 {
		out = append(out, e.newUpdateRequest(rs, p, api.URGenerate, trigger, gen))
	}
	if len(sync) > 0 {
		out = append(out, e.newUpdateRequest(rs, p, api.URGenerate, sync[0].Trigger, sync))
	}
	if len(mut) > 0 {
		out = append(out, e.newUpdateRequest(rs, p, api.URMutate, trigger, mut))
	}
	return out
}

func (e *Engine) newUpdateRequest(rs *reqState, p *Policy, typ api.UpdateRequestType, trigger api.ResourceSpec, rules []api.RuleContext) *api.UpdateRequest {
	ur := &api.UpdateRequest{}
	ur.APIVersion = "kyverno.io/v2"
	ur.Kind = api.KindUpdateRequest
	ur.GenerateName = "ur-"
	ur.Namespace = "kyverno"
	if typ != api.URMutate {
		ur.Labels = map[string]string{genlabel.URGeneratePolicy: p.src.GetName()}
	} else {
		ur.Labels = map[string]string{genlabel.URMutatePolicy: p.src.GetName(), genlabel.URMutateTriggerNS: trigger.Namespace, genlabel.URMutateTriggerKind: trigger.Kind}
	}
	ur.Spec = api.UpdateRequestSpec{
		Type:        typ,
		Policy:      p.key,
		Resource:    trigger,
		RuleContext: rules,
		Context:     e.updateRequestContext(rs),
	}
	if len(rules) == 1 {
		ur.Spec.Rule = rules[0].Rule
		ur.Spec.DeleteDownstream = rules[0].DeleteDownstream
	}
	ur.Status.State = api.URPending
	return ur
}

// updateRequestContext records the admission request as upstream does
// (an admissionv1.AdmissionRequest in JSON form) with the requesting user.
func (e *Engine) updateRequestContext(rs *reqState) api.UpdateRequestContext {
	req := rs.req
	// the object's name, not the generateName matching falls back to
	name, _ := objectMeta(rs.obj)
	ar := map[string]any{
		"uid":       req.UID,
		"operation": string(rs.op),
		"name":      name,
		"namespace": rs.matchRes.Namespace,
		"kind":      map[string]any{"group": rs.gvk.Group, "version": rs.gvk.Version, "kind": rs.gvk.Kind},
		"userInfo":  userInfoMap(req.UserInfo),
	}
	if req.Name != "" {
		ar["name"] = req.Name
	}
	if req.Resource.Resource != "" {
		ar["resource"] = map[string]any{"group": req.Resource.Group, "version": req.Resource.Version, "resource": req.Resource.Resource}
	}
	if req.SubResource != "" {
		ar["subResource"] = req.SubResource
	}
	if req.DryRun {
		ar["dryRun"] = true
	}
	if req.Object != nil {
		ar["object"] = deepcopy.Value(normalize(req.Object))
	}
	if req.OldObject != nil {
		ar["oldObject"] = deepcopy.Value(normalize(req.OldObject))
	}
	return api.UpdateRequestContext{
		UserRequestInfo: api.RequestInfo{
			Roles:             append([]string(nil), req.Roles...),
			ClusterRoles:      append([]string(nil), req.ClusterRoles...),
			AdmissionUserInfo: req.UserInfo,
		},
		AdmissionRequestInfo: api.AdmissionRequestInfo{AdmissionRequest: ar, Operation: rs.op},
	}
}

func userInfoMap(u api.UserInfoData) map[string]any {
	m := map[string]any{}
	if u.Username != "" {
		m["username"] = u.Username
	}
	if u.UID != "" {
		m["uid"] = u.UID
	}
	if len(u.Groups) > 0 {
		m["groups"] = stringsToAny(u.Groups)
	}
	if len(u.Extra) > 0 {
		extra := map[string]any{}
		for k, v := range u.Extra {
			extra[k] = stringsToAny(v)
		}
		m["extra"] = extra
	}
	return m
}

// mutateExistingAdmission is the handler of mutate rules at admission in
// Generate: a mutate-existing rule that applies passes, and an
// UpdateRequest of type mutate is built for it. Standard mutate rules are
// not evaluated here.
func (e *Engine) mutateExistingAdmission(rs *reqState, _ *Policy, r *rule, _ *scope, _ []*polex.Exception) []RuleResult {
	if r.mutate == nil || len(r.mutate.targets) == 0 {
		return nil
	}
	if rs.op == api.Delete && !ruleMatchesOperation(r.src, api.Delete) {
		return nil
	}
	return []RuleResult{r.result(StatusPass, "mutate existing request queued")}
}
