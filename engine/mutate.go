package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/gavelpolicy/gavel/internal/polex"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/mutate"
	"github.com/gavelpolicy/gavel/internal/variables"
)

// patchSpec is a strategic merge patch or a JSON patch, compiled once when
// it has no variables.
type patchSpec struct {
	smTree   *tree
	sm       *mutate.StrategicMerge
	jsonTmpl *template
	jsonRaw  string
	jp       *mutate.JSONPatch
	// jsonShape is the templated JSON patch with every variable replaced
	// by patchPlaceholder (nil when that does not compile): substituted
	// data may fill the variables' places but not change anything else.
	jsonShape []mutate.Operation
}

type mutateSpec struct {
	patch   *patchSpec
	foreach []*foreachMutate
	targets []api.TargetResource
}

// strategic reports whether the rule merges a strategic merge patch into
// the object, at the top or in a foreach.
func (m *mutateSpec) strategic() bool {
	if m == nil {
		return false
	}
	if m.patch != nil && (m.patch.sm != nil || m.patch.smTree != nil) {
		return true
	}
	return foreachStrategic(m.foreach)
}

func foreachStrategic(list []*foreachMutate) bool {
	for _, fe := range list {
		if fe.isSM || foreachStrategic(fe.nested) {
			return true
		}
	}
	return false
}

type foreachMutate struct {
	list          *listExpr
	order         *api.ForeachOrder
	context       []*contextEntry
	preconditions *condSet
	patch         *patchSpec
	nested        []*foreachMutate
	isSM          bool
}

func (e *Engine) compilePatch(sm any, js string, base string) (*patchSpec, error) {
	ps := &patchSpec{}
	if sm != nil {
		t, err := e.compileTree(sm, base+"/patchStrategicMerge")
		if err != nil {
			return nil, err
		}
		ps.smTree = t
		if !t.HasVariables() {
			if ps.sm, err = mutate.CompileStrategicMerge(sm); err != nil {
				return nil, err
			}
		}
		return ps, nil
	}
	if js != "" {
		t, err := e.compileTemplate(js)
		if err != nil {
			return nil, err
		}
		ps.jsonRaw = js
		if t.HasVariables() {
			ps.jsonTmpl = t
			ps.jsonShape = jsonPatchShape(t)
		} else if ps.jp, err = mutate.CompileJSONPatch(js); err != nil {
			return nil, err
		}
		return ps, nil
	}
	return nil, nil
}

// apply substitutes variables when needed and applies the patch.
func (ps *patchSpec) apply(sc *scope, resource map[string]any) (map[string]any, error) {
	if ps.smTree != nil {
		sm := ps.sm
		if sm == nil {
			v, err := sc.substitute(ps.smTree)
			if err != nil {
				return nil, &substError{err}
			}
			if sm, err = mutate.CompileStrategicMerge(v); err != nil {
				return nil, err
			}
		}
		// untouched parts of the resource are shared: the engine never
		// modifies objects in place
		var r mutate.Result
		var err error
		if sc.rs.canonical(resource) {
			r, err = sm.MutateCanonical(resource, &sc.rs.mergeMemo)
		} else {
			r, err = sm.Mutate(resource)
		}
		if err != nil {
			return nil, err
		}
		return r.Object, nil
	}
	jp := ps.jp
	if jp == nil {
		s, err := sc.renderString(ps.jsonTmpl)
		if err != nil {
			return nil, &substError{err}
		}
		if jp, err = mutate.CompileJSONPatch(s); err != nil {
			return nil, err
		}
		if ps.jsonShape != nil {
			if err := sameJSONPatchShape(ps.jsonShape, jp.Operations()); err != nil {
				return nil, &substError{err}
			}
		}
	}
	r, err := jp.Mutate(resource)
	if err != nil {
		return nil, err
	}
	return r.Object, nil
}

// patchPlaceholder stands for every variable of a JSON patch template when
// its shape is computed.
const patchPlaceholder = "gavelVariablePlaceholder7f3a"

// jsonPatchShape compiles a JSON patch template with every variable
// replaced by patchPlaceholder.
func jsonPatchShape(t *template) []mutate.Operation {
	v, err := t.Render(variables.EvaluatorFunc(func(string) (any, error) { return patchPlaceholder, nil }))
	s, ok := v.(string)
	if err != nil || !ok {
		return nil
	}
	jp, err := mutate.CompileJSONPatch(s)
	if err != nil {
		return nil
	}
	return jp.Operations()
}

// sameJSONPatchShape checks that substitution only filled the places of
// variables: a JSON patch is YAML text, and data holding quotes or newlines
// could otherwise add operations or fields of its own.
func sameJSONPatchShape(shape, got []mutate.Operation) error {
	if len(shape) != len(got) {
		return fmt.Errorf("substituted data changed the JSON patch: %d operations instead of %d", len(got), len(shape))
	}
	for i, s := range shape {
		g := got[i]
		if s.Op != g.Op || !sameFilled(s.Path, g.Path) || !sameFilled(s.From, g.From) || !sameFilled(s.Value, g.Value) {
			return fmt.Errorf("substituted data changed operation %d of the JSON patch", i)
		}
	}
	return nil
}

// sameFilled reports whether got is shape with its placeholders filled: a
// string that is only a placeholder may become anything, a string holding
// one keeps the text around it, everything else is unchanged.
func sameFilled(shape, got any) bool {
	switch s := shape.(type) {
	case string:
		if s == patchPlaceholder {
			return true
		}
		g, ok := got.(string)
		if !ok {
			return false
		}
		i := strings.Index(s, patchPlaceholder)
		if i < 0 {
			return s == g
		}
		j := strings.LastIndex(s, patchPlaceholder) + len(patchPlaceholder)
		return len(g) >= i+len(s)-j && strings.HasPrefix(g, s[:i]) && strings.HasSuffix(g, s[j:])
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(s) {
			return false
		}
		for k, v := range s {
			if strings.Contains(k, patchPlaceholder) {
				continue // a key made by a variable: only the count is known
			}
			gv, ok := g[k]
			if !ok || !sameFilled(v, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(s) {
			return false
		}
		for i := range s {
			if !sameFilled(s[i], g[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(shape, got)
}

type substError struct{ err error }

func (e *substError) Error() string { return e.err.Error() }

// compileMutate compiles a mutate rule. $(./../) references in patches
// resolve against the whole rule, as upstream substitutes the rule as one
// document.
func (e *Engine) compileMutate(r *api.Rule, path *field.Path, errs field.ErrorList) (*mutateSpec, field.ErrorList) {
	var resolved *api.Mutation
	var doc map[string]any
	if err := remarshal(r, &doc); err == nil {
		if rd, err := variables.ResolveReferences(doc); err == nil {
			var rr api.Rule
			if err := remarshal(rd, &rr); err == nil {
				resolved = rr.Mutation
			}
		} else {
			errs = append(errs, field.Invalid(path, "", err.Error()))
		}
	}
	if resolved == nil {
		resolved = r.Mutation
	}
	m := resolved
	ms := &mutateSpec{targets: r.Mutation.Targets}
	p, err := e.compilePatch(m.PatchStrategicMerge, m.PatchesJSON6902, "/mutate")
	if err != nil {
		errs = append(errs, field.Invalid(path, "", err.Error()))
	}
	ms.patch = p
	ms.foreach, errs = e.compileForeachMutate(m.ForEachMutation, path.Child("foreach"), 0, errs)
	return ms, errs
}

func (e *Engine) compileForeachMutate(list []api.ForEachMutation, path *field.Path, depth int, errs field.ErrorList) ([]*foreachMutate, field.ErrorList) {
	if depth >= e.cfg.limits.MaxForeachDepth && len(list) > 0 {
		return nil, append(errs, field.Invalid(path, "", fmt.Sprintf("foreach nesting exceeds %d", e.cfg.limits.MaxForeachDepth)))
	}
	var out []*foreachMutate
	for i := range list {
		f := &list[i]
		fp := path.Index(i)
		fm := &foreachMutate{order: f.Order, isSM: f.PatchStrategicMerge != nil}
		l, err := e.compileList(f.List)
		if err != nil {
			errs = append(errs, field.Invalid(fp.Child("list"), f.List, err.Error()))
		}
		fm.list = l
		fm.context, errs = e.compileContext(f.Context, fp.Child("context"), errs)
		fm.preconditions, errs = e.compileConditions(f.Preconditions, fp.Child("preconditions"), errs)
		if fm.patch, err = e.compilePatch(f.PatchStrategicMerge, f.PatchesJSON6902, fmt.Sprintf("/mutate/foreach/%d", i)); err != nil {
			errs = append(errs, field.Invalid(fp, "", err.Error()))
		}
		if f.ForEachMutation != nil {
			var nested []api.ForEachMutation
			if err := remarshal(f.ForEachMutation, &nested); err != nil {
				errs = append(errs, field.Invalid(fp.Child("foreach"), "", err.Error()))
			}
			fm.nested, errs = e.compileForeachMutate(nested, fp.Child("foreach"), depth+1, errs)
		}
		out = append(out, fm)
	}
	return out, errs
}

// Mutate applies the mutate rules of every policy in order; each rule sees
// the result of the ones before. The response holds the final object and
// one RFC 6902 patch from the request object to it.
//
// The order is upstream's CLI's: the mutate rules of ClusterPolicies and
// Policies, their verifyImages rules, then the MutatingAdmissionPolicies
// and then the MutatingPolicies of the set, each in the set's order. A
// policy of the last two kinds with reinvocationPolicy IfNeeded is
// evaluated once more, after them all, when a policy evaluated after it
// changed the object, as the API server reinvokes mutating admission
// policies and webhooks (at most once); its PolicyResults are then those
// of the last evaluation.
func (s *PolicySet) Mutate(ctx context.Context, req *Request) (*Response, error) {
	if req == nil || (req.Object == nil && req.OldObject == nil) {
		return nil, ErrNoObject
	}
	var memo mutate.Memo
	var memoPtr *mutate.Memo
	if s.mergesObject {
		memoPtr = &memo // one walk tells canonical and what merges need
	}
	object, oldObject, canonical, err := req.checkMemo(memoPtr)
	if err != nil {
		return nil, err
	}
	if s.eng.filtered(req, object, oldObject) {
		return filteredResponse(object, oldObject), nil
	}
	rs := s.reqState(ctx, req, object, oldObject)
	rs.mergeMemo = memo
	// check told whether the object is a canonical tree (the strategic
	// merges need to know)
	for i, o := range [2]map[string]any{object, oldObject} {
		if o != nil && sameMap(rs.obj, o) {
			rs.canon = -1
			if canonical[i] {
				rs.canon = 1
			}
			break
		}
	}
	original := rs.obj
	resp := &Response{}
	cands := s.candidates(&rs.matchRes)
	for i, p := range s.policies {
		if !p.HasRuleType(Mutation) || p.body != nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return resp, err
		}
		// a mutation may change the kind: candidates are for the kind the
		// policy starts with
		if keyOf(&rs.matchRes) != cands.key {
			cands = s.candidates(&rs.matchRes)
		}
		resp.Policies = append(resp.Policies, s.eng.runPolicy(rs, p, Mutation, s.eng.mutateRule, cands.policy(i)))
	}
	if err := s.verifyImages(rs, resp); err != nil {
		return resp, err
	}
	if s.mutatingKinds {
		if err := s.mutateKinds(rs, resp); err != nil {
			return resp, err
		}
	}
	// ImageValidatingPolicies pin the images the mutations left
	if err := s.pinImageDigests(rs, resp); err != nil {
		return resp, err
	}
	resp.Resource = rs.obj
	s.putReqState(rs)
	// a cancellation during the last policy leaves rules unevaluated
	if err := ctx.Err(); err != nil {
		return resp, err
	}
	if !deepEqual(original, resp.Resource) {
		ops, err := mutate.Diff(original, resp.Resource)
		if err != nil {
			return resp, err
		}
		raw, err := json.Marshal(ops)
		if err != nil {
			return resp, err
		}
		resp.Patch = raw
	}
	return resp, nil
}

// mutateRule is the handler of mutate rules.
func (e *Engine) mutateRule(rs *reqState, p *Policy, r *rule, sc *scope, _ []*polex.Exception) []RuleResult {
	m := r.mutate
	if len(m.targets) > 0 && e.cfg.client != nil {
		return e.mutateTargets(rs, p, r, sc)
	}
	resource := rs.obj
	sc.setTarget(resource)
	var patched map[string]any
	var status Status
	var msg string
	var err error
	if m.foreach != nil {
		patched, status, msg, err = e.mutateForeach(rs, r, sc, m.foreach, resource, 0)
	} else {
		patched, status, msg, err = applyMutation(sc, m.patch, resource)
	}
	res := r.result(status, msg)
	res.Err = resultErr(err)
	res.EmitWarning = p.emitWarning
	if status == StatusPass {
		res.Message = mutatedMessage(patched)
		rs.setObject(patched)
	}
	return rs.single(res)
}

// applyMutation applies one patch: pass when the resource changed, skip
// when nothing changed, error (with its cause, when there is one) when the
// patch failed.
func applyMutation(sc *scope, ps *patchSpec, resource map[string]any) (map[string]any, Status, string, error) {
	if ps == nil {
		return resource, StatusError, "empty mutate rule", nil
	}
	patched, err := ps.apply(sc, resource)
	if err != nil {
		if se, ok := err.(*substError); ok {
			return resource, StatusError, "variable substitution failed: " + se.Error(), err
		}
		return resource, StatusError, "failed to patch resource: " + err.Error(), err
	}
	if deepEqual(patched, resource) {
		return resource, StatusSkip, "no patches applied", nil
	}
	return patched, StatusPass, "", nil
}

func mutatedMessage(obj map[string]any) string {
	if len(obj) == 0 {
		return "mutated resource"
	}
	name, ns := objectMeta(obj)
	kind, _ := obj["kind"].(string)
	if ns == "" {
		return fmt.Sprintf("mutated %s/%s", kind, name)
	}
	return fmt.Sprintf("mutated %s/%s in namespace %s", kind, name, ns)
}

// mutateForeach follows upstream's forEachMutator.
func (e *Engine) mutateForeach(rs *reqState, r *rule, sc *scope, list []*foreachMutate, resource map[string]any, nesting int) (map[string]any, Status, string, error) {
	applyCount := 0
	for _, fm := range list {
		elements, err := fm.list.evaluate(sc)
		if err != nil {
			return resource, StatusError, fmt.Sprintf("failed to evaluate list %s: %v", fm.list.expr, err), err
		}
		if len(elements) > e.cfg.limits.MaxForeachElements {
			err := e.foreachLimit(fm.list.expr, len(elements))
			return resource, StatusError, err.Error(), err
		}
		patched, status, msg, err := e.mutateElements(rs, r, sc, fm, elements, resource, nesting)
		if status == StatusError || status == StatusFail {
			return resource, StatusError, "failed to mutate elements: " + msg, err
		}
		if status != StatusSkip {
			applyCount++
			resource = patched
			// as upstream, later foreach entries see the patched object
			sc.set("request.object", resource)
		}
	}
	msg := fmt.Sprintf("%d elements processed", applyCount)
	if applyCount == 0 {
		return resource, StatusSkip, msg, nil
	}
	return resource, StatusPass, msg, nil
}

func (e *Engine) mutateElements(rs *reqState, r *rule, sc *scope, fm *foreachMutate, elements []any, resource map[string]any, nesting int) (map[string]any, Status, string, error) {
	reverse := fm.isSM
	if fm.order != nil {
		reverse = *fm.order == api.Descending
	}
	n := len(elements)
	changed := false
	for i := 0; i < n; i++ {
		index := i
		if reverse {
			index = n - 1 - i
		}
		el := elements[index]
		if el == nil {
			continue
		}
		if err := rs.ctx.Err(); err != nil {
			return resource, StatusError, err.Error(), err
		}
		child := sc.child()
		child.addElement(el, index, nesting)
		child.element = nil
		if err := child.loadContext(fm.context); err != nil {
			return resource, StatusError, fmt.Sprintf("failed to load to mutate.foreach[%d].context: %v", index, err), err
		}
		ok, _, err := child.checkConditions(fm.preconditions)
		if err != nil {
			return resource, StatusError, fmt.Sprintf("failed to evaluate mutate.foreach[%d].preconditions: %v", index, err), err
		}
		if !ok {
			continue
		}
		var patched map[string]any
		var status Status
		var msg string
		if fm.nested != nil {
			patched, status, msg, err = e.mutateForeach(rs, r, child, fm.nested, resource, nesting+1)
		} else {
			patched, status, msg, err = applyMutation(child, fm.patch, resource)
		}
		if status == StatusFail || status == StatusError {
			return resource, status, msg, err
		}
		if status == StatusPass {
			resource = patched
			changed = true
		}
	}
	if !changed {
		return resource, StatusSkip, "no patches applied", nil
	}
	return resource, StatusPass, "", nil
}
