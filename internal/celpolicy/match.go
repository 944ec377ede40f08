package celpolicy

import (
	"errors"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
)

// Attributes are what matchConstraints read of a request, as the API
// server's admission.Attributes give them.
type Attributes struct {
	// Group, Version and Resource are the request's resource (the
	// plural, "deployments"); Subresource its subresource ("status").
	Group, Version, Resource, Subresource string
	// Operation is CREATE, UPDATE, DELETE or CONNECT; empty for an
	// existing resource a policy may mutate (its rules then select it
	// whatever their operations).
	Operation string
	// Namespace and Name of the request: for a Namespace, Namespace is
	// its own name or "" (both are read as the API server reads them).
	Namespace, Name string
	// Object and OldObject are the request's objects (nil when absent).
	Object, OldObject map[string]any
	// NamespaceLabels returns the labels of the request's namespace; it is
	// called only when a namespaceSelector needs them.
	NamespaceLabels func() (map[string]string, error)

	// rules is the view of the rule matcher, kept here so that matching
	// allocates nothing (an Attributes is not shared between goroutines)
	rules ruleAttributes
}

// ruleAttributes are Attributes as the admission.Attributes the API
// server's rule matcher (predicates/rules.Matcher) reads: resource,
// subresource, namespace and operation. The matcher calls no other method;
// the embedded nil interface stands for the rest.
type ruleAttributes struct {
	admission.Attributes
	a *Attributes
	// version replaces the request's (matchPolicy Equivalent)
	version string
}

func (r *ruleAttributes) GetResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.a.Group, Version: r.version, Resource: r.a.Resource}
}
func (r *ruleAttributes) GetSubresource() string { return r.a.Subresource }
func (r *ruleAttributes) GetNamespace() string   { return r.a.Namespace }
func (r *ruleAttributes) GetOperation() admission.Operation {
	return admission.Operation(r.a.Operation)
}

// ErrNamespaceLabels wraps the error of Attributes.NamespaceLabels.
var ErrNamespaceLabels = errors.New("namespace labels")

// Constraints are compiled admissionregistration MatchResources
// (matchConstraints of a policy, matchResources of a binding). They match
// as k8s.io/apiserver's policy matcher (admission/plugin/policy/matching)
// does: resource rules through the API server's own rule matcher
// (webhook/predicates/rules), the namespace and object selectors with
// apimachinery's label selectors on the labels the host gives (the
// tests compare the whole with the API server's predicates).
type Constraints struct {
	rules, exclude []namedRule
	// nsSel and objSel are nil when they select everything
	nsSel, objSel labels.Selector
	// equivalent is matchPolicy Equivalent
	equivalent bool
}

// namedRule is a checked NamedRuleWithOperations; anyOp is its rule for
// every operation (a request without one: an existing resource).
type namedRule struct {
	rule, anyOp admissionregistrationv1.RuleWithOperations
	names       []string
}

// CompileConstraints compiles MatchResources; a nil m matches nothing
// (a policy without matchConstraints applies to no request, as upstream).
// defaultEquivalent is the matchPolicy of a nil field: Equivalent for
// ValidatingAdmissionPolicy (the API server defaults it), Exact for
// ValidatingPolicy (upstream's engine matches exactly).
func CompileConstraints(m *admissionregistrationv1.MatchResources, path *field.Path, defaultEquivalent bool) (*Constraints, field.ErrorList) {
	if m == nil {
		return nil, nil
	}
	var errs field.ErrorList
	c := &Constraints{equivalent: defaultEquivalent}
	if mp := m.MatchPolicy; mp != nil {
		switch *mp {
		case admissionregistrationv1.Exact:
			c.equivalent = false
		case admissionregistrationv1.Equivalent:
			c.equivalent = true
		default:
			errs = append(errs, field.NotSupported(path.Child("matchPolicy"), *mp, []string{"Exact", "Equivalent"}))
		}
	}
	var err error
	if c.nsSel, err = selector(m.NamespaceSelector); err != nil {
		errs = append(errs, field.Invalid(path.Child("namespaceSelector"), m.NamespaceSelector, err.Error()))
	}
	if c.objSel, err = selector(m.ObjectSelector); err != nil {
		errs = append(errs, field.Invalid(path.Child("objectSelector"), m.ObjectSelector, err.Error()))
	}
	var rerrs field.ErrorList
	c.rules, rerrs = compileRules(m.ResourceRules, path.Child("resourceRules"))
	errs = append(errs, rerrs...)
	c.exclude, rerrs = compileRules(m.ExcludeResourceRules, path.Child("excludeResourceRules"))
	errs = append(errs, rerrs...)
	return c, errs
}

func selector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil || sel.Empty() {
		return nil, err
	}
	return sel, nil
}

func compileRules(in []admissionregistrationv1.NamedRuleWithOperations, path *field.Path) ([]namedRule, field.ErrorList) {
	var errs field.ErrorList
	out := make([]namedRule, 0, len(in))
	for i, r := range in {
		p := path.Index(i)
		for _, op := range r.Operations {
			switch op {
			case admissionregistrationv1.OperationAll, admissionregistrationv1.Create, admissionregistrationv1.Update,
				admissionregistrationv1.Delete, admissionregistrationv1.Connect:
			default:
				errs = append(errs, field.NotSupported(p.Child("operations"), op, []string{"*", "CREATE", "UPDATE", "DELETE", "CONNECT"}))
			}
		}
		if r.Scope != nil {
			switch *r.Scope {
			case admissionregistrationv1.AllScopes, admissionregistrationv1.NamespacedScope, admissionregistrationv1.ClusterScope:
			default:
				errs = append(errs, field.NotSupported(p.Child("scope"), *r.Scope, []string{"*", "Namespaced", "Cluster"}))
			}
		}
		anyOp := r.RuleWithOperations
		anyOp.Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
		out = append(out, namedRule{rule: r.RuleWithOperations, anyOp: anyOp, names: r.ResourceNames})
	}
	return out, errs
}

// Resource is a resource the rules of constraints name.
type Resource struct {
	Group, Version, Resource, Subresource string
}

// Resources returns the resources the rules name without wildcards
// (the resources their objects can be listed by), in the rules' order,
// each once.
func (c *Constraints) Resources() []Resource {
	if c == nil {
		return nil
	}
	var out []Resource
	seen := map[Resource]bool{}
	for _, r := range c.rules {
		for _, g := range r.rule.APIGroups {
			for _, v := range r.rule.APIVersions {
				for _, rs := range r.rule.Resources {
					res, sub, _ := strings.Cut(rs, "/")
					x := Resource{Group: g, Version: v, Resource: res, Subresource: sub}
					if g == "*" || v == "*" || res == "*" || sub == "*" || seen[x] {
						continue
					}
					seen[x] = true
					out = append(out, x)
				}
			}
		}
	}
	return out
}

// SelectsNamespaces reports whether the constraints have a namespace
// selector (which reads the labels of namespaces).
func (c *Constraints) SelectsNamespaces() bool { return c != nil && c.nsSel != nil }

// Matches reports whether the constraints select the request, in the API
// server's order: namespace selector, object selector, exclusions, rules;
// a selector error is returned only for a request the rules select.
func (c *Constraints) Matches(a *Attributes) (bool, error) {
	if c == nil {
		return false, nil
	}
	nsOK, nsErr := c.matchNamespace(a)
	if !nsOK && nsErr == nil {
		return false, nil
	}
	if c.objSel != nil && !matchLabels(a.Object, c.objSel) && !matchLabels(a.OldObject, c.objSel) {
		return false, nil
	}
	if matchRules(c.exclude, c.equivalent, a) {
		return false, nil
	}
	if len(c.rules) > 0 && !matchRules(c.rules, c.equivalent, a) {
		return false, nil
	}
	if nsErr != nil {
		return false, nsErr
	}
	return true, nil
}

func (c *Constraints) matchNamespace(a *Attributes) (bool, error) {
	if c.nsSel == nil {
		return true, nil
	}
	isNamespace := a.Resource == "namespaces"
	if a.Namespace == "" && !isNamespace {
		// cluster-scoped resources are never exempted
		return true, nil
	}
	var set map[string]string
	if isNamespace && a.Subresource == "" && (a.Operation == "CREATE" || a.Operation == "UPDATE" || a.Operation == "") {
		set = objectLabels(a.Object)
	} else {
		if a.NamespaceLabels == nil {
			return false, fmt.Errorf("%w: namespace %q: no labels", ErrNamespaceLabels, a.Namespace)
		}
		var err error
		if set, err = a.NamespaceLabels(); err != nil {
			return false, fmt.Errorf("%w: namespace %q: %w", ErrNamespaceLabels, a.Namespace, err)
		}
	}
	return c.nsSel.Matches(labels.Set(set)), nil
}

func matchLabels(obj map[string]any, sel labels.Selector) bool {
	if obj == nil {
		return false
	}
	return sel.Matches(labels.Set(objectLabels(obj)))
}

// objectLabels returns the string labels of an object's metadata.
func objectLabels(obj map[string]any) map[string]string {
	md, _ := obj["metadata"].(map[string]any)
	l, _ := md["labels"].(map[string]any)
	if len(l) == 0 {
		return nil
	}
	out := make(map[string]string, len(l))
	for k, v := range l {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// matchRules reports whether one of the rules selects the request, or,
// with equivalent, the request's resource under another version of its
// group (the API server's equivalent resources are the versions its
// storage serves; gavel takes every version of the group and resource,
// and does not convert the object).
func matchRules(rules []namedRule, equivalent bool, a *Attributes) bool {
	ra := &a.rules
	ra.a, ra.version = a, a.Version
	for i := range rules {
		if rules[i].matches(ra) {
			return true
		}
	}
	if !equivalent {
		return false
	}
	for i := range rules {
		for _, v := range rules[i].rule.APIVersions {
			ra.version = v
			if v != "*" && rules[i].matches(ra) {
				return true
			}
		}
	}
	return false
}

func (r *namedRule) matches(ra *ruleAttributes) bool {
	rule := r.rule
	if ra.a.Operation == "" {
		rule = r.anyOp
	}
	if !(&rules.Matcher{Rule: rule, Attr: ra}).Matches() {
		return false
	}
	if len(r.names) == 0 {
		return true
	}
	for _, n := range r.names {
		if n == ra.a.Name {
			return true
		}
	}
	return false
}
