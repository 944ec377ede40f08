package migrate

import (
	"encoding/json"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/autogen"
)

// ruleType is the type of a rule.
func ruleType(r *api.Rule) string {
	switch {
	case r.Validation != nil:
		return TypeValidate
	case r.Mutation != nil:
		return TypeMutate
	case r.Generation != nil:
		return TypeGenerate
	case len(r.VerifyImages) > 0:
		return TypeVerifyImages
	}
	return ""
}

// outputSuffix is the suffix of an output of a type when a policy makes
// several.
var outputSuffix = map[string]string{TypeValidate: "vpol", TypeMutate: "mpol", TypeGenerate: "gpol", TypeVerifyImages: "ivpol"}

var typeOrder = []string{TypeValidate, TypeMutate, TypeGenerate, TypeVerifyImages}

// newScope is the scope of a rule of a policy: request.object is object.
func newScope() *scope {
	return &scope{names: map[string]jv{}, object: ident("object"), oldObject: ident("oldObject")}
}

// convertClassic converts a ClusterPolicy or Policy.
func convertClassic(p api.ClassicPolicy) *Conversion {
	conv := &Conversion{Kind: api.KindOf(p), Name: p.GetName(), Namespace: p.GetNamespace(), Source: p}
	spec := p.GetSpec()
	byType := map[string][]int{}
	for i := range spec.Rules {
		t := ruleType(&spec.Rules[i])
		byType[t] = append(byType[t], i)
	}
	var types []string
	for _, t := range typeOrder {
		if len(byType[t]) > 0 {
			types = append(types, t)
		}
	}
	names := map[string]string{}
	for _, t := range types {
		names[t] = p.GetName()
		if len(types) > 1 {
			names[t] = p.GetName() + "-" + outputSuffix[t]
		}
	}
	outcomes := make([]RuleOutcome, len(spec.Rules))
	for i := range spec.Rules {
		outcomes[i] = RuleOutcome{Rule: spec.Rules[i].Name, Type: ruleType(&spec.Rules[i])}
		if outcomes[i].Type == "" {
			outcomes[i].Type = "unknown"
			outcomes[i].Problems = []Problem{{Path: fmt.Sprintf("spec.rules[%d]", i), Construct: "rule", Detail: "no validate, mutate, generate or verifyImages"}}
		}
	}
	if n := len(spec.Rules); n > 1 && spec.GetApplyRules() == api.ApplyOne {
		for i := range outcomes {
			outcomes[i].Problems = append(outcomes[i].Problems, Problem{Path: "spec.applyRules", Construct: "applyRules: One",
				Detail: "the CEL policy types apply every rule; split the policy"})
		}
		conv.Rules = outcomes
		return conv
	}
	for _, t := range types {
		var out *Output
		switch t {
		case TypeValidate:
			out = convertValidateRules(p, names[t], byType[t], outcomes)
		case TypeMutate:
			out = convertMutateRules(p, names[t], byType[t], outcomes)
		case TypeGenerate:
			out = convertGenerateRules(p, names[t], byType[t], outcomes)
		case TypeVerifyImages:
			out = convertImageRules(p, names[t], byType[t], outcomes)
		}
		if out != nil {
			conv.Outputs = append(conv.Outputs, out)
		}
	}
	conv.Rules = outcomes
	return conv
}

// podsOnly reports whether a rule matches Pods and nothing else, by the
// bare kind name (what autogen expands).
func podsOnly(r *api.Rule) bool {
	fs, _ := filters(&r.MatchResources)
	if len(fs) == 0 {
		return false
	}
	for _, f := range fs {
		if len(f.Kinds) != 1 || f.Kinds[0] != "Pod" {
			return false
		}
	}
	if r.ExcludeResources != nil {
		xfs, _ := filters(r.ExcludeResources)
		for _, f := range xfs {
			for _, k := range f.Kinds {
				if k != "Pod" {
					return false
				}
			}
		}
	}
	return true
}

// autogenPlan decides how the Pod controller rules of a policy are
// converted: by the output's own autogen (the rules as written, with
// controllers), or written out (the expanded rules, autogen off).
type autogenPlan struct {
	// rules are the rules to convert, with their indexes in the policy
	// (-1 for generated rules) and the index of the rule they come from
	rules []planned
	// controllers is spec.autogen's list (nil: leave the default)
	controllers []string
	note        string
}

type planned struct {
	rule   api.Rule
	origin int
}

// planAutogen plans the autogen of the rules at idx.
func planAutogen(p api.ClassicPolicy, idx []int) autogenPlan {
	spec := p.GetSpec()
	ctrls := autogen.Controllers(p.GetAnnotations(), spec)
	all := true
	for _, i := range idx {
		all = all && podsOnly(&spec.Rules[i])
	}
	var plan autogenPlan
	switch {
	case ctrls != nil && all:
		for _, i := range idx {
			plan.rules = append(plan.rules, planned{rule: spec.Rules[i], origin: i})
		}
		names, dropped := podControllers(ctrls)
		plan.controllers = names
		if len(names) != len(celControllers) || len(dropped) > 0 {
			plan.note = autogenNote(names, dropped)
		}
	case ctrls != nil:
		byName := map[string]int{}
		for _, i := range idx {
			byName[spec.Rules[i].Name] = i
		}
		for _, r := range autogen.Rules(p) {
			name := r.Name
			if orig, ok := autogen.Original(name); ok {
				name = orig
			}
			i, ok := byName[name]
			if !ok || ruleType(&r) != ruleType(&spec.Rules[i]) {
				continue
			}
			plan.rules = append(plan.rules, planned{rule: r, origin: i})
		}
		plan.note = "Kyverno's Pod controller rules, written out"
	default:
		for _, i := range idx {
			plan.rules = append(plan.rules, planned{rule: spec.Rules[i], origin: i})
		}
		if all {
			plan.controllers = []string{}
			plan.note = autogenNote(nil, nil)
		}
	}
	return plan
}

// convertValidateRules converts the validate rules at idx into one
// ValidatingPolicy. Its expressions are compiled: a rule whose CEL does
// not compile is left out with the compiler's message.
func convertValidateRules(p api.ClassicPolicy, name string, idx []int, outcomes []RuleOutcome) *Output {
	plan := planAutogen(p, idx)
	for attempt := 0; attempt <= len(idx); attempt++ {
		out, errs := buildValidating(p, name, plan, outcomes)
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
				if len(outcomes[origin].Problems) > 0 {
					continue
				}
				outcomes[origin].Problems = append(outcomes[origin].Problems, Problem{Path: fmt.Sprintf("spec.rules[%d]", origin),
					Construct: "CEL of the conversion", Detail: fmt.Sprintf("%s does not compile: %v", ce.path, ce.err)})
			}
		}
		for _, r := range out.Rules {
			outcomes[originOf(p, r)].Policy = ""
		}
	}
	return nil
}

// buildValidating converts the planned rules that have no problem yet and
// checks the output's expressions.
func buildValidating(p api.ClassicPolicy, name string, plan autogenPlan, outcomes []RuleOutcome) (*Output, []checkError) {
	pv := &policyVars{}
	failed := map[int]bool{}
	byOrigin := map[int][]*vrule{}
	for _, pr := range plan.rules {
		if failed[pr.origin] || len(outcomes[pr.origin].Problems) > 0 {
			continue
		}
		path := fmt.Sprintf("spec.rules[%d]", pr.origin)
		r, err := convertValidateRule(p, &pr.rule, path, pv)
		if err != nil {
			failed[pr.origin] = true
			outcomes[pr.origin].Problems = append(outcomes[pr.origin].Problems, problemOf(path, err))
			continue
		}
		byOrigin[pr.origin] = append(byOrigin[pr.origin], r)
	}
	var rules []*vrule
	for _, pr := range plan.rules {
		if failed[pr.origin] {
			continue
		}
		rules = append(rules, byOrigin[pr.origin]...)
		delete(byOrigin, pr.origin)
	}
	if len(rules) == 0 {
		return nil, nil
	}
	// one set of validationActions per ValidatingPolicy
	action := rules[0].action
	var kept []*vrule
	for _, r := range rules {
		if r.action != action {
			origin := originOf(p, r.name)
			outcomes[origin].Problems = append(outcomes[origin].Problems, Problem{Path: fmt.Sprintf("spec.rules[%d].validate.failureAction", origin),
				Construct: "failureAction " + r.action, Detail: "differs from the policy's " + action + ": a ValidatingPolicy has one set of validationActions"})
			continue
		}
		kept = append(kept, r)
	}
	rules = kept
	if len(rules) == 0 {
		return nil, nil
	}
	vp, comments, owners := assembleValidating(p, name, rules, pv, plan.controllers, plan.note)
	vp.Spec.ValidationAction = validationActions(action, p.GetSpec())
	comments["spec.validationActions"] = "validationFailureAction " + action
	out := &Output{Object: vp, Type: TypeValidate, comments: comments, owners: owners, entries: pv.entries, numbers: pv.numbers(), binds: pv.binds, imageVars: pv.imageVars()}
	seen := map[int]bool{}
	for _, r := range rules {
		origin := originOf(p, r.name)
		if !seen[origin] && len(outcomes[origin].Problems) == 0 {
			seen[origin] = true
			outcomes[origin].Policy = name
			out.Rules = append(out.Rules, outcomes[origin].Rule)
		}
	}
	errs, err := validatingExprs(vp.Namespace, vp.Spec.MatchConditions, vp.Spec.Variables, vp.Spec.Validations).check()
	if err != nil {
		errs = append(errs, checkError{path: "spec", err: err})
	}
	return out, errs
}

// originOf is the index of the rule a (possibly generated) rule comes
// from.
func originOf(p api.ClassicPolicy, rule string) int {
	if orig, ok := autogen.Original(rule); ok {
		rule = orig
	}
	for i, r := range p.GetSpec().Rules {
		if r.Name == rule {
			return i
		}
	}
	return 0
}

// ruleBase converts what every rule type shares: match and exclude, the
// context (into the output's variables), the preconditions and
// celPreconditions.
func ruleBase(c *jp, r *api.Rule, path string, pv *policyVars) (*matchConv, []namedCond, error) {
	c.pv, c.rule, c.podSpec = pv, r.Name, podSpecOf(r)
	if fs, _ := filters(&r.MatchResources); len(fs) > 0 {
		for _, f := range fs {
			c.kinds = append(c.kinds, f.Kinds...)
		}
	}
	mc, err := c.match(&r.MatchResources, r.ExcludeResources, path+".match")
	if err != nil {
		return nil, nil, err
	}
	var conds []namedCond
	if !mc.cond.isTrue() {
		conds = append(conds, namedCond{name: "match", e: mc.cond})
	}
	saved := c.sc
	if c.contextObject != nil {
		c.sc = saved.child()
		c.sc.object = *c.contextObject
	}
	for i, ce := range r.Context {
		v, err := c.contextEntry(ce, fmt.Sprintf("%s.context[%d]", path, i))
		if err != nil {
			return nil, nil, err
		}
		name := pv.add(v, r.Name)
		pv.entry(r.Name, ce.Name, name)
		saved.names[ce.Name] = jv{e: ident("variables." + name), t: v.t, elem: v.elem, key: v.key}
	}
	c.sc = saved
	if r.Preconditions != nil {
		b, err := readConditions(r.Preconditions)
		if err != nil {
			return nil, nil, at(path+".preconditions", unsupportedf("conditions", "%v", err))
		}
		pre, err := c.preconditions(b, path+".preconditions")
		if err != nil {
			return nil, nil, err
		}
		conds = append(conds, pre...)
	}
	for _, pc := range r.CELPreconditions {
		conds = append(conds, namedCond{name: "cel-precondition-" + pc.Name, e: ex{s: pc.Expression, prec: precCond}})
	}
	return mc, conds, nil
}

// convertValidateRule converts one validate rule.
func convertValidateRule(p api.ClassicPolicy, r *api.Rule, path string, pv *policyVars) (*vrule, error) {
	c := &jp{sc: newScope()}
	raw, _ := json.Marshal(r)
	out := &vrule{name: r.Name, path: path, action: ruleAction(p.GetSpec(), r)}
	out.deleteOp = readsDelete(raw)
	if fa := r.Validation.FailureActionOverrides; len(fa) > 0 || len(r.Validation.ValidationFailureActionOverrides) > 0 || len(p.GetSpec().ValidationFailureActionOverrides) > 0 {
		return nil, at(path+".validate", unsupportedf("failureActionOverrides", "the CEL policy types have one set of validationActions; use a second policy for the namespaces"))
	}
	mc, conds, err := ruleBase(c, r, path, pv)
	if err != nil {
		return nil, err
	}
	out.mc, out.conds = mc, conds
	v := r.Validation
	if v.CEL != nil {
		if err := c.celRule(v.CEL, out, pv, path+".validate.cel"); err != nil {
			return nil, err
		}
		return out, nil
	}
	b, err := c.validateBody(v, path+".validate")
	if err != nil {
		return nil, err
	}
	if !b.skip.isFalse() {
		out.conds = append(out.conds, namedCond{name: "skip", e: not(b.skip)})
	}
	val := validation{expr: b.holds}
	if err := c.message(&val, v.Message, r.Name); err != nil {
		return nil, at(path+".validate.message", err)
	}
	out.validations = []validation{val}
	return out, nil
}

// preconditions converts a preconditions block into named conditions:
// each condition of all on its own, the any block as one.
func (c *jp) preconditions(b *condBlock, path string) ([]namedCond, error) {
	var out []namedCond
	for i, cd := range b.all {
		e, err := c.condition(cd)
		if err != nil {
			return nil, at(fmt.Sprintf("%s.all[%d]", path, i), err)
		}
		out = append(out, namedCond{name: "precondition", e: e})
	}
	if b.anyPresent {
		var anyOf []ex
		for i, cd := range b.any {
			e, err := c.condition(cd)
			if err != nil {
				return nil, at(fmt.Sprintf("%s.any[%d]", path, i), err)
			}
			anyOf = append(anyOf, e)
		}
		e := or(anyOf...)
		if len(anyOf) == 0 {
			e = exFalse
		}
		out = append(out, namedCond{name: "precondition-any", e: e})
	}
	return out, nil
}

// message sets a validation's message: text, or a messageExpression when
// it holds variables.
func (c *jp) message(v *validation, msg, rule string) error {
	if msg == "" {
		v.message = "validation error: rule " + rule + " failed"
		return nil
	}
	if !strings.Contains(msg, "{{") {
		v.message = strings.TrimSpace(msg)
		return nil
	}
	m, err := c.str(strings.TrimSpace(msg))
	if err != nil {
		// the text as written: its variables are not resolved
		v.message = strings.TrimSpace(msg)
		v.note = "message: " + problemOf("", err).String() + "; the message is kept as written"
		return nil
	}
	v.messageExp = m.value(strLit(""))
	if m.t != tString {
		v.messageExp = call("string", v.messageExp)
	}
	return nil
}

// readsDelete reports a rule whose conditions select DELETE requests
// (request.operation Equals or In DELETE): its output must match them.
func readsDelete(raw []byte) bool {
	var found bool
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			key, _ := t["key"].(string)
			op, _ := t["operator"].(string)
			if strings.Contains(key, "request.operation") && strings.Contains(rawJSON(t["value"]), "DELETE") {
				switch op {
				case "Equals", "Equal", "AnyIn", "AllIn", "In":
					found = true
				}
			}
			for _, x := range t {
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	var v any
	if json.Unmarshal(raw, &v) == nil {
		walk(v)
	}
	return found
}

// ruleAction is the failure action of a validate rule: the rule's, else
// the policy's (Audit by default).
func ruleAction(s *api.Spec, r *api.Rule) string {
	a := s.ValidationFailureAction
	if v := r.Validation; v != nil {
		if v.FailureAction != nil {
			a = *v.FailureAction
		} else if v.ValidationFailureAction != nil {
			a = *v.ValidationFailureAction
		}
	}
	if a.IsEnforce() {
		return "Enforce"
	}
	return "Audit"
}

// validationActions are the validationActions of a failure action.
func validationActions(action string, s *api.Spec) []admissionregistrationv1.ValidationAction {
	var out []admissionregistrationv1.ValidationAction
	if action == "Enforce" {
		out = append(out, admissionregistrationv1.Deny)
	} else {
		out = append(out, admissionregistrationv1.Audit)
	}
	if s.EmitWarning != nil && *s.EmitWarning {
		out = append(out, admissionregistrationv1.Warn)
	}
	return out
}

// celRule converts a validate.cel rule: its expressions are validations,
// its variables the output's.
func (c *jp) celRule(cr *api.CEL, out *vrule, pv *policyVars, path string) error {
	if cr.ParamKind != nil || cr.ParamRef != nil {
		return at(path, unsupportedf("paramKind", "parameter objects: a ValidatingPolicy has no params"))
	}
	rename := map[string]string{}
	for _, v := range cr.Variables {
		e := ex{s: renameVariables(v.Expression, rename), prec: precCond}
		name := pv.add(variable{name: v.Name, expr: e}, out.name)
		rename[v.Name] = name
	}
	for i, x := range cr.Expressions {
		v := validation{expr: ex{s: renameVariables(x.Expression, rename), prec: precCond}, message: x.Message}
		if x.MessageExpression != "" {
			v.messageExp = ex{s: renameVariables(x.MessageExpression, rename), prec: precCond}
		}
		if x.Reason != nil && *x.Reason != "" && *x.Reason != "Invalid" {
			v.note = fmt.Sprintf("expressions[%d].reason %s is not kept", i, *x.Reason)
		}
		out.validations = append(out.validations, v)
	}
	if len(cr.AuditAnnotations) > 0 {
		out.notes = append(out.notes, "validate.cel.auditAnnotations are not kept")
	}
	return nil
}

// renameVariables renames variables.<name> references.
func renameVariables(s string, rename map[string]string) string {
	return variablesRE.ReplaceAllStringFunc(s, func(m string) string {
		name := strings.TrimPrefix(m, "variables.")
		if n, ok := rename[name]; ok {
			return "variables." + n
		}
		return m
	})
}
