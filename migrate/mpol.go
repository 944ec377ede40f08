package migrate

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	celgo "github.com/google/cel-go/cel"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	apiservercommon "k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/library"
	celmutation "k8s.io/apiserver/pkg/cel/mutation"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/autogen"
	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
)

// mutEnv is the environment of MutatingPolicy expressions: the
// ValidatingPolicy's with the patch types (Object{...}, JSONPatch) the API
// server declares for mutations.
var mutEnv = sync.OnceValues(func() (*cel.Env, error) {
	opts := append(celpolicy.EnvOptions(), cel.WithLibraries(cel.MutatingPolicyLibraries),
		cel.WithEnvOptions(apiservercommon.ResolverEnvOption(&celmutation.DynamicTypeResolver{}), library.JSONPatch()))
	return cel.NewEnv(opts...)
})

// convertMutateRules converts the mutate rules at idx into one
// MutatingPolicy. Pod rules keep the output's own Pod controller
// generation when its mutations allow it (ApplyConfigurations of the whole
// object, no variables); otherwise Kyverno's generated rules are written
// out.
func convertMutateRules(p api.ClassicPolicy, name string, idx []int, outcomes []RuleOutcome) *Output {
	plan := planAutogen(p, idx)
	saved := append([]RuleOutcome(nil), outcomes...)
	out := convertMutatePlan(p, name, plan, outcomes)
	if out != nil && plan.controllers != nil && len(plan.controllers) > 0 && !out.autogenOK {
		// the mutations cannot be generated for Pod controllers by the
		// output: Kyverno's generated rules, written out
		copy(outcomes, saved)
		plan = expandedPlan(p, idx)
		out = convertMutatePlan(p, name, plan, outcomes)
	}
	if out == nil {
		return nil
	}
	return out.Output
}

// expandedPlan is the plan of a policy's rules with Kyverno's generated
// Pod controller rules written out, the output's generation off.
func expandedPlan(p api.ClassicPolicy, idx []int) autogenPlan {
	spec := p.GetSpec()
	byName := map[string]int{}
	for _, i := range idx {
		byName[spec.Rules[i].Name] = i
	}
	plan := autogenPlan{note: "Kyverno's Pod controller rules, written out", controllers: nil}
	for _, r := range autogen.Rules(p) {
		n := r.Name
		if orig, ok := autogen.Original(n); ok {
			n = orig
		}
		i, ok := byName[n]
		if !ok || ruleType(&r) != ruleType(&spec.Rules[i]) {
			continue
		}
		plan.rules = append(plan.rules, planned{rule: r, origin: i})
	}
	return plan
}

// mutOutput is a MutatingPolicy output with whether its own Pod
// controller generation reproduces Kyverno's.
type mutOutput struct {
	*Output
	autogenOK bool
}

// convertMutatePlan converts planned mutate rules.
func convertMutatePlan(p api.ClassicPolicy, name string, plan autogenPlan, outcomes []RuleOutcome) *mutOutput {
	for attempt := 0; attempt <= len(plan.rules); attempt++ {
		out, errs := buildMutating(p, name, plan, outcomes)
		if out == nil || len(errs) == 0 {
			return out
		}
		for _, ce := range errs {
			owners := out.owners[ce.path]
			if len(owners) == 0 {
				owners = out.Rules
			}
			for _, rule := range owners {
				origin := originOf(p, rule)
				if len(outcomes[origin].Problems) == 0 {
					outcomes[origin].Problems = append(outcomes[origin].Problems, Problem{Path: fmt.Sprintf("spec.rules[%d]", origin),
						Construct: "CEL of the conversion", Detail: fmt.Sprintf("%s does not compile: %v", ce.path, ce.err)})
				}
			}
		}
		for _, r := range out.Rules {
			outcomes[originOf(p, r)].Policy = ""
		}
	}
	return nil
}

// buildMutating converts the planned rules that have no problem yet and
// checks the output's expressions.
func buildMutating(p api.ClassicPolicy, name string, plan autogenPlan, outcomes []RuleOutcome) (*mutOutput, []checkError) {
	pv := &policyVars{}
	var rules []*mrule
	failed := map[int]bool{}
	for _, pr := range plan.rules {
		if failed[pr.origin] || len(outcomes[pr.origin].Problems) > 0 {
			continue
		}
		path := fmt.Sprintf("spec.rules[%d]", pr.origin)
		r, err := convertMutateRule(p, &pr.rule, path, pv)
		if err != nil {
			failed[pr.origin] = true
			outcomes[pr.origin].Problems = append(outcomes[pr.origin].Problems, problemOf(path, err))
			continue
		}
		rules = append(rules, r)
	}
	var kept []*mrule
	for _, r := range rules {
		if !failed[originOf(p, r.name)] {
			kept = append(kept, r)
		}
	}
	rules = kept
	if len(rules) == 0 {
		return nil, nil
	}
	if first := rules[0].target; len(rules) > 1 {
		for _, r := range rules {
			if (r.target == nil) != (first == nil) || r.target != nil && r.target.expr.s != first.expr.s {
				for _, r := range rules {
					i := originOf(p, r.name)
					outcomes[i].Problems = append(outcomes[i].Problems, Problem{Path: r.path + ".mutate.targets", Construct: "mutate targets",
						Detail: "differ between the policy's rules: a MutatingPolicy mutates one set of resources"})
				}
				return nil, nil
			}
		}
	}
	mp, comments, owners, autogenOK := assembleMutating(p, name, rules, pv, plan)
	out := &mutOutput{Output: &Output{Object: mp, Type: TypeMutate, comments: comments, owners: owners, entries: pv.entries, numbers: pv.numbers(), binds: pv.binds, imageVars: pv.imageVars()}, autogenOK: autogenOK}
	seen := map[int]bool{}
	for _, r := range rules {
		origin := originOf(p, r.name)
		if !seen[origin] && len(outcomes[origin].Problems) == 0 {
			seen[origin] = true
			outcomes[origin].Policy = name
			out.Rules = append(out.Rules, outcomes[origin].Rule)
		}
	}
	errs, err := mutatingExprs(mp).check()
	if err != nil {
		errs = append(errs, checkError{path: "spec", err: err})
	}
	return out, errs
}

// asVrules views mutate rules as rules of conditions (the shared
// assembly of matchConstraints and matchConditions).
func asVrules(rules []*mrule) []*vrule {
	out := make([]*vrule, len(rules))
	for i, r := range rules {
		out[i] = &vrule{name: r.name, path: r.path, mc: r.mc, conds: r.conds}
	}
	return out
}

// optMetadataRE is an optional field of a Pod's labels or annotations.
var optMetadataRE = regexp.MustCompile(`\b(object|oldObject)\.metadata\.\?(labels|annotations)\b`)

// autogenMetadata rewrites the optional labels and annotations of a
// MutatingPolicy's expressions (object.metadata.?labels) into a form its
// autogen moves to the controllers' templates: it rewrites
// object.metadata.labels and object.metadata.annotations only.
func autogenMetadata(spec *policiesv1alpha1.MutatingPolicySpec) {
	rewrite := func(s string) string {
		return optMetadataRE.ReplaceAllString(s, "(has(${1}.metadata.${2}) ? optional.of(${1}.metadata.${2}) : optional.none())")
	}
	for i := range spec.MatchConditions {
		spec.MatchConditions[i].Expression = rewrite(spec.MatchConditions[i].Expression)
	}
	for i := range spec.Variables {
		spec.Variables[i].Expression = rewrite(spec.Variables[i].Expression)
	}
	for i := range spec.Mutations {
		if m := spec.Mutations[i].ApplyConfiguration; m != nil {
			m.Expression = rewrite(m.Expression)
		}
		if m := spec.Mutations[i].JSONPatch; m != nil {
			m.Expression = rewrite(m.Expression)
		}
	}
}

// assembleMutating builds the MutatingPolicy of a policy's mutate rules.
func assembleMutating(src api.ClassicPolicy, name string, rules []*mrule, pv *policyVars, plan autogenPlan) (*api.MutatingPolicy, map[string]string, map[string][]string, bool) {
	comments := map[string]string{}
	owners := map[string][]string{}
	mp := &api.MutatingPolicy{}
	mp.APIVersion = api.GroupPolicies + "/v1"
	mp.Kind = api.KindMutatingPolicy
	if api.IsNamespaced(src) {
		mp.Kind = api.KindNamespacedMutatingPolicy
		mp.Namespace = src.GetNamespace()
	}
	mp.Name = name
	mp.Annotations = outputAnnotations(src.GetAnnotations())
	if l := labelsOf(src); len(l) > 0 {
		mp.Labels = l
	}
	spec := &mp.Spec
	vrs := asVrules(rules)
	same := sameKinds(vrs)
	var kinds []kindRef
	var all []string
	for _, r := range rules {
		kinds = append(kinds, r.mc.kinds...)
		all = append(all, r.name)
	}
	spec.MatchConstraints = matchConstraints(kinds, operationsOf(vrs))
	comments["spec.matchConstraints"] = "the kinds and operations the rules match"
	if liftSelectors(vrs, spec.MatchConstraints) {
		comments["spec.matchConstraints"] = "the kinds, operations and selectors the rules match"
	}
	s := src.GetSpec()
	spec.FailurePolicy = failurePolicy(s)
	if eval := evaluation(s); eval != nil {
		spec.EvaluationConfiguration = &policiesv1alpha1.MutatingPolicyEvaluationConfiguration{Admission: eval.Admission, Background: eval.Background}
		comments["spec.evaluation"] = "spec.background and spec.admission"
	}
	if t := timeout(s); t != nil {
		spec.WebhookConfiguration = &policiesv1alpha1.WebhookConfiguration{TimeoutSeconds: t}
	}
	applies := false
	for _, r := range rules {
		for _, m := range r.mutations {
			applies = applies || m.apply
		}
	}
	if applies || s.UseServerSideApply {
		if spec.EvaluationConfiguration == nil {
			spec.EvaluationConfiguration = &policiesv1alpha1.MutatingPolicyEvaluationConfiguration{}
		}
		spec.EvaluationConfiguration.UseServerSideApply = true
		comments["spec.evaluation"] = "a strategic merge replaces lists without keys: server-side apply, without the guard on atomic values"
	}
	used := map[string]bool{}
	if wc := s.WebhookConfiguration; wc != nil {
		for _, c := range wc.MatchConditions {
			spec.MatchConditions = append(spec.MatchConditions, matchCondition(condName(c.Name, used), ex{s: c.Expression}))
		}
	}
	shared := len(rules) == 1 || same && sameConds(vrs)
	if shared {
		for _, c := range vrs[0].applies(false) {
			spec.MatchConditions = append(spec.MatchConditions, matchCondition(condName(c.name, used), pv.bindVariables(c.e)))
			owners[fmt.Sprintf("spec.matchConditions[%d]", len(spec.MatchConditions)-1)] = all
		}
	} else {
		var anyApplies []ex
		for _, r := range vrs {
			anyApplies = append(anyApplies, conj(r.applies(!same)))
		}
		if a := or(anyApplies...); !a.isTrue() {
			spec.MatchConditions = append(spec.MatchConditions, matchCondition(condName("a-rule-applies", used), pv.bindVariables(a)))
			owners[fmt.Sprintf("spec.matchConditions[%d]", len(spec.MatchConditions)-1)] = all
			comments[fmt.Sprintf("spec.matchConditions[%d]", len(spec.MatchConditions)-1)] = "the rules' conditions: the policy is skipped when no rule applies"
		}
	}
	autogenOK := len(pv.list) == 0
	targetsOf(rules, spec, comments)
	for _, r := range rules {
		if r.target != nil {
			autogenOK = false
		}
	}
	for i, r := range rules {
		guard := exTrue
		if !shared {
			guard = conj(vrs[i].applies(!same))
		}
		for _, m := range r.mutations {
			switch {
			case guard.isTrue():
			case m.root != nil && len(m.root.roots) > 0:
				m.expr = m.root.guarded(guard)
			case m.apply:
				m.expr = cond(guard, m.expr, ex{s: "Object{}", prec: precPrimary})
			default:
				m.expr = cond(guard, m.expr, listOf())
			}
			if !m.apply || !strings.HasPrefix(m.expr.s, "Object{") {
				autogenOK = false
			}
			spec.Mutations = append(spec.Mutations, mutationOut(m))
			key := fmt.Sprintf("spec.mutations[%d]", len(spec.Mutations)-1)
			owners[key] = []string{r.name}
			comments[key] = "rule " + r.name + ": " + m.note
		}
	}
	for _, v := range pv.list {
		spec.Variables = append(spec.Variables, varOut(v))
		owners[fmt.Sprintf("spec.variables[%d]", len(spec.Variables)-1)] = pv.users[v.name]
		if v.note != "" {
			comments[fmt.Sprintf("spec.variables[%d]", len(spec.Variables)-1)] = v.comment()
		}
	}
	if plan.controllers != nil {
		if ac := autogenConfig(plan.controllers); ac != nil {
			spec.AutogenConfiguration = &policiesv1alpha1.MutatingPolicyAutogenConfiguration{PodControllers: ac.PodControllers}
			autogenMetadata(spec)
		}
		if plan.note != "" {
			comments["spec.autogen"] = plan.note
		}
	} else if autogen.CanGenerate(spec.MatchConstraints) {
		spec.AutogenConfiguration = &policiesv1alpha1.MutatingPolicyAutogenConfiguration{
			PodControllers: &policiesv1alpha1.PodControllersGenerationConfiguration{Controllers: []string{}}}
		comments["spec.autogen"] = "the Pod controller rules are written out (or Kyverno generates none)"
	}
	for i, mc := range spec.MatchConditions {
		if _, ok := comments[fmt.Sprintf("spec.matchConditions[%d]", i)]; !ok {
			comments[fmt.Sprintf("spec.matchConditions[%d]", i)] = condComment(mc.Name)
		}
	}
	return mp, comments, owners, autogenOK
}

// targetsOf writes the existing resources the rules mutate: a rule with
// targets makes the output mutate existing resources (all its rules must
// then share the targets).
func targetsOf(rules []*mrule, spec *policiesv1alpha1.MutatingPolicySpec, comments map[string]string) {
	t := rules[0].target
	if t == nil {
		return
	}
	on := true
	if spec.EvaluationConfiguration == nil {
		spec.EvaluationConfiguration = &policiesv1alpha1.MutatingPolicyEvaluationConfiguration{}
	}
	spec.EvaluationConfiguration.MutateExistingConfiguration = &policiesv1alpha1.MutateExistingConfiguration{Enabled: &on}
	tm := &policiesv1alpha1.TargetMatchConstraints{Expression: t.expr.s}
	tm.MatchResources = *matchConstraints([]kindRef{t.kind}, []string{"CREATE", "UPDATE"})
	spec.TargetMatchConstraints = tm
	used := map[string]bool{}
	for _, c := range t.conds {
		spec.TargetMatchConditions = append(spec.TargetMatchConditions, matchCondition(condName(c.name, used), c.e))
	}
	comments["spec.targetMatchConstraints"] = "the rule's targets: the existing resources it mutates (object in the mutations; request.object is the trigger)"
}

// mutatingExprs are the expressions of a MutatingPolicy, to check.
func mutatingExprs(mp *api.MutatingPolicy) *mutExprSet {
	s := &exprSet{namespace: mp.Namespace, conditions: mp.Spec.MatchConditions, condPath: "spec.matchConditions",
		variables: mp.Spec.Variables, varPath: "spec.variables"}
	for i, m := range mp.Spec.Mutations {
		// checked with their types: an Object, a list of JSONPatch
		var e string
		switch {
		case m.ApplyConfiguration != nil:
			e = "[" + m.ApplyConfiguration.Expression + ", Object{}].size() > 0"
		case m.JSONPatch != nil:
			e = "(" + m.JSONPatch.Expression + " + [JSONPatch{op: 'test', path: '/'}]).size() > 0"
		}
		s.exprs = append(s.exprs, checkedExpr{path: fmt.Sprintf("spec.mutations[%d]", i), expr: e, kind: cel.Validation})
	}
	if t := mp.Spec.TargetMatchConstraints; t != nil && t.Expression != "" {
		s.exprs = append(s.exprs, checkedExpr{path: "spec.targetMatchConstraints", expr: t.Expression, kind: cel.Variable,
			want: celgo.MapType(celgo.StringType, celgo.AnyType)})
	}
	for i, c := range mp.Spec.TargetMatchConditions {
		s.exprs = append(s.exprs, checkedExpr{path: fmt.Sprintf("spec.targetMatchConditions[%d]", i), expr: c.Expression, kind: cel.Validation})
	}
	return &mutExprSet{s}
}

// mutExprSet checks on the mutations' environment.
type mutExprSet struct{ *exprSet }

func (m *mutExprSet) check() ([]checkError, error) { return m.exprSet.checkOn(mutEnv) }
