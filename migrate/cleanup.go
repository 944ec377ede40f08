package migrate

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
)

// cleanupPolicy is a kyverno.io CleanupPolicy or ClusterCleanupPolicy.
type cleanupPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Context                   []api.ContextEntry          `json:"context,omitempty"`
		Match                     api.MatchResources          `json:"match"`
		Exclude                   *api.MatchResources         `json:"exclude,omitempty"`
		Schedule                  string                      `json:"schedule"`
		Conditions                *api.AnyAllConditions       `json:"conditions,omitempty"`
		DeletionPropagationPolicy *metav1.DeletionPropagation `json:"deletionPropagationPolicy,omitempty"`
	} `json:"spec"`
	Status any `json:"status,omitempty"`
}

// convertCleanup converts a cleanup policy into a DeletingPolicy: its
// kinds become matchConstraints, its match beyond them, exclude and
// conditions the conditions (target is the object), its context the
// variables.
func convertCleanup(doc api.Document) (*Conversion, error) {
	var cp cleanupPolicy
	if err := api.DecodeStrict(doc, &cp); err != nil {
		return nil, err
	}
	conv := &Conversion{Kind: cp.Kind, Name: cp.Name, Namespace: cp.Namespace, Source: &cp}
	out := RuleOutcome{Rule: cp.Name, Type: TypeCleanup}
	fail := func(p Problem) *Conversion {
		out.Problems = append(out.Problems, p)
		conv.Rules = []RuleOutcome{out}
		return conv
	}
	c := &jp{sc: newScope()}
	// the resource a cleanup policy considers is target
	c.sc.names["target"] = jv{e: ident("object"), t: tMap}
	mc, err := c.match(&cp.Spec.Match, cp.Spec.Exclude, "spec.match")
	if err != nil {
		return fail(problemOf("spec.match", err)), nil
	}
	dp := &api.DeletingPolicy{}
	dp.APIVersion = api.GroupPolicies + "/v1"
	dp.Kind = api.KindDeletingPolicy
	if cp.Kind == "CleanupPolicy" {
		dp.Kind = api.KindNamespacedDeletingPolicy
		dp.Namespace = cp.Namespace
	}
	dp.Name, dp.Labels, dp.Annotations = cp.Name, cp.Labels, outputAnnotations(cp.Annotations)
	dp.Spec.Schedule = cp.Spec.Schedule
	dp.Spec.DeletionPropagationPolicy = cp.Spec.DeletionPropagationPolicy
	m := matchConstraints(mc.kinds, nil)
	for i := range m.ResourceRules {
		m.ResourceRules[i].Operations = nil
	}
	dp.Spec.MatchConstraints = m
	comments := map[string]string{"spec.matchConstraints": "the kinds the policy matches"}
	pv := &policyVars{}
	for i, ce := range cp.Spec.Context {
		v, err := c.contextEntry(ce, fmt.Sprintf("spec.context[%d]", i))
		if err != nil {
			return fail(problemOf(fmt.Sprintf("spec.context[%d]", i), err)), nil
		}
		name := pv.add(v, cp.Name)
		c.sc.names[ce.Name] = jv{e: ident("variables." + name), t: v.t, elem: v.elem, key: v.key}
	}
	used := map[string]bool{}
	addCond := func(name string, e ex, note string) {
		if e.isTrue() {
			return
		}
		dp.Spec.Conditions = append(dp.Spec.Conditions, matchCondition(condName(name, used), e))
		comments[fmt.Sprintf("spec.conditions[%d]", len(dp.Spec.Conditions)-1)] = note
	}
	addCond("match", mc.cond, "the policy's match beyond kinds, and its exclude")
	if cp.Spec.Conditions != nil {
		pre, err := c.preconditions(blockOf(cp.Spec.Conditions), "spec.conditions")
		if err != nil {
			return fail(problemOf("spec.conditions", err)), nil
		}
		for _, p := range pre {
			addCond("condition", p.e, "the policy's conditions")
		}
	}
	for _, v := range pv.list {
		dp.Spec.Variables = append(dp.Spec.Variables, varOut(v))
	}
	// the conditions see the variables: checked as validations
	s := &exprSet{namespace: dp.Namespace, variables: dp.Spec.Variables, varPath: "spec.variables"}
	for i, cd := range dp.Spec.Conditions {
		s.exprs = append(s.exprs, checkedExpr{path: fmt.Sprintf("spec.conditions[%d]", i), expr: cd.Expression})
	}
	errs, err := s.check()
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return fail(Problem{Path: "spec", Construct: "CEL of the conversion", Detail: fmt.Sprintf("%s does not compile: %v", errs[0].path, errs[0].err)}), nil
	}
	conv.Outputs = []*Output{{Object: dp, Type: TypeCleanup, Rules: []string{cp.Name}, comments: comments}}
	out.Policy = dp.Name
	conv.Rules = []RuleOutcome{out}
	return conv, nil
}
