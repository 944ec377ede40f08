package migrate

import (
	"fmt"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/wildcard"
)

// ConvertException converts a kyverno.io PolicyException into a
// policies.kyverno.io PolicyException: its policyRefs are the outputs of
// the conversions (policies) that hold the rules it names, its
// matchConditions its match, exclude and conditions. A CEL exception
// exempts a whole policy: an exception that names some of the rules an
// output holds is not converted.
func ConvertException(x *api.PolicyException, policies ...*Conversion) *Conversion {
	return convertException(x, policies)
}

func convertException(x *api.PolicyException, policies []*Conversion) *Conversion {
	conv := &Conversion{Kind: x.Kind, Name: x.Name, Namespace: x.Namespace, Source: x}
	out := RuleOutcome{Rule: x.Name, Type: TypeException}
	fail := func(p Problem) *Conversion {
		out.Problems = append(out.Problems, p)
		conv.Rules = []RuleOutcome{out}
		return conv
	}
	if len(x.Spec.PodSecurity) > 0 {
		return fail(Problem{Path: "spec.podSecurity", Construct: "podSecurity", Detail: "Pod Security exemptions by control have no CEL form"})
	}
	cx := &api.CELPolicyException{}
	cx.APIVersion = api.GroupPolicies + "/v1"
	cx.Kind = api.KindPolicyException
	cx.Name, cx.Namespace = x.Name, x.Namespace
	cx.Labels, cx.Annotations = x.Labels, outputAnnotations(x.Annotations)
	seen := map[string]bool{}
	for i, e := range x.Spec.Exceptions {
		path := fmt.Sprintf("spec.exceptions[%d]", i)
		refs, p := exceptionRefs(e, policies, path)
		if p != nil {
			return fail(*p)
		}
		for _, r := range refs {
			if k := r.Kind + "/" + r.Name; !seen[k] {
				seen[k] = true
				cx.Spec.PolicyRefs = append(cx.Spec.PolicyRefs, r)
			}
		}
	}
	c := &jp{sc: newScope()}
	used := map[string]bool{}
	comments := map[string]string{"spec.policyRefs": "the conversions of the policies whose rules the exception names"}
	add := func(name string, e ex, note string) {
		if e.isTrue() {
			return
		}
		cx.Spec.MatchConditions = append(cx.Spec.MatchConditions, admissionregistrationv1.MatchCondition{Name: condName(name, used), Expression: e.s})
		comments[fmt.Sprintf("spec.matchConditions[%d]", len(cx.Spec.MatchConditions)-1)] = note
	}
	m, err := c.exceptionMatch(&x.Spec.Match, "spec.match")
	if err != nil {
		return fail(problemOf("spec.match", err))
	}
	add("match", m, "the exception's match")
	if x.Spec.Exclude != nil {
		e, err := c.exceptionMatch(x.Spec.Exclude, "spec.exclude")
		if err != nil {
			return fail(problemOf("spec.exclude", err))
		}
		if !e.isTrue() {
			add("exclude", not(e), "the exception's exclude")
		}
	}
	if x.Spec.Conditions != nil {
		pre, err := c.preconditions(blockOf(x.Spec.Conditions), "spec.conditions")
		if err != nil {
			return fail(problemOf("spec.conditions", err))
		}
		for _, p := range pre {
			add("condition", p.e, "the exception's conditions")
		}
	}
	if !x.Spec.BackgroundEnabled() {
		comments["spec"] = "background: false is not kept: a CEL exception applies to background scans too"
	}
	conv.Outputs = []*Output{{Object: cx, Type: TypeException, Rules: []string{x.Name}, comments: comments}}
	out.Policy = cx.Name
	conv.Rules = []RuleOutcome{out}
	errs, err := validatingExprs(x.Namespace, cx.Spec.MatchConditions, nil, nil).check()
	if err != nil {
		errs = append(errs, checkError{path: "spec", err: err})
	}
	if len(errs) > 0 {
		conv.Outputs = nil
		conv.Rules[0].Policy = ""
		return fail(Problem{Path: "spec", Construct: "CEL of the conversion", Detail: fmt.Sprintf("%s does not compile: %v", errs[0].path, errs[0].err)})
	}
	return conv
}

// exceptionMatch is the condition of an exception's match block: its
// filters with their kinds.
func (c *jp) exceptionMatch(m *api.MatchResources, path string) (ex, error) {
	fs, all := filters(m)
	var conds []ex
	for i, f := range fs {
		e, err := c.filter(f, true, true, fmt.Sprintf("%s.any[%d]", path, i))
		if err != nil {
			return ex{}, err
		}
		conds = append(conds, e)
	}
	if all {
		return and(conds...), nil
	}
	return or(conds...), nil
}

// exceptionRefs are the outputs holding the rules an exception entry
// names.
func exceptionRefs(e api.Exception, policies []*Conversion, path string) ([]policiesv1alpha1.PolicyRef, *Problem) {
	var src *Conversion
	for _, c := range policies {
		if c.Kind != api.KindClusterPolicy && c.Kind != api.KindPolicy {
			continue
		}
		if key(c.Namespace, c.Name) == e.PolicyName {
			src = c
		}
	}
	if src == nil {
		return nil, &Problem{Path: path + ".policyName", Construct: "policy " + e.PolicyName, Detail: "not among the converted policies"}
	}
	var refs []policiesv1alpha1.PolicyRef
	for _, o := range src.Outputs {
		p, ok := o.Object.(api.PolicyObject)
		if !ok {
			continue
		}
		var named, other []string
		for _, r := range o.Rules {
			if matchesAny(e.RuleNames, r) {
				named = append(named, r)
			} else {
				other = append(other, r)
			}
		}
		if len(named) == 0 {
			continue
		}
		if len(other) > 0 {
			return nil, &Problem{Path: path + ".ruleNames", Construct: "ruleNames " + strings.Join(e.RuleNames, ", "),
				Detail: fmt.Sprintf("%s %s also holds rules %s: a CEL exception exempts the whole policy", api.KindOf(p), p.GetName(), strings.Join(other, ", "))}
		}
		refs = append(refs, policiesv1alpha1.PolicyRef{Name: p.GetName(), Kind: api.KindOf(p)})
	}
	for _, r := range src.Rules {
		if matchesAny(e.RuleNames, r.Rule) && !r.Converted() {
			return nil, &Problem{Path: path + ".ruleNames", Construct: "rule " + r.Rule, Detail: "of policy " + e.PolicyName + " was not converted"}
		}
	}
	if len(refs) == 0 {
		return nil, &Problem{Path: path + ".ruleNames", Construct: "ruleNames " + strings.Join(e.RuleNames, ", "), Detail: "name no rule of policy " + e.PolicyName}
	}
	return refs, nil
}

func matchesAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if wildcard.Match(p, name) {
			return true
		}
	}
	return false
}

func key(ns, name string) string {
	if ns != "" {
		return ns + "/" + name
	}
	return name
}
