package autogen

import (
	"errors"
	"fmt"
	"github.com/gavelpolicy/gavel/internal/policykey"
	"reflect"
	"sort"
	"strings"

	"github.com/gavelpolicy/gavel/api"
)

// ControllersAnnotation is the policy annotation that controls autogen: a
// comma separated list of controller kinds, or "none".
const ControllersAnnotation = "pod-policies.kyverno.io/autogen-controllers"

// Name prefixes of generated rules.
const (
	// Prefix starts the name of every generated rule.
	Prefix = "autogen-"
	// CronJobPrefix starts the name of a rule generated for CronJob.
	CronJobPrefix = "autogen-cronjob-"
)

// maxRuleName is the length generated rule names are cut to.
const maxRuleName = 63

// Controller kinds known to autogen.
const (
	kindPod     = "Pod"
	kindCronJob = "CronJob"
	valueAll    = "all"
	valueNone   = "none"
)

// podControllers are the controllers autogen targets by default.
var podControllers = []string{"CronJob", "DaemonSet", "Deployment", "Job", "ReplicaSet", "ReplicationController", "StatefulSet"}

// templateControllers are the controllers with a Pod template at
// spec.template, in the order upstream expands the value "all".
var templateControllers = []string{"DaemonSet", "Deployment", "Job", "StatefulSet", "ReplicaSet", "ReplicationController"}

// podOrControllerKinds are the bare kind names that make autogen "needed".
var podOrControllerKinds = map[string]bool{
	"Pod": true, "CronJob": true, "DaemonSet": true, "Deployment": true, "Job": true,
	"ReplicaSet": true, "ReplicationController": true, "StatefulSet": true,
}

// Error reports a generated rule that could not be built (its free-form
// bodies hold values that have no JSON form, such as NaN). Rules skips such
// rules, as upstream does; Expand reports them.
type Error struct {
	// Policy is the policy name ("<namespace>/<name>" for a Policy).
	Policy string
	// Rule is the name of the rule being generated.
	Rule string
	// Path locates the failing part of the rule ("spec.rules[2]").
	Path string
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("autogen: policy %q, %s: rule %q: %v", e.Policy, e.Path, e.Rule, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Original reports whether ruleName is the name of a generated rule and, if
// so, the name of the rule it was generated from ("autogen-cronjob-x" and
// "autogen-x" both give "x"). The original name cannot be recovered when the
// generated name was cut to 63 bytes; the cut name is returned then.
func Original(ruleName string) (string, bool) {
	if s, ok := strings.CutPrefix(ruleName, CronJobPrefix); ok {
		return s, true
	}
	if s, ok := strings.CutPrefix(ruleName, Prefix); ok {
		return s, true
	}
	return ruleName, false
}

// Controllers returns the controller kinds (bare names, sorted) that rules
// are generated for, given the policy's annotations and spec, or nil when
// autogen is off for the policy. Without the annotation every Pod
// controller is returned. With it, as upstream: "none" turns autogen off;
// otherwise the listed kinds among DaemonSet, Deployment, Job, ReplicaSet,
// ReplicationController and StatefulSet are used (any other listed kind,
// such as a custom Pod controller, is only used when none of those is
// listed), and CronJob is added when an entry contains "CronJob" or "all".
// The annotation value is split on commas without trimming spaces.
//
// The result is the policy-wide decision; an individual rule is only
// expanded when it matches Pods (see the package documentation).
func Controllers(annotations map[string]string, spec *api.Spec) []string {
	if spec == nil {
		return nil
	}
	pl, ok := newPlan(annotations, spec)
	if !ok {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, k := range pl.podKinds {
		if k != "" && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	if pl.cronJob && !seen[kindCronJob] {
		out = append(out, kindCronJob)
	}
	sort.Strings(out)
	return out
}

// Rules returns the policy's rules followed by the generated ones, in
// upstream's order: the policy's rules first, then for each of them its
// "autogen-" rule and its "autogen-cronjob-" rule. When rules are generated,
// policy rules whose names already start with "autogen-" are left out (they
// are stale copies of generated rules); when none is generated the policy's
// rules are returned as they are. The policy is never modified; the returned
// slice is new, and policy rules in it share their bodies with the policy.
// Rules that cannot be generated (see Error) are skipped.
func Rules(p api.ClassicPolicy) []api.Rule {
	rules, _ := Expand(p)
	return rules
}

// Expand is Rules that also reports, as a *Error (several joined with
// errors.Join), the generated rules it had to skip.
func Expand(p api.ClassicPolicy) ([]api.Rule, error) {
	if p == nil || isNilPointer(p) {
		return nil, nil
	}
	spec := p.GetSpec()
	if spec == nil {
		return nil, nil
	}
	original := append([]api.Rule(nil), spec.Rules...)
	pl, ok := newPlan(p.GetAnnotations(), spec)
	if !ok {
		return original, nil
	}
	var generated []api.Rule
	var errs []error
	for i := range spec.Rules {
		src := &spec.Rules[i]
		for _, g := range pl.generate(src) {
			r, err := finish(g.rule, g.cronJob)
			if err != nil {
				errs = append(errs, &Error{Policy: policykey.Key(p), Rule: g.rule.Name,
					Path: fmt.Sprintf("spec.rules[%d]", i), Err: err})
				continue
			}
			generated = append(generated, r)
		}
	}
	err := errors.Join(errs...)
	if len(generated) == 0 {
		return original, err
	}
	out := make([]api.Rule, 0, len(spec.Rules)+len(generated))
	for _, r := range spec.Rules {
		if !strings.HasPrefix(r.Name, Prefix) {
			out = append(out, r)
		}
	}
	return append(out, generated...), err
}

func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// plan is the policy-wide autogen decision.
type plan struct {
	// requested is the requested controller list, sorted, joined by commas.
	requested string
	// podControllers is the controller list handed to the pod-controller
	// generation, CronJob removed, sorted, joined by commas ("" for none).
	podControllers string
	// podKinds are the kinds the "autogen-" rules match (bare names).
	podKinds []string
	// cronJob tells whether "autogen-cronjob-" rules are generated.
	cronJob bool
}

// newPlan decides whether and for which controllers the policy is expanded;
// ok is false when nothing is generated.
func newPlan(annotations map[string]string, spec *api.Spec) (plan, bool) {
	if !canAutoGen(spec) {
		return plan{}, false
	}
	var requested []string
	if value, ok := annotations[ControllersAnnotation]; ok {
		requested = dedupSorted(strings.Split(value, ","))
	} else {
		requested = podControllers
	}
	if len(requested) == 1 && requested[0] == valueNone {
		return plan{}, false
	}
	pl := plan{requested: strings.Join(requested, ",")}
	stripped := make([]string, 0, len(requested))
	for _, c := range requested {
		if c != kindCronJob {
			stripped = append(stripped, c)
		}
		if strings.Contains(c, kindCronJob) || strings.Contains(c, valueAll) {
			pl.cronJob = true
		}
	}
	pl.podControllers = strings.Join(stripped, ",")
	if pl.podControllers != "" {
		pl.podKinds = controllerKinds(pl.podControllers)
	}
	if pl.podControllers == "" && !pl.cronJob {
		return plan{}, false
	}
	return pl, true
}

// controllerKinds resolves a (non-empty) comma separated controller list the
// way upstream does: "all" is every template controller; otherwise the known
// template controllers listed win, and only when there is none is the list
// used as it is (custom controllers). The result is sorted.
func controllerKinds(controllers string) []string {
	if controllers == valueAll {
		return sortedCopy(templateControllers)
	}
	parts := sortedCopy(strings.Split(controllers, ","))
	if controllers == valueNone {
		return parts
	}
	var known []string
	for _, c := range parts {
		if isTemplateController(c) {
			known = append(known, c)
		}
	}
	if len(known) > 0 {
		return known
	}
	return parts
}

func isTemplateController(kind string) bool {
	for _, c := range templateControllers {
		if c == kind {
			return true
		}
	}
	return false
}

// canAutoGen is upstream's policy-wide check.
func canAutoGen(spec *api.Spec) bool {
	needed := false
	for i := range spec.Rules {
		r := &spec.Rules[i]
		if r.Generation != nil && !reflect.DeepEqual(*r.Generation, api.Generation{}) {
			return false
		}
		if m := r.Mutation; m != nil {
			if m.PatchesJSON6902 != "" {
				return false
			}
			for _, fe := range m.ForEachMutation {
				if fe.PatchesJSON6902 != "" {
					return false
				}
			}
		}
		if !supportsMatch(&needed, &r.MatchResources) {
			return false
		}
		if r.ExcludeResources != nil && !supportsMatch(&needed, r.ExcludeResources) {
			return false
		}
	}
	return needed
}

func supportsMatch(needed *bool, m *api.MatchResources) bool {
	if !supportsResources(needed, &m.ResourceDescription) {
		return false
	}
	for i := range m.Any {
		if !supportsResources(needed, &m.Any[i].ResourceDescription) {
			return false
		}
	}
	for i := range m.All {
		if !supportsResources(needed, &m.All[i].ResourceDescription) {
			return false
		}
	}
	return true
}

func supportsResources(needed *bool, rd *api.ResourceDescription) bool {
	if rd.Name != "" || len(rd.Names) > 0 || rd.Selector != nil || rd.Annotations != nil {
		return false
	}
	if len(rd.Kinds) > 1 && containsKind(rd.Kinds, kindPod) {
		return false
	}
	for _, k := range rd.Kinds {
		if podOrControllerKinds[k] {
			*needed = true
		}
	}
	return true
}

func dedupSorted(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := make([]string, 0, len(in))
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

func sortedCopy(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}
