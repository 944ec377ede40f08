package match

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/wildcard"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// variableRE finds {{ ... }} variables, as upstream's policy validation does.
var variableRE = regexp.MustCompile(`\{\{[^{}]*\}\}`)

const (
	msgAnyAllTogether   = "Can't specify any and all together"
	msgNameAndNames     = "Both name and names can not be specified together"
	msgNoRequirements   = "The requirements are not specified in selector"
	msgNoMatchResources = "match resources not specified"
	msgKindRequired     = "at least one element must be specified in a kind block, the kind attribute is mandatory when working with the resources element"
	msgWildcardBG       = "wildcard policy not allowed in background mode. Set spec.background=false to disable background mode for this policy rule"
	msgWildcardMulti    = "wildcard policy can not deal with more than one kind"
	msgUserInfoBG       = "only select variables are allowed in background mode. Set spec.background=false to disable background mode for this policy rule"
	msgEmptySet         = "Rule is matching an empty set"
	msgNamespacesNsPol  = "Filtering namespaces not allowed in namespaced policies"
)

// checkVariables rejects {{ }} variables anywhere in a block.
func checkVariables(m *api.MatchResources, path *field.Path, section string) field.ErrorList {
	var errs field.ErrorList
	walkStrings(m, path, func(p *field.Path, s string) {
		if variableRE.MatchString(s) {
			errs = append(errs, field.Forbidden(p, "variables are not allowed in the "+section+" section"))
		}
	})
	return errs
}

// walkStrings calls fn for every string of a block with its path.
func walkStrings(m *api.MatchResources, path *field.Path, fn func(*field.Path, string)) {
	each := func(rf *api.ResourceFilter, fp *field.Path) {
		walkUserInfo(&rf.UserInfo, fp, fn)
		walkResources(&rf.ResourceDescription, fp.Child("resources"), fn)
	}
	for i := range m.Any {
		each(&m.Any[i], path.Child("any").Index(i))
	}
	for i := range m.All {
		each(&m.All[i], path.Child("all").Index(i))
	}
	each(&api.ResourceFilter{UserInfo: m.UserInfo, ResourceDescription: m.ResourceDescription}, path)
}

func walkUserInfo(u *api.UserInfo, p *field.Path, fn func(*field.Path, string)) {
	for i, r := range u.Roles {
		fn(p.Child("roles").Index(i), r)
	}
	for i, r := range u.ClusterRoles {
		fn(p.Child("clusterRoles").Index(i), r)
	}
	for i, s := range u.Subjects {
		sp := p.Child("subjects").Index(i)
		fn(sp.Child("kind"), s.Kind)
		fn(sp.Child("apiGroup"), s.APIGroup)
		fn(sp.Child("name"), s.Name)
		fn(sp.Child("namespace"), s.Namespace)
	}
}

func walkResources(rd *api.ResourceDescription, p *field.Path, fn func(*field.Path, string)) {
	for i, k := range rd.Kinds {
		fn(p.Child("kinds").Index(i), k)
	}
	fn(p.Child("name"), rd.Name)
	for i, n := range rd.Names {
		fn(p.Child("names").Index(i), n)
	}
	for i, n := range rd.Namespaces {
		fn(p.Child("namespaces").Index(i), n)
	}
	for _, k := range sortedKeys(rd.Annotations) {
		fn(p.Child("annotations").Key(k), k)
		fn(p.Child("annotations").Key(k), rd.Annotations[k])
	}
	walkSelector(rd.Selector, p.Child("selector"), fn)
	walkSelector(rd.NamespaceSelector, p.Child("namespaceSelector"), fn)
	for i, op := range rd.Operations {
		fn(p.Child("operations").Index(i), string(op))
	}
}

func walkSelector(ls *metav1.LabelSelector, p *field.Path, fn func(*field.Path, string)) {
	if ls == nil {
		return
	}
	for _, k := range sortedKeys(ls.MatchLabels) {
		fn(p.Child("matchLabels").Key(k), k)
		fn(p.Child("matchLabels").Key(k), ls.MatchLabels[k])
	}
	for i, e := range ls.MatchExpressions {
		ep := p.Child("matchExpressions").Index(i)
		fn(ep.Child("key"), e.Key)
		for j, v := range e.Values {
			fn(ep.Child("values").Index(j), v)
		}
	}
}

// validateMatchResources is upstream's MatchResources.Validate: any and all
// not together, then every filter's user info and resource description.
func validateMatchResources(m *api.MatchResources, path *field.Path, o *options) field.ErrorList {
	var errs field.ErrorList
	if len(m.Any) > 0 && len(m.All) > 0 {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, msgAnyAllTogether))
	}
	check := func(rf *api.ResourceFilter, fp *field.Path) {
		errs = append(errs, validateUserInfo(&rf.UserInfo, fp)...)
		errs = append(errs, validateResourceDescription(&rf.ResourceDescription, fp.Child("resources"), o)...)
	}
	for i := range m.Any {
		check(&m.Any[i], path.Child("any").Index(i))
	}
	for i := range m.All {
		check(&m.All[i], path.Child("all").Index(i))
	}
	check(&api.ResourceFilter{UserInfo: m.UserInfo, ResourceDescription: m.ResourceDescription}, path)
	return errs
}

func validateUserInfo(u *api.UserInfo, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, s := range u.Subjects {
		p := path.Child("subjects").Index(i)
		switch s.Kind {
		case "":
			errs = append(errs, field.Required(p.Child("kind"), ""))
		case "User", "Group", "ServiceAccount":
		default:
			errs = append(errs, field.Invalid(p.Child("kind"), s.Kind, "kind must be 'User', 'Group', or 'ServiceAccount'"))
		}
		if s.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if s.Kind == "ServiceAccount" && s.Namespace == "" {
			errs = append(errs, field.Required(p.Child("namespace"), "namespace is required when Kind is ServiceAccount"))
		}
	}
	for i, r := range u.Roles {
		if strings.Count(r, ":") != 1 {
			errs = append(errs, field.Invalid(path.Child("roles").Index(i), r, "Role is expected to be in namespace:name format"))
		}
	}
	return errs
}

func validateResourceDescription(rd *api.ResourceDescription, path *field.Path, o *options) field.ErrorList {
	var errs field.ErrorList
	if rd.Name != "" && len(rd.Names) > 0 {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, msgNameAndNames))
	}
	if s := rd.Selector; s != nil && !containsWildcard(s) && len(s.MatchLabels)+len(s.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(path.Child("selector"), field.OmitValueType{}, msgNoRequirements))
	}
	for i, k := range rd.Kinds {
		p := path.Child("kinds").Index(i)
		switch {
		case k == "":
			errs = append(errs, field.Invalid(p, k, "kind must not be empty"))
		case strings.Count(k, "/") > 3:
			errs = append(errs, field.Invalid(p, k, "kind selector has more than four segments (group/version/Kind/subresource)"))
		case ParseKindSelector(k).Kind == "":
			errs = append(errs, field.Invalid(p, k, "kind selector has an empty kind"))
		}
	}
	if o.namespaced {
		if len(rd.Namespaces) > 0 {
			errs = append(errs, field.Forbidden(path.Child("namespaces"), msgNamespacesNsPol))
		}
		for i, k := range rd.Kinds {
			if o.clusterKinds[k] {
				errs = append(errs, field.Forbidden(path.Child("kinds").Index(i),
					fmt.Sprintf("Cluster wide resource '%s' not allowed in namespaced policy", k)))
			}
		}
	}
	return errs
}

// validateMatchFilters applies upstream's checks of the match block: no
// any/all together with inline resources, every filter selects resources and
// names at least one kind.
func validateMatchFilters(m *api.MatchResources, path *field.Path) field.ErrorList {
	errs := validateInlineMix(m, path)
	fs := filtersOf(m)
	rps := resourcePaths(m, path)
	for i := range fs {
		rd := &fs[i].ResourceDescription
		switch {
		case rd.IsEmpty():
			errs = append(errs, field.Required(rps[i], msgNoMatchResources))
		case len(rd.Kinds) == 0:
			errs = append(errs, field.Required(rps[i].Child("kinds"), msgKindRequired))
		}
	}
	return errs
}

func validateInlineMix(m *api.MatchResources, path *field.Path) field.ErrorList {
	if (len(m.Any) > 0 || len(m.All) > 0) && !m.ResourceDescription.IsEmpty() {
		section := path.String()
		if i := strings.LastIndex(section, "."); i >= 0 {
			section = section[i+1:]
		}
		return field.ErrorList{field.Forbidden(path.Child("resources"), "can't specify any/all together with "+section+" resources")}
	}
	return nil
}

// validateBackground forbids user criteria in background policies.
func validateBackground(m *api.MatchResources, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(u *api.UserInfo, p *field.Path) {
		for _, name := range userInfoFields(u) {
			// upstream's words name the field with slashes
			errs = append(errs, field.Forbidden(p.Child(name), msgUserInfoBG+": invalid variable used at path: "+strings.ReplaceAll(p.Child(name).String(), ".", "/")))
		}
	}
	check(&m.UserInfo, path)
	for i := range m.Any {
		check(&m.Any[i].UserInfo, path.Child("any").Index(i))
	}
	for i := range m.All {
		check(&m.All[i].UserInfo, path.Child("all").Index(i))
	}
	return errs
}

// validateKindWildcards applies upstream's rules for the "*" kind.
func validateKindWildcards(m *api.MatchResources, path *field.Path, o *options) field.ErrorList {
	var errs field.ErrorList
	check := func(kinds []string, p *field.Path) {
		star := false
		for _, k := range kinds {
			if k == "*" {
				star = true
			}
		}
		if !star {
			return
		}
		if o.background {
			errs = append(errs, field.Invalid(p, field.OmitValueType{}, msgWildcardBG))
		}
		if len(kinds) > 1 {
			errs = append(errs, field.Invalid(p, field.OmitValueType{}, msgWildcardMulti))
		}
	}
	for i := range m.Any {
		check(m.Any[i].Kinds, path.Child("any").Index(i).Child("resources", "kinds"))
	}
	for i := range m.All {
		check(m.All[i].Kinds, path.Child("all").Index(i).Child("resources", "kinds"))
	}
	check(m.Kinds, path.Child("resources", "kinds"))
	return errs
}

// validateMatchExcludeConflict is upstream's check that exclude does not
// remove everything match selects. Like upstream it only compares
// identical any filters, or the inline (legacy) forms field by field.
func validateMatchExcludeConflict(m, ex *api.MatchResources, path *field.Path) field.ErrorList {
	conflict := field.ErrorList{field.Invalid(path, field.OmitValueType{}, msgEmptySet)}
	if len(ex.All) > 0 || len(m.All) > 0 {
		return nil
	}
	if len(m.Any) > 0 && len(ex.Any) > 0 {
		for i := range m.Any {
			for j := range ex.Any {
				if reflect.DeepEqual(m.Any[i], ex.Any[j]) {
					return conflict
				}
			}
		}
		return nil
	}
	if isZeroBlock(ex) {
		return nil
	}
	if len(ex.Roles) > 0 && (len(m.Roles) == 0 || !hasAll(ex.Roles, m.Roles)) {
		return nil
	}
	if len(ex.ClusterRoles) > 0 && (len(m.ClusterRoles) == 0 || !hasAll(ex.ClusterRoles, m.ClusterRoles)) {
		return nil
	}
	if len(ex.Subjects) > 0 {
		if len(m.Subjects) == 0 || !hasAll(jsonStrings(ex.Subjects), jsonStrings(m.Subjects)) {
			return nil
		}
	}
	if ex.Name != "" && !wildcard.Match(ex.Name, m.Name) {
		return nil
	}
	if len(ex.Names) > 0 {
		if len(m.Names) == 0 {
			return nil
		}
		for _, mn := range m.Names {
			for _, en := range ex.Names {
				if wildcard.Match(en, mn) {
					return conflict
				}
			}
		}
		return nil
	}
	if len(ex.Namespaces) > 0 && (len(m.Namespaces) == 0 || !hasAll(ex.Namespaces, m.Namespaces)) {
		return nil
	}
	if len(ex.Kinds) > 0 && (len(m.Kinds) == 0 || !hasAll(ex.Kinds, m.Kinds)) {
		return nil
	}
	if !selectorsCovered(m.Selector, ex.Selector) || !selectorsCovered(m.NamespaceSelector, ex.NamespaceSelector) {
		return nil
	}
	if (m.Selector == nil) != (ex.Selector == nil) || (m.NamespaceSelector == nil) != (ex.NamespaceSelector == nil) {
		return nil
	}
	if m.Annotations != nil && ex.Annotations != nil && !reflect.DeepEqual(m.Annotations, ex.Annotations) {
		return nil
	}
	if (m.Annotations == nil) != (ex.Annotations == nil) {
		return nil
	}
	return conflict
}

// selectorsCovered reports false when, both selectors being set, the
// exclude selector does not repeat every requirement of the match selector
// (upstream then considers the sets distinct).
func selectorsCovered(m, ex *metav1.LabelSelector) bool {
	if m == nil || ex == nil {
		return true
	}
	if len(ex.MatchExpressions) > 0 {
		if len(m.MatchExpressions) == 0 || !hasAll(jsonStrings(ex.MatchExpressions), jsonStrings(m.MatchExpressions)) {
			return false
		}
	}
	if len(ex.MatchLabels) > 0 {
		if len(m.MatchLabels) == 0 {
			return false
		}
		for k, v := range m.MatchLabels {
			if ex.MatchLabels[k] != v {
				return false
			}
		}
	}
	return true
}

func isZeroBlock(m *api.MatchResources) bool {
	return len(m.Any) == 0 && len(m.All) == 0 && m.UserInfo.IsEmpty() && m.ResourceDescription.IsEmpty()
}

// hasAll reports whether every element of want is in set.
func hasAll(set, want []string) bool {
	in := make(map[string]bool, len(set))
	for _, s := range set {
		in[s] = true
	}
	for _, w := range want {
		if !in[w] {
			return false
		}
	}
	return true
}

func jsonStrings[T any](in []T) []string {
	out := make([]string, len(in))
	for i := range in {
		b, _ := json.Marshal(in[i])
		out[i] = string(b)
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
