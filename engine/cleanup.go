package engine

import (
	"encoding/json"
	"fmt"
	"github.com/gavelpolicy/gavel/internal/policykey"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/match"
)

// cleanupPolicy is the body of a CleanupPolicy or ClusterCleanupPolicy.
type cleanupPolicy struct {
	namespace string
	match     *match.Rule
	context   []*contextEntry
	conds     *condSet
	del       deletion
	// needsImages is set when the conditions or the context read images
	needsImages bool
	kinds       []string
}

// compileCleanupPolicy compiles a cleanup policy with upstream's checks:
// no configMap or imageRegistry context entry, no user information in
// match and exclude, the checks of a rule's match block (a namespaced
// policy neither filters namespaces nor selects cluster-wide kinds), a
// schedule in cron format.
func (e *Engine) compileCleanupPolicy(p *api.CleanupPolicy) (*Policy, error) {
	spec := &p.Spec
	cp := &Policy{src: p, kind: api.KindOf(p), key: policykey.Key(p), annotations: p.GetAnnotations(),
		background: true, admission: false, failurePolicy: api.Fail, failureAction: api.Audit, action: api.Audit,
		types: typeBit(Deletion)}
	path := field.NewPath("spec")
	b := &cleanupPolicy{}
	if api.IsNamespaced(p) {
		b.namespace = p.GetNamespace()
	}
	var errs field.ErrorList
	for i, c := range spec.Context {
		switch {
		case c.ImageRegistry != nil:
			errs = append(errs, field.Invalid(path.Child("context").Index(i), c.Name, "ImageRegistry is not allowed in CleanUp Policy"))
		case c.ConfigMap != nil:
			errs = append(errs, field.Invalid(path.Child("context").Index(i), c.Name, "ConfigMap is not allowed in CleanUp Policy"))
		}
	}
	m := api.MatchResources{Any: spec.MatchResources.Any, All: spec.MatchResources.All}
	errs = append(errs, noUserInfo(&m, path.Child("match"))...)
	var ex *api.MatchResources
	if spec.ExcludeResources != nil {
		x := api.MatchResources{Any: spec.ExcludeResources.Any, All: spec.ExcludeResources.All}
		ex = &x
		errs = append(errs, noUserInfo(ex, path.Child("exclude"))...)
	}
	var cluster []string
	if b.namespace != "" {
		cluster = clusterKindsOf(&m)
	}
	mr, merrs := match.Compile(m, ex, path, match.Namespaced(b.namespace != ""), match.ClusterScopedKinds(cluster...))
	b.match = mr
	errs = append(errs, merrs...)
	b.context, errs = e.compileContext(spec.Context, path.Child("context"), errs)
	if spec.Conditions != nil {
		var raw any
		if err := remarshal(spec.Conditions, &raw); err != nil {
			errs = append(errs, field.Invalid(path.Child("conditions"), "", err.Error()))
		} else {
			b.conds, errs = e.compileConditions(raw, path.Child("conditions"), errs)
		}
	}
	var derrs field.ErrorList
	b.del, derrs = compileDeletion(spec.Schedule, spec.DeletionPropagationPolicy, path, "cleanupPolicy")
	errs = append(errs, derrs...)
	if raw, err := json.Marshal([]any{spec.Conditions, spec.Context}); err == nil {
		b.needsImages = strings.Contains(string(raw), "images")
	}
	for _, f := range append(append(api.ResourceFilters(nil), m.Any...), m.All...) {
		b.kinds = append(b.kinds, f.ResourceDescription.Kinds...)
	}
	if len(errs) > 0 {
		return nil, &CompileError{Policy: cp.key, Errs: errs}
	}
	cp.body = b
	return cp, nil
}

// noUserInfo refuses user information in a cleanup policy's block: there
// is no request, hence no user.
func noUserInfo(m *api.MatchResources, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, part := range []struct {
		name    string
		filters api.ResourceFilters
	}{{"any", m.Any}, {"all", m.All}} {
		for i, f := range part.filters {
			p := path.Child(part.name).Index(i)
			if len(f.Roles) > 0 {
				errs = append(errs, field.Forbidden(p.Child("roles"), "Usage of user info is forbidden"))
			}
			if len(f.ClusterRoles) > 0 {
				errs = append(errs, field.Forbidden(p.Child("clusterRoles"), "Usage of user info is forbidden"))
			}
			if len(f.Subjects) > 0 {
				errs = append(errs, field.Forbidden(p.Child("subjects"), "Usage of user info is forbidden"))
			}
		}
	}
	return errs
}

// clusterKindsOf returns the kinds of a block that are cluster-wide
// (built-in kinds whose scope the engine knows).
func clusterKindsOf(m *api.MatchResources) []string {
	var out []string
	for _, f := range append(append(api.ResourceFilters(nil), m.Any...), m.All...) {
		for _, k := range f.ResourceDescription.Kinds {
			if kindScope(match.ParseKindSelector(k).Kind) == scopeCluster {
				out = append(out, k)
			}
		}
	}
	return out
}

func (b *cleanupPolicy) validate(_ *reqState, _ *Policy, out []PolicyResult) []PolicyResult {
	return out
}

func (b *cleanupPolicy) jsonMode() bool { return false }

func (b *cleanupPolicy) deletionSpec() *deletion { return &b.del }

func (b *cleanupPolicy) targets() []CleanupTarget {
	var out []CleanupTarget
	seen := map[CleanupTarget]bool{}
	for _, k := range b.kinds {
		ks := match.ParseKindSelector(k)
		if ks.Subresource != "" {
			continue
		}
		t := CleanupTarget{Group: ks.Group, Version: ks.Version, Kind: ks.Kind}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// cleanup evaluates the policy on an existing object as upstream's
// cleanup controller: the object must be in a CleanupPolicy's namespace,
// selected by match and not by exclude, and the conditions must hold
// (with the object as target) for it to be deleted (pass); otherwise the
// result is a fail, as upstream's CLI reports every object.
func (b *cleanupPolicy) cleanup(rs *reqState, p *Policy) {
	if b.namespace != "" && rs.matchRes.Namespace != b.namespace {
		deletionResult(rs, p, StatusFail, "resource did not match", nil)
		return
	}
	ok, _, err := b.match.Matches(rs.matchRes, rs.matchReq)
	switch {
	case err != nil:
		deletionResult(rs, p, StatusError, err.Error(), err)
		return
	case !ok:
		deletionResult(rs, p, StatusFail, "resource did not match", nil)
		return
	}
	if b.conds == nil {
		deletionResult(rs, p, StatusPass, "resource matched", nil)
		return
	}
	sc := rs.newScope().child()
	sc.setTarget(rs.obj)
	if err := sc.loadContext(b.context); err != nil {
		err = fmt.Errorf("failed to load context: %w", err)
		deletionResult(rs, p, StatusError, err.Error(), err)
		return
	}
	ok, _, err = sc.checkConditions(b.conds)
	switch {
	case err != nil:
		deletionResult(rs, p, StatusError, err.Error(), err)
	case ok:
		deletionResult(rs, p, StatusPass, "resource matched", nil)
	default:
		deletionResult(rs, p, StatusFail, "resource did not match", nil)
	}
}
