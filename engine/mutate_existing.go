package engine

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/wildcard"
)

// targetSpec is a compiled mutate target: templates for its identity and
// selector, its own context entries and preconditions.
type targetSpec struct {
	apiVersion, kind, name, namespace *template
	selector                          *tree
	context                           []*contextEntry
	preconditions                     *condSet
}

// compileTargets compiles the targets of a mutate-existing rule.
func (e *Engine) compileTargets(targets []api.TargetResource, path *field.Path, errs field.ErrorList) ([]*targetSpec, field.ErrorList) {
	out := make([]*targetSpec, 0, len(targets))
	for i := range targets {
		t := &targets[i]
		tp := path.Index(i)
		ts := &targetSpec{}
		tmpl := func(s string, fp *field.Path) *template {
			x, err := e.compileTemplate(s)
			if err != nil {
				errs = append(errs, field.Invalid(fp, s, err.Error()))
			}
			return x
		}
		ts.apiVersion = tmpl(t.APIVersion, tp.Child("apiVersion"))
		ts.kind = tmpl(t.Kind, tp.Child("kind"))
		ts.name = tmpl(t.Name, tp.Child("name"))
		ts.namespace = tmpl(t.Namespace, tp.Child("namespace"))
		if t.Selector != nil {
			var doc any
			if err := remarshal(t.Selector, &doc); err != nil {
				errs = append(errs, field.Invalid(tp.Child("selector"), "", err.Error()))
			} else if sel, err := e.compileTree(doc, ""); err != nil {
				errs = append(errs, field.Invalid(tp.Child("selector"), "", err.Error()))
			} else {
				ts.selector = sel
			}
		}
		ts.context, errs = e.compileContext(t.Context, tp.Child("context"), errs)
		ts.preconditions, errs = e.compileConditions(t.Preconditions, tp.Child("preconditions"), errs)
		out = append(out, ts)
	}
	return out, errs
}

// loadedTarget is one existing resource selected by a target.
type loadedTarget struct {
	obj  map[string]any
	spec *targetSpec
}

// mutateTargets handles mutate rules with targets (mutate existing). At
// admission (see Generate) such rules do not mutate anything: Generate
// queues an UpdateRequest of type mutate for them. Otherwise (background,
// CLI, the UpdateRequest controller) the targets are loaded through the
// Client and patched; each target gives one result, with the patched object
// in PatchedTargets when the patch changed it.
func (e *Engine) mutateTargets(rs *reqState, p *Policy, r *rule, sc *scope) []RuleResult {
	if e.admission(rs) {
		return nil
	}
	if rs.op == api.Delete && !ruleMatchesOperation(r.src, api.Delete) {
		return nil
	}
	specs, errs := e.compileTargets(r.mutate.targets, field.NewPath("mutate", "targets"), nil)
	if len(errs) > 0 {
		return []RuleResult{r.result(StatusError, errs.ToAggregate().Error())}
	}
	var results []RuleResult
	targets, err := e.loadTargets(rs, p, sc, specs)
	if err != nil {
		results = append(results, r.result(StatusError, err.Error()))
	}
	m := r.mutate
	for _, t := range targets {
		if err := rs.ctx.Err(); err != nil {
			return append(results, r.result(StatusError, err.Error()))
		}
		child := sc.child()
		child.set("target", t.obj)
		if err := child.loadContext(t.spec.context); err != nil {
			results = append(results, r.errorResult("failed to load context", err))
			continue
		}
		ok, msg, err := child.checkConditions(t.spec.preconditions)
		if err != nil {
			results = append(results, r.errorResult("failed to evaluate preconditions", err))
			continue
		}
		if !ok {
			text := "preconditions not met"
			if msg != "" {
				text += "; " + msg
			}
			results = append(results, r.result(StatusSkip, text))
			continue
		}
		var patched map[string]any
		var status Status
		if m.foreach != nil {
			patched, status, msg, err = e.mutateForeach(rs, r, child, m.foreach, t.obj, 0)
		} else {
			patched, status, msg, err = applyMutation(child, m.patch, t.obj)
		}
		res := r.result(status, msg)
		res.Err = resultErr(err)
		if status == StatusPass {
			res.Message = mutatedMessage(patched)
			res.PatchedTargets = []map[string]any{patched}
		}
		results = append(results, res)
	}
	return results
}

// loadTargets resolves the targets' variables and reads the selected
// resources, as upstream's loadTargets: a named target in a named namespace
// is read directly (a missing one is an error), otherwise the kind is listed
// and filtered by name and namespace wildcards. Targets of a namespaced
// Policy are read only from the policy's namespace.
func (e *Engine) loadTargets(rs *reqState, p *Policy, sc *scope, specs []*targetSpec) ([]loadedTarget, error) {
	client := e.cfg.client
	if client == nil {
		return nil, fmt.Errorf("cannot load mutate targets: client %w", ErrNotConfigured)
	}
	var out []loadedTarget
	var errs []error
	for i, ts := range specs {
		resolve := func(t *template) (string, error) {
			s, err := sc.renderString(t)
			if err != nil {
				return "", fmt.Errorf("failed to substitute variables in target[%d]: %w", i, err)
			}
			return s, nil
		}
		var vals [4]string
		var err error
		for j, t := range []*template{ts.apiVersion, ts.kind, ts.name, ts.namespace} {
			if vals[j], err = resolve(t); err != nil {
				break
			}
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		apiVersion, kind, name, namespace := vals[0], vals[1], vals[2], vals[3]
		var selector *metav1.LabelSelector
		if ts.selector != nil {
			v, err := sc.substitute(ts.selector)
			if err != nil {
				errs = append(errs, fmt.Errorf("failed to substitute variables in target[%d]: %w", i, err))
				continue
			}
			selector = &metav1.LabelSelector{}
			if err := remarshal(v, selector); err != nil {
				errs = append(errs, fmt.Errorf("target[%d].selector: %w", i, err))
				continue
			}
		}
		if api.IsNamespaced(p.src) {
			namespace = p.src.GetNamespace()
		}
		if name != "" && namespace != "" && !wildcard.Has(name) && !wildcard.Has(namespace) {
			cctx, done := rs.hostContext()
			obj, err := client.Get(cctx, apiVersion, kind, namespace, name)
			err = done(err)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if o, ok := normalize(obj).(map[string]any); ok && o != nil {
				out = append(out, loadedTarget{obj: o, spec: ts})
			}
			continue
		}
		listNS := namespace
		if wildcard.Has(listNS) {
			listNS = ""
		}
		cctx, done := rs.hostContext()
		objs, err := client.List(cctx, apiVersion, kind, listNS, selector)
		err = done(err)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, obj := range objs {
			o, ok := normalize(obj).(map[string]any)
			if !ok {
				continue
			}
			oname, ons := objectMeta(o)
			if !targetMatches(namespace, name, ons, oname) {
				continue
			}
			out = append(out, loadedTarget{obj: o, spec: ts})
		}
	}
	return out, errors.Join(errs...)
}

// targetMatches filters listed targets by namespace and name patterns, as
// upstream's match helper.
func targetMatches(nsPattern, namePattern, ns, name string) bool {
	switch {
	case nsPattern == "" && namePattern == "":
		return true
	case nsPattern == "":
		return wildcard.Match(namePattern, name)
	case wildcard.Match(nsPattern, ns):
		return namePattern == "" || wildcard.Match(namePattern, name)
	}
	return false
}
