package autogen

import (
	"encoding/json"
	"strings"

	"github.com/gavelpolicy/gavel/api"
)

// target describes where a controller keeps its Pod template.
type target struct {
	// key is the field under spec that wraps patterns and patches.
	key string
	// shift is inserted after the pivot of "$(...)" references in messages.
	shift string
}

var (
	templateTarget    = target{key: "template", shift: "spec/template"}
	jobTemplateTarget = target{key: "jobTemplate", shift: "spec/jobTemplate/spec/template"}
)

// gvkOf maps controller kinds to the fully qualified form generated rules use.
var gvkOf = map[string]string{
	"DaemonSet":             "apps/v1/DaemonSet",
	"Deployment":            "apps/v1/Deployment",
	"Job":                   "batch/v1/Job",
	"StatefulSet":           "apps/v1/StatefulSet",
	"ReplicaSet":            "apps/v1/ReplicaSet",
	"ReplicationController": "v1/ReplicationController",
	"CronJob":               "batch/v1/CronJob",
	"Pod":                   "v1/Pod",
}

func qualifyKinds(kinds []string) []string {
	out := make([]string, 0, len(kinds))
	for _, k := range kinds {
		if q, ok := gvkOf[k]; ok {
			out = append(out, q)
		} else {
			out = append(out, k)
		}
	}
	return out
}

// filterKinds rewrites the kinds of a list of resource filters.
type filterKinds func(filters api.ResourceFilters, kinds []string) api.ResourceFilters

// replacePodFilters gives the kinds to the filters that name Pod.
func replacePodFilters(filters api.ResourceFilters, kinds []string) api.ResourceFilters {
	out := make(api.ResourceFilters, len(filters))
	copy(out, filters)
	for i := range out {
		if containsKind(filters[i].Kinds, kindPod) {
			out[i].Kinds = kinds
		}
	}
	return out
}

// replaceAllFilters gives the kinds to every filter.
func replaceAllFilters(filters api.ResourceFilters, kinds []string) api.ResourceFilters {
	out := make(api.ResourceFilters, len(filters))
	copy(out, filters)
	for i := range out {
		out[i].Kinds = kinds
	}
	return out
}

// generated is a rule produced by generate, before its variables are moved
// to the Pod template.
type generated struct {
	rule    *api.Rule
	cronJob bool
}

// generate returns the rules generated from src: the pod-controller rule
// and the CronJob rule, each when applicable.
func (pl *plan) generate(src *api.Rule) []generated {
	var out []generated
	if r := forControllers(src, pl.podControllers, pl.podKinds); r != nil {
		out = append(out, generated{rule: r})
	}
	if pl.cronJob {
		inner := forControllers(src, pl.requested, controllerKinds(pl.requested))
		if r := transform(ruleName("autogen-cronjob", src.Name), inner, jobTemplateTarget,
			[]string{kindCronJob}, replaceAllFilters); r != nil {
			out = append(out, generated{rule: r, cronJob: true})
		}
	}
	return out
}

// forControllers is the pod-controller expansion of one rule, or nil when
// the rule is not expanded.
func forControllers(src *api.Rule, controllers string, kinds []string) *api.Rule {
	if strings.HasPrefix(src.Name, Prefix) || controllers == "" {
		return nil
	}
	if !containsKind(matchKinds(&src.MatchResources), kindPod) {
		return nil
	}
	if ex := src.ExcludeResources; ex != nil {
		if ek := matchKinds(ex); len(ek) != 0 && !containsKind(ek, kindPod) {
			return nil
		}
	}
	return transform(ruleName("autogen", src.Name), src, templateTarget, kinds, replacePodFilters)
}

// matchKinds lists the kinds of a match or exclude block: the legacy
// resources first, then all, then any.
func matchKinds(m *api.MatchResources) []string {
	kinds := append([]string(nil), m.Kinds...)
	for _, f := range m.All {
		kinds = append(kinds, f.Kinds...)
	}
	for _, f := range m.Any {
		kinds = append(kinds, f.Kinds...)
	}
	return kinds
}

func ruleName(prefix, name string) string {
	name = prefix + "-" + name
	if len(name) > maxRuleName {
		name = name[:maxRuleName]
	}
	return name
}

// wrap nests v under spec.<key>.
func wrap(key string, v any) any {
	return map[string]any{"spec": map[string]any{key: v}}
}

// transform builds a generated rule from src: new name, kinds, and the
// rule's action moved under the controller's template. It returns nil when
// src has no action autogen knows. src is not modified; the result may share
// unmodified values with it.
func transform(name string, src *api.Rule, t target, kinds []string, rewrite filterKinds) *api.Rule {
	if src == nil {
		return nil
	}
	r := *src
	r.Name = name
	retarget(&r, qualifyKinds(kinds), rewrite)
	if mu := r.Mutation; mu != nil {
		if nm := transformMutation(mu, t); nm != nil {
			r.Mutation = nm
			return &r
		}
	}
	if v := r.Validation; v != nil {
		if nv := transformValidation(v, t); nv != nil {
			r.Validation = nv
			return &r
		}
	}
	if r.VerifyImages != nil {
		return &r
	}
	return nil
}

// retarget points the match and exclude blocks of r at the qualified
// controller kinds: their any or all filters through rewrite, else their
// kinds (an exclude block's only when it lists some).
func retarget(r *api.Rule, qualified []string, rewrite filterKinds) {
	m := r.MatchResources
	switch {
	case len(m.Any) > 0:
		m.Any = rewrite(m.Any, qualified)
	case len(m.All) > 0:
		m.All = rewrite(m.All, qualified)
	default:
		m.Kinds = qualified
	}
	r.MatchResources = m
	if r.ExcludeResources != nil {
		ex := *r.ExcludeResources
		switch {
		case len(ex.Any) > 0:
			ex.Any = rewrite(ex.Any, qualified)
		case len(ex.All) > 0:
			ex.All = rewrite(ex.All, qualified)
		case len(ex.Kinds) != 0:
			ex.Kinds = qualified
		}
		r.ExcludeResources = &ex
	}
}

// transformMutation moves a mutation's patches under the controller's
// template, or returns nil when it has no strategic merge patch.
func transformMutation(mu *api.Mutation, t target) *api.Mutation {
	if mu.PatchStrategicMerge != nil {
		return &api.Mutation{PatchStrategicMerge: wrap(t.key, mu.PatchStrategicMerge)}
	}
	if len(mu.ForEachMutation) == 0 {
		return nil
	}
	fes := make([]api.ForEachMutation, 0, len(mu.ForEachMutation))
	for _, fe := range mu.ForEachMutation {
		fes = append(fes, api.ForEachMutation{
			List:                fe.List,
			Context:             fe.Context,
			Preconditions:       fe.Preconditions,
			PatchStrategicMerge: wrap(t.key, fe.PatchStrategicMerge),
		})
	}
	return &api.Mutation{ForEachMutation: fes}
}

// transformValidation moves a validation under the controller's template:
// its pattern, patterns or assertion, and the references of its message.
// A CEL validation is kept as it is. It returns nil when v has no check
// autogen knows.
func transformValidation(v *api.Validation, t target) *api.Validation {
	base := func(pivot string) *api.Validation {
		return &api.Validation{
			Message:                          shiftReferences(v.Message, t.shift, pivot),
			FailureAction:                    v.FailureAction,
			FailureActionOverrides:           v.FailureActionOverrides,
			ValidationFailureAction:          v.ValidationFailureAction,
			ValidationFailureActionOverrides: v.ValidationFailureActionOverrides,
			AllowExistingViolations:          v.AllowExistingViolations,
		}
	}
	switch {
	case v.Pattern != nil:
		nv := base("pattern")
		nv.Pattern = wrap(t.key, v.Pattern)
		return nv
	case v.Deny != nil:
		nv := base("deny")
		nv.Deny = v.Deny
		return nv
	case v.PodSecurity != nil:
		nv := base("podSecurity")
		nv.PodSecurity = &api.PodSecurity{
			Level:   v.PodSecurity.Level,
			Version: v.PodSecurity.Version,
			Exclude: append(make([]api.PodSecurityStandard, 0, len(v.PodSecurity.Exclude)), v.PodSecurity.Exclude...),
		}
		return nv
	case v.AnyPattern != nil:
		nv := base("anyPattern")
		var patterns []any
		for _, p := range asList(v.AnyPattern) {
			patterns = append(patterns, wrap(t.key, p))
		}
		if patterns != nil {
			nv.AnyPattern = patterns
		}
		return nv
	case len(v.ForEachValidation) > 0:
		nv := base("pattern")
		nv.ForEachValidation = append([]api.ForEachValidation(nil), v.ForEachValidation...)
		return nv
	case hasCEL(v):
		return v
	case v.Assert != nil:
		nv := *v
		nv.Assert = autogenAssertion(v.Assert, t.key)
		return &nv
	}
	return nil
}

// asList reads an anyPattern as a list, as upstream's JSON decoding into
// []interface{} does: anything that is not a list gives nil.
func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var l []any
	if json.Unmarshal(raw, &l) != nil {
		return nil
	}
	return l
}

// hasCEL reports a non-empty validate.cel block.
func hasCEL(v *api.Validation) bool {
	return v.CEL != nil
}

// autogenAssertion moves the object and oldObject trees of an assertion
// under spec.<key>.
func autogenAssertion(tree any, key string) any {
	m, ok := tree.(map[string]any)
	if !ok {
		return tree
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for _, n := range []string{"object", "oldObject"} {
		obj, ok := m[n].(map[string]any)
		if !ok {
			continue
		}
		inner := make(map[string]any, len(obj))
		for k, v := range obj {
			inner[k] = v
		}
		out[n] = wrap(key, inner)
	}
	return out
}
