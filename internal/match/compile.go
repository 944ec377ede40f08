package match

import (
	"fmt"

	"github.com/gavelpolicy/gavel/api"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Option configures Compile.
type Option func(*options)

type options struct {
	background   bool
	namespaced   bool
	clusterKinds map[string]bool
}

// Background declares that the policy runs in background mode (upstream's
// spec.background, true by default there). Compile then rejects what upstream
// rejects for background policies: the "*" kind and user criteria (roles,
// clusterRoles, subjects) in match or exclude. Without this option these
// checks are skipped.
func Background(enabled bool) Option {
	return func(o *options) { o.background = enabled }
}

// Namespaced declares that the rule belongs to a namespaced Policy: filtering
// on namespaces is then forbidden, and so are the kinds given to
// ClusterScopedKinds.
func Namespaced(namespaced bool) Option {
	return func(o *options) { o.namespaced = namespaced }
}

// ClusterScopedKinds lists the kind selectors (as written in policies, for
// example "Namespace" or "rbac.authorization.k8s.io/v1/ClusterRole") that a
// namespaced Policy may not match. Upstream learns them from API discovery.
func ClusterScopedKinds(kinds ...string) Option {
	return func(o *options) {
		if o.clusterKinds == nil {
			o.clusterKinds = map[string]bool{}
		}
		for _, k := range kinds {
			o.clusterKinds[k] = true
		}
	}
}

// blockMode tells how the filters of a match or exclude block combine.
type blockMode uint8

const (
	modeLegacy blockMode = iota // resources/subjects/roles directly under match
	modeAny
	modeAll
)

type block struct {
	mode    blockMode
	filters []filter // exactly one in legacy mode
}

// Rule is the compiled match and exclude blocks of one policy rule. It is
// immutable and safe for concurrent use.
type Rule struct {
	match   block
	exclude block
	kinds   []KindSelector
	// kindsOnly: see KindsOnly
	kindsOnly bool
}

// KindsOnly reports whether the rule's outcome depends on nothing but the
// group, version, kind and subresource of the resource: every filter of
// its match block names kinds and nothing else (no operations, names,
// namespaces, annotations, selectors or user criteria), they combine with
// any (or there is one), and its exclude block has no criteria at all.
// For such a rule, Matches(res, req) is true exactly when one of Kinds()
// selects res (KindSelector.Matches), whatever the request, and never
// fails: a caller that already knows that may skip Matches.
func (r *Rule) KindsOnly() bool { return r.kindsOnly }

// computeKindsOnly works out KindsOnly at compile time.
func (r *Rule) computeKindsOnly() bool {
	if r.match.mode == modeAll && len(r.match.filters) != 1 {
		return false
	}
	if len(r.match.filters) == 0 {
		return false
	}
	for i := range r.match.filters {
		f := &r.match.filters[i]
		if len(f.kinds) == 0 || f.ops != 0 || f.hasName || len(f.names) > 0 || len(f.namespaces) > 0 ||
			len(f.annotations) > 0 || f.selector != nil || f.nsSelector != nil || !f.userEmpty {
			return false
		}
	}
	// an exclude filter without criteria is skipped (any), ends the block
	// (all) or is the block (inline): none of them checks anything
	for i := range r.exclude.filters {
		f := &r.exclude.filters[i]
		if !f.descEmpty || !f.userEmpty {
			return false
		}
	}
	return true
}

// Filter is one compiled match (or exclude) block evaluated as upstream
// evaluates a PolicyException's blocks. It is immutable and safe for
// concurrent use.
type Filter struct {
	block block
}

// Compile validates and compiles one rule's match and (optional) exclude
// blocks. Errors carry k8s field paths under fldPath, the rule's path (for
// example spec.rules[0]): spec.rules[0].match.any[1].resources.kinds[0].
//
// The checks are those upstream applies to match and exclude blocks when it
// validates a policy: no variables, any and all not together, any/all not
// together with inline resources, every match filter has resources with at
// least one kind, kinds are well formed, name and names not together,
// selectors are valid and a selector is not empty, subjects and roles are
// well formed, operations are CREATE, UPDATE, DELETE or CONNECT, exclude does
// not cancel match entirely ("Rule is matching an empty set"), plus the
// background and namespaced checks enabled by options.
func Compile(match api.MatchResources, exclude *api.MatchResources, fldPath *field.Path, opts ...Option) (*Rule, field.ErrorList) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if fldPath == nil {
		fldPath = field.NewPath("rule")
	}
	matchPath := fldPath.Child("match")
	excludePath := fldPath.Child("exclude")
	var ex api.MatchResources
	if exclude != nil {
		ex = *exclude
	}

	var errs field.ErrorList
	errs = append(errs, checkVariables(&match, matchPath, "match")...)
	errs = append(errs, checkVariables(&ex, excludePath, "exclude")...)
	errs = append(errs, validateMatchResources(&match, matchPath, &o)...)
	errs = append(errs, validateMatchResources(&ex, excludePath, &o)...)
	errs = append(errs, validateMatchFilters(&match, matchPath)...)
	errs = append(errs, validateInlineMix(&ex, excludePath)...)
	if o.background {
		errs = append(errs, validateBackground(&match, matchPath)...)
		errs = append(errs, validateBackground(&ex, excludePath)...)
	}
	errs = append(errs, validateKindWildcards(&match, matchPath, &o)...)
	errs = append(errs, validateKindWildcards(&ex, excludePath, &o)...)
	errs = append(errs, validateMatchExcludeConflict(&match, &ex, fldPath)...)

	mb, berrs := compileBlock(&match, matchPath)
	errs = append(errs, berrs...)
	eb, berrs := compileBlock(&ex, excludePath)
	errs = append(errs, berrs...)
	if len(errs) > 0 {
		return nil, dedupErrors(errs)
	}
	r := &Rule{match: mb, exclude: eb}
	seen := map[KindSelector]bool{}
	for _, f := range filtersOf(&match) {
		for _, k := range f.ResourceDescription.Kinds {
			ks := ParseKindSelector(k)
			if !seen[ks] {
				seen[ks] = true
				r.kinds = append(r.kinds, ks)
			}
		}
	}
	r.kindsOnly = r.computeKindsOnly()
	return r, nil
}

// CompileFilter validates and compiles one block alone, with the semantics
// upstream gives to a PolicyException's match: only any and all are
// supported (inline resources or user criteria are rejected), a block with
// neither matches nothing, an empty filter matches nothing, user criteria are
// always checked, and a namespaceSelector is not evaluated for Namespace
// objects.
func CompileFilter(m api.MatchResources, fldPath *field.Path) (*Filter, field.ErrorList) {
	if fldPath == nil {
		fldPath = field.NewPath("match")
	}
	var o options
	var errs field.ErrorList
	errs = append(errs, validateMatchResources(&m, fldPath, &o)...)
	if !m.ResourceDescription.IsEmpty() {
		errs = append(errs, field.Forbidden(fldPath.Child("resources"), "only any and all are supported here"))
	}
	if !m.UserInfo.IsEmpty() {
		for _, name := range userInfoFields(&m.UserInfo) {
			errs = append(errs, field.Forbidden(fldPath.Child(name), "only any and all are supported here"))
		}
	}
	b, berrs := compileBlock(&m, fldPath)
	errs = append(errs, berrs...)
	if len(errs) > 0 {
		return nil, dedupErrors(errs)
	}
	return &Filter{block: b}, nil
}

// Kinds returns the kind selectors of the match block, parsed and without
// duplicates, in order of appearance (for indexing rules by kind). The
// returned slice is a copy.
func (r *Rule) Kinds() []KindSelector {
	return append([]KindSelector(nil), r.kinds...)
}

// filtersOf lists the filters of a block: any, all, or the inline one.
func filtersOf(m *api.MatchResources) []api.ResourceFilter {
	switch {
	case len(m.Any) > 0:
		return m.Any
	case len(m.All) > 0:
		return m.All
	default:
		return []api.ResourceFilter{{UserInfo: m.UserInfo, ResourceDescription: m.ResourceDescription}}
	}
}

// resourcePaths returns, for each filter of filtersOf, the path of its
// resources block.
func resourcePaths(m *api.MatchResources, path *field.Path) []*field.Path {
	n := len(filtersOf(m))
	out := make([]*field.Path, n)
	for i := 0; i < n; i++ {
		switch {
		case len(m.Any) > 0:
			out[i] = path.Child("any").Index(i).Child("resources")
		case len(m.All) > 0:
			out[i] = path.Child("all").Index(i).Child("resources")
		default:
			out[i] = path.Child("resources")
		}
	}
	return out
}

func compileBlock(m *api.MatchResources, path *field.Path) (block, field.ErrorList) {
	var b block
	switch {
	case len(m.Any) > 0:
		b.mode = modeAny
	case len(m.All) > 0:
		b.mode = modeAll
	default:
		b.mode = modeLegacy
	}
	fs := filtersOf(m)
	rps := resourcePaths(m, path)
	var errs field.ErrorList
	b.filters = make([]filter, len(fs))
	for i := range fs {
		f, ferrs := compileFilter(&fs[i], rps[i])
		errs = append(errs, ferrs...)
		b.filters[i] = f
	}
	return b, errs
}

// filter is one compiled resource filter (resources plus user criteria).
type filter struct {
	ops         uint8 // 0: no operations filter
	kinds       []kindMatcher
	kindStar    bool // "*" is one of the kinds
	kindReason  string
	hasName     bool
	name        pattern
	names       []pattern
	namespaces  []pattern
	annotations []annotationPattern
	selector    *selector
	nsSelector  *selector

	roles, clusterRoles []string
	subjects            []subjectMatcher

	// descEmpty: no resource criterion at all (upstream's DeepEqual with the
	// zero ResourceDescription, used by rules); descEmptyNoOps ignores
	// operations (upstream's IsEmpty, used by exceptions).
	descEmpty, descEmptyNoOps bool
	userEmpty                 bool
}

type annotationPattern struct {
	key, value pattern
}

type subjectMatcher struct {
	kind    string
	pattern pattern // user name, group name or service account user name
}

func compileFilter(rf *api.ResourceFilter, resPath *field.Path) (filter, field.ErrorList) {
	rd := &rf.ResourceDescription
	ui := &rf.UserInfo
	f := filter{
		hasName:    rd.Name != "",
		name:       newPattern(rd.Name),
		names:      newPatterns(rd.Names),
		namespaces: newPatterns(rd.Namespaces),
		userEmpty:  ui.IsEmpty(),
		descEmpty:  rd.IsEmpty(),
		descEmptyNoOps: len(rd.Kinds) == 0 && rd.Name == "" && len(rd.Names) == 0 && len(rd.Namespaces) == 0 &&
			len(rd.Annotations) == 0 && rd.Selector == nil && rd.NamespaceSelector == nil,
		roles:        append([]string(nil), ui.Roles...),
		clusterRoles: append([]string(nil), ui.ClusterRoles...),
	}
	var errs field.ErrorList
	for i, op := range rd.Operations {
		bit := operationBit(string(op))
		if op == "" || bit == 0 {
			errs = append(errs, field.NotSupported(resPath.Child("operations").Index(i), string(op),
				[]string{string(api.Create), string(api.Update), string(api.Delete), string(api.Connect)}))
			continue
		}
		f.ops |= bit
	}
	if len(rd.Kinds) > 0 {
		f.kinds = make([]kindMatcher, len(rd.Kinds))
		for i, k := range rd.Kinds {
			f.kinds[i] = newKindMatcher(ParseKindSelector(k))
			if k == "*" {
				f.kindStar = true
			}
		}
		f.kindReason = fmt.Sprintf("kind does not match %v", rd.Kinds)
	}
	if len(rd.Annotations) > 0 {
		keys := sortedKeys(rd.Annotations)
		f.annotations = make([]annotationPattern, len(keys))
		for i, k := range keys {
			f.annotations[i] = annotationPattern{key: newPattern(k), value: newPattern(rd.Annotations[k])}
		}
	}
	if rd.Selector != nil {
		s, serrs := compileSelector(rd.Selector, resPath.Child("selector"))
		errs = append(errs, serrs...)
		f.selector = s
	}
	if rd.NamespaceSelector != nil {
		s, serrs := compileSelector(rd.NamespaceSelector, resPath.Child("namespaceSelector"))
		errs = append(errs, serrs...)
		f.nsSelector = s
	}
	for _, s := range ui.Subjects {
		sm := subjectMatcher{kind: s.Kind}
		if s.Kind == "ServiceAccount" {
			sm.pattern = newPattern("system:serviceaccount:" + s.Namespace + ":" + s.Name)
		} else {
			sm.pattern = newPattern(s.Name)
		}
		f.subjects = append(f.subjects, sm)
	}
	return f, errs
}

func dedupErrors(errs field.ErrorList) field.ErrorList {
	seen := map[string]bool{}
	out := errs[:0:0]
	for _, e := range errs {
		s := e.Error()
		if seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, e)
	}
	return out
}

func userInfoFields(u *api.UserInfo) []string {
	var out []string
	if len(u.Roles) > 0 {
		out = append(out, "roles")
	}
	if len(u.ClusterRoles) > 0 {
		out = append(out, "clusterRoles")
	}
	if len(u.Subjects) > 0 {
		out = append(out, "subjects")
	}
	return out
}

func joinReason(prefix string, err error) string {
	return prefix + err.Error()
}
