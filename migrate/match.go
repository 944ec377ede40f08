package migrate

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
)

// matchConv is a rule's match and exclude blocks in CEL terms: the kinds
// and operations, which become matchConstraints, and the rest (names,
// namespaces, selectors, users), a condition.
type matchConv struct {
	kinds []kindRef
	// ops are the operations the rule names (nil: every operation)
	ops []string
	// cond holds for the resources the rule selects among those of its
	// kinds
	cond ex
	// nsSelector and objSelector are a single filter's selectors without
	// wildcards, which matchConstraints can hold instead of cond
	nsSelector, objSelector *metav1.LabelSelector
	// liftable reports that cond is exactly the selectors above
	liftable bool
}

// filters returns the filters of a match block and whether all of them
// must match (an all block).
func filters(m *api.MatchResources) ([]api.ResourceFilter, bool) {
	switch {
	case len(m.Any) > 0:
		return m.Any, false
	case len(m.All) > 0:
		return m.All, true
	case !m.UserInfo.IsEmpty() || !m.ResourceDescription.IsEmpty():
		return []api.ResourceFilter{{UserInfo: m.UserInfo, ResourceDescription: m.ResourceDescription}}, false
	}
	return nil, false
}

// kindSet is the text of a list of kinds, sorted, for comparisons.
func kindSet(kinds []string) string {
	s := append([]string(nil), kinds...)
	sort.Strings(s)
	return strings.Join(s, ",")
}

// match converts a rule's match and exclude blocks.
func (c *jp) match(m *api.MatchResources, exclude *api.MatchResources, path string) (*matchConv, error) {
	fs, all := filters(m)
	if len(fs) == 0 {
		return nil, unsupportedf("match", "at %s: a rule must match something", path)
	}
	out := &matchConv{}
	seen := map[string]bool{}
	var union []string
	opSet := map[string]bool{}
	allOps := false
	for _, f := range fs {
		for _, k := range f.Kinds {
			if !seen[k] {
				seen[k] = true
				union = append(union, k)
				out.kinds = append(out.kinds, parseKind(k))
			}
		}
		if len(f.Operations) == 0 {
			allOps = true
		}
		for _, o := range f.Operations {
			opSet[string(o)] = true
		}
	}
	if !allOps {
		for o := range opSet {
			out.ops = append(out.ops, o)
		}
		sort.Strings(out.ops)
	}
	unionSet := kindSet(union)
	var conds []ex
	for i, f := range fs {
		fpath := fmt.Sprintf("%s.any[%d]", path, i)
		if all {
			fpath = fmt.Sprintf("%s.all[%d]", path, i)
		}
		e, err := c.filter(f, kindSet(f.Kinds) != unionSet, allOps || len(fs) > 1, fpath)
		if err != nil {
			return nil, err
		}
		conds = append(conds, e)
	}
	if all {
		out.cond = and(conds...)
	} else {
		out.cond = or(conds...)
	}
	if len(fs) == 1 && !all {
		f := fs[0]
		only := api.ResourceFilter{ResourceDescription: api.ResourceDescription{Kinds: f.Kinds, Operations: f.Operations,
			Selector: f.Selector, NamespaceSelector: f.NamespaceSelector}}
		if f.UserInfo.IsEmpty() && equalFilters(f, only) && !selectorWildcards(f.Selector) && !selectorWildcards(f.NamespaceSelector) &&
			(f.Selector != nil || f.NamespaceSelector != nil) {
			out.nsSelector, out.objSelector, out.liftable = f.NamespaceSelector, f.Selector, true
		}
	}
	if exclude != nil {
		xfs, xall := filters(exclude)
		var xconds []ex
		for i, f := range xfs {
			fpath := fmt.Sprintf("%s.any[%d]", strings.Replace(path, "match", "exclude", 1), i)
			e, err := c.filter(f, len(f.Kinds) > 0 && kindSet(f.Kinds) != unionSet, true, fpath)
			if err != nil {
				return nil, err
			}
			xconds = append(xconds, e)
		}
		if len(xconds) > 0 {
			var x ex
			if xall {
				x = and(xconds...)
			} else {
				x = or(xconds...)
			}
			out.cond = and(out.cond, not(x))
			out.liftable = false
		}
	}
	return out, nil
}

// equalFilters compares two filters by their JSON form.
func equalFilters(a, b api.ResourceFilter) bool {
	return fmt.Sprintf("%+v", a) == fmt.Sprintf("%+v", b)
}

// selectorWildcards reports a selector whose values use wildcards
// (Kyverno matches them; a label selector does not).
func selectorWildcards(s *metav1.LabelSelector) bool {
	if s == nil {
		return false
	}
	for k, v := range s.MatchLabels {
		if hasWildcard(k) || hasWildcard(v) {
			return true
		}
	}
	for _, r := range s.MatchExpressions {
		for _, v := range r.Values {
			if hasWildcard(v) {
				return true
			}
		}
	}
	return false
}

// rolesWhy says why roles and clusterRoles have no CEL form.
const rolesWhy = "the roles Kyverno computes for the user (its RoleBindings and ClusterRoleBindings read through the API) are not in the CEL request, upstream's either: the CEL request has userInfo, and the authorizer checks permissions, not role names"

// namespaceOf is the namespace Kyverno's namespaces filter reads for the
// kinds (the rule's when the filter has none): a Namespace's own name,
// the request's namespace for other kinds.
func (c *jp) namespaceOf(kinds []string) ex {
	if len(kinds) == 0 {
		kinds = c.kinds
	}
	ns := 0
	for _, k := range kinds {
		if k == "Namespace" || strings.HasSuffix(k, "/Namespace") {
			ns++
		}
	}
	switch {
	case ns == 0:
		return ident("request.namespace")
	case ns == len(kinds):
		return ident("object.metadata.name")
	}
	return cond(rel(ident("request.kind.kind"), "==", strLit("Namespace")), ident("object.metadata.name"), ident("request.namespace"))
}

// filter converts one resource filter; withKinds adds the test of its
// kinds (when the rule's kinds differ between filters), withOps the test
// of its operations.
func (c *jp) filter(f api.ResourceFilter, withKinds, withOps bool, path string) (ex, error) {
	var conds []ex
	if withKinds && len(f.Kinds) > 0 {
		conds = append(conds, kindTest(f.Kinds))
	}
	if withOps && len(f.Operations) > 0 {
		var ops []string
		for _, o := range f.Operations {
			ops = append(ops, string(o))
		}
		conds = append(conds, inItems(ident("request.operation"), ops))
	}
	name := ident("object.metadata.name")
	names := f.Names
	if f.Name != "" {
		names = append([]string{f.Name}, names...)
	}
	if len(names) > 0 {
		conds = append(conds, inItems(name, names))
	}
	if len(f.Namespaces) > 0 {
		conds = append(conds, inItems(c.namespaceOf(f.Kinds), f.Namespaces))
	}
	if len(f.Annotations) > 0 {
		keys := make([]string, 0, len(f.Annotations))
		for k := range f.Annotations {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		ann := ident("object.metadata.annotations")
		for _, k := range keys {
			if hasWildcard(k) {
				return ex{}, unsupportedf("annotations", "at %s.resources.annotations: a key with wildcards", path)
			}
			conds = append(conds, and(has(ident("object.metadata"), "annotations"), rel(strLit(k), "in", ann), wildcardMatch(index(ann, strLit(k)), f.Annotations[k])))
		}
	}
	if f.Selector != nil {
		e, err := selectorTest(ident("object.metadata"), f.Selector, path+".resources.selector")
		if err != nil {
			return ex{}, err
		}
		conds = append(conds, e)
	}
	if f.NamespaceSelector != nil {
		e, err := selectorTest(ident("namespaceObject.metadata"), f.NamespaceSelector, path+".resources.namespaceSelector")
		if err != nil {
			return ex{}, err
		}
		conds = append(conds, e)
	}
	if len(f.Roles) > 0 || len(f.ClusterRoles) > 0 {
		return ex{}, unsupportedf("roles and clusterRoles", "at %s: %s", path, rolesWhy)
	}
	if len(f.Subjects) > 0 {
		var subs []ex
		for _, s := range f.Subjects {
			e, err := subjectTest(s)
			if err != nil {
				return ex{}, at(path+".subjects", err)
			}
			subs = append(subs, e)
		}
		conds = append(conds, or(subs...))
	}
	return and(conds...), nil
}

// kindTest tests the request's kind against kind selectors.
func kindTest(kinds []string) ex {
	var tests []ex
	var plain []string
	for _, s := range kinds {
		k := parseKind(s)
		// the group and version are the constraints' (kinds of one name
		// in two groups are rare)
		var t []ex
		if k.kind != "*" {
			if k.subresource == "" && !hasWildcard(k.kind) {
				plain = append(plain, k.kind)
				continue
			}
			t = append(t, wildcardMatch(ident("request.kind.kind"), k.kind))
		}
		if k.subresource != "" {
			// the request has no subResource unless it is one
			t = append(t, rel(ident("request.?subResource.orValue('')"), "==", strLit(k.subresource)))
		}
		tests = append(tests, and(t...))
	}
	if len(plain) > 0 {
		tests = append([]ex{inItems(ident("request.kind.kind"), plain)}, tests...)
	}
	return or(tests...)
}

// selectorTest is a label selector (with Kyverno's wildcards) on the
// labels of the metadata md.
func selectorTest(md ex, s *metav1.LabelSelector, path string) (ex, error) {
	labels := field(md, "labels")
	hasLabels := has(md, "labels")
	var conds []ex
	keys := make([]string, 0, len(s.MatchLabels))
	for k := range s.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if hasWildcard(k) {
			return ex{}, unsupportedf("selector", "at %s: a label key with wildcards", path)
		}
		conds = append(conds, and(hasLabels, rel(strLit(k), "in", labels), wildcardMatch(index(labels, strLit(k)), s.MatchLabels[k])))
	}
	for i, r := range s.MatchExpressions {
		val := index(labels, strLit(r.Key))
		present := and(hasLabels, rel(strLit(r.Key), "in", labels))
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			conds = append(conds, and(present, inItems(val, r.Values)))
		case metav1.LabelSelectorOpNotIn:
			conds = append(conds, or(not(present), not(inItems(val, r.Values))))
		case metav1.LabelSelectorOpExists:
			conds = append(conds, present)
		case metav1.LabelSelectorOpDoesNotExist:
			conds = append(conds, not(present))
		default:
			return ex{}, unsupportedf("selector", "at %s.matchExpressions[%d]: operator %s", path, i, r.Operator)
		}
	}
	return and(conds...), nil
}

// subjectTest tests the request's user against an RBAC subject.
func subjectTest(s api.Subject) (ex, error) {
	user := ident("request.userInfo.username")
	switch s.Kind {
	case "User":
		return wildcardMatch(user, s.Name), nil
	case "Group":
		g := "group"
		return macro(ident("request.userInfo.groups"), "exists", g, wildcardMatch(ident(g), s.Name)), nil
	case "ServiceAccount":
		return rel(user, "==", strLit("system:serviceaccount:"+s.Namespace+":"+s.Name)), nil
	}
	return ex{}, unsupportedf("subject kind "+s.Kind, "not User, Group or ServiceAccount")
}
