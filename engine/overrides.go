package engine

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/wildcard"
)

// labelSelector is a compiled metav1.LabelSelector.
type labelSelector struct {
	sel labels.Selector
}

func compileSelector(s *metav1.LabelSelector, path *field.Path) (*labelSelector, field.ErrorList) {
	if s == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(path, s, err.Error())}
	}
	return &labelSelector{sel: sel}, nil
}

func (l *labelSelector) matches(set map[string]string) bool {
	return l.sel.Matches(labels.Set(set))
}

func compileOverrides(in []api.ValidationFailureActionOverride, path *field.Path) ([]override, field.ErrorList) {
	var out []override
	var errs field.ErrorList
	for i, o := range in {
		p := path.Index(i)
		if !validFailureAction(o.Action) {
			errs = append(errs, field.NotSupported(p.Child("action"), o.Action, []string{"Audit", "Enforce"}))
			continue
		}
		sel, serrs := compileSelector(o.NamespaceSelector, p.Child("namespaceSelector"))
		errs = append(errs, serrs...)
		out = append(out, override{action: o.Action, namespaces: o.Namespaces, selector: sel})
	}
	return out, errs
}

// failureActionFor returns the policy's effective failure action for the
// request's resource: the first validate rule's action (or the policy's),
// with the first matching override by namespace and namespace selector.
func (p *Policy) failureActionFor(rs *reqState) api.ValidationFailureAction {
	if a, ok := matchOverride(rs, p.actionOverrides); ok {
		return a
	}
	return p.action
}

// ruleEnforced reports whether a failure of r blocks admission, as
// upstream decides since kyverno#16558: by the rule's own action (its
// overrides, then its failureAction), else by the policy's overrides and
// validationFailureAction. A policy may so mix Enforce and Audit rules.
func (p *Policy) ruleEnforced(rs *reqState, r *rule) bool {
	if a, ok := matchOverride(rs, r.overrides); ok {
		return a.IsEnforce()
	}
	if r.failureAction != nil {
		return r.failureAction.IsEnforce()
	}
	if a, ok := matchOverride(rs, p.overrides); ok {
		return a.IsEnforce()
	}
	return p.failureAction.IsEnforce()
}

// matchOverride returns the action of the first of overrides that applies
// to the request's namespace: by name pattern, and namespace selector
// when it has one.
func matchOverride(rs *reqState, overrides []override) (api.ValidationFailureAction, bool) {
	ns := rs.matchRes.Namespace
	for _, o := range overrides {
		if o.namespaces == nil {
			if o.selector != nil {
				if l, err := rs.namespaceLabels(); err == nil && o.selector.matches(l) {
					return normalizeAction(o.action), true
				}
			}
			continue
		}
		for _, pat := range o.namespaces {
			if !wildcard.Match(pat, ns) {
				continue
			}
			if o.selector == nil {
				return normalizeAction(o.action), true
			}
			if l, err := rs.namespaceLabels(); err == nil && o.selector.matches(l) {
				return normalizeAction(o.action), true
			}
		}
	}
	return "", false
}

// baseFailureAction returns, for Compile, the failure action
// failureActionFor starts from (normalized) and the overrides it checks.
func (p *Policy) baseFailureAction() (api.ValidationFailureAction, []override) {
	action := p.failureAction
	overrides := p.overrides
	for _, r := range p.rules {
		if r.typ != Validation && r.typ != ImageVerify {
			continue
		}
		if r.failureAction != nil {
			action = *r.failureAction
		}
		if len(r.overrides) > 0 {
			overrides = r.overrides
		}
		break
	}
	return normalizeAction(action), overrides
}

func normalizeAction(a api.ValidationFailureAction) api.ValidationFailureAction {
	if a.IsEnforce() {
		return api.Enforce
	}
	return api.Audit
}

// validFailureAction reports whether a is one of the spellings upstream
// accepts.
func validFailureAction(a api.ValidationFailureAction) bool {
	switch a {
	case "Audit", "audit", "Enforce", "enforce":
		return true
	}
	return false
}
