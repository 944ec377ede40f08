package migrate

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/gavelpolicy/gavel/api"
)

// namedCond is a condition of a rule that becomes a matchCondition.
type namedCond struct {
	name string
	e    ex
}

// validation is one validation of the output.
type validation struct {
	expr       ex
	message    string
	messageExp ex
	// note is a comment on it
	note string
}

// vrule is a validate rule converted.
type vrule struct {
	name, path string
	mc         *matchConv
	// conds are the rule's conditions beyond its kinds and operations:
	// match and exclude, preconditions, celPreconditions, the body's skip
	conds []namedCond
	// validations hold when the rule does not fail (given conds)
	validations []validation
	// action is Enforce or Audit
	action string
	// celVars are validate.cel's own variables
	celVars []variable
	notes   []string
	// deleteOp reports that the rule reads DELETE requests
	deleteOp bool
}

// policyVars are the variables of an output, shared by its rules: a
// context entry of the same name and value is one variable.
type policyVars struct {
	list   []variable
	byName map[string]string // name → expression
	// users are the rules that use each variable
	users map[string][]string
	// entries are the variables of the rules' context entries: rule →
	// entry name → variable name
	entries map[string]map[string]string
	// binds are the foreach context entries bound with cel.bind
	binds map[string]map[string]localBind
}

// bind records that a foreach context entry of a rule is bound with
// cel.bind.
func (pv *policyVars) bind(rule, entry string, b localBind) {
	if pv.binds == nil {
		pv.binds = map[string]map[string]localBind{}
	}
	if pv.binds[rule] == nil {
		pv.binds[rule] = map[string]localBind{}
	}
	pv.binds[rule][entry] = b
}

// numbers are the variables known to hold numbers.
func (pv *policyVars) numbers() map[string]bool {
	out := map[string]bool{}
	for _, v := range pv.list {
		if v.t == tNumber {
			out[v.name] = true
		}
	}
	return out
}

// imageVars are the variables that hold image.GetMetadata's value.
func (pv *policyVars) imageVars() map[string]bool {
	out := map[string]bool{}
	for _, v := range pv.list {
		if v.key == imageDataKey {
			out[v.name] = true
		}
	}
	return out
}

// entry records that the context entry of a rule became a variable.
func (pv *policyVars) entry(rule, entry, variable string) {
	if pv.entries == nil {
		pv.entries = map[string]map[string]string{}
	}
	if pv.entries[rule] == nil {
		pv.entries[rule] = map[string]string{}
	}
	pv.entries[rule][entry] = variable
}

// add adds a rule's variable and returns its name in the output.
func (pv *policyVars) add(v variable, rule string) string {
	if pv.byName == nil {
		pv.byName, pv.users = map[string]string{}, map[string][]string{}
	}
	name := v.name
	if e, ok := pv.byName[name]; ok {
		if e == v.expr.s {
			pv.users[name] = append(pv.users[name], rule)
			return name
		}
		name = celName(rule) + "_" + v.name
		if e, ok := pv.byName[name]; ok && e == v.expr.s {
			pv.users[name] = append(pv.users[name], rule)
			return name
		}
	}
	pv.byName[name] = v.expr.s
	pv.users[name] = append(pv.users[name], rule)
	v.name = name
	pv.list = append(pv.list, v)
	return name
}

var variablesRE = regexp.MustCompile(`\bvariables\.([A-Za-z_][A-Za-z0-9_]*)`)

// bindVariables rewrites an expression that reads variables for a place
// that has none (matchConditions): each variable it reads is bound around
// it with cel.bind, in the order of the output's variables.
func (pv *policyVars) bindVariables(e ex) ex {
	if !variablesRE.MatchString(e.s) {
		return e
	}
	used := map[string]bool{}
	var visit func(s string)
	visit = func(s string) {
		for _, m := range variablesRE.FindAllStringSubmatch(s, -1) {
			if !used[m[1]] {
				used[m[1]] = true
				visit(pv.byName[m[1]])
			}
		}
	}
	visit(e.s)
	out := ex{s: variablesRE.ReplaceAllString(e.s, "$1"), prec: e.prec}
	for i := len(pv.list) - 1; i >= 0; i-- {
		v := pv.list[i]
		if !used[v.name] {
			continue
		}
		val := ex{s: variablesRE.ReplaceAllString(v.expr.s, "$1"), prec: v.expr.prec}
		out = call("cel.bind", ident(v.name), val, out)
	}
	return out
}

// condName makes a matchCondition name: lower case, [a-z0-9-.], at most
// 63 characters, unique among used.
func condName(base string, used map[string]bool) string {
	b := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, base)
	b = strings.Trim(b, "-.")
	if b == "" {
		b = "condition"
	}
	if len(b) > 58 {
		b = strings.Trim(b[:58], "-.")
	}
	name := b
	for i := 2; used[name]; i++ {
		name = fmt.Sprintf("%s-%d", b, i)
	}
	used[name] = true
	return name
}

// constraintRules groups the kinds of rules into matchConstraints'
// resource rules: one per group and version.
func constraintRules(kinds []kindRef) []resourceRule {
	seen := map[resourceRule]bool{}
	var out []resourceRule
	for _, k := range kinds {
		r := ruleFor(k)
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// groupedRule is resourceRules entry: groups, versions, resources.
type groupedRule struct {
	group, version string
	resources      []string
}

func groupRules(rs []resourceRule) []groupedRule {
	var out []groupedRule
	idx := map[string]int{}
	for _, r := range rs {
		k := r.group + "\x00" + r.version
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, groupedRule{group: r.group, version: r.version})
		}
		out[i].resources = append(out[i].resources, r.resource)
	}
	for i := range out {
		sort.Strings(out[i].resources)
	}
	return out
}

// sameKinds reports whether every rule selects the same kinds and
// operations.
func sameKinds(rules []*vrule) bool {
	key := func(r *vrule) string {
		var ks []string
		for _, k := range r.mc.kinds {
			ks = append(ks, fmt.Sprintf("%+v", ruleFor(k)))
		}
		sort.Strings(ks)
		return strings.Join(ks, ";") + "|" + strings.Join(r.mc.ops, ",")
	}
	for _, r := range rules[1:] {
		if key(r) != key(rules[0]) {
			return false
		}
	}
	return true
}

// operationsOf is the operations of the output's constraints: those the
// rules name, else CREATE and UPDATE (and DELETE for rules that read
// DELETE requests).
func operationsOf(rules []*vrule) []string {
	set := map[string]bool{}
	for _, r := range rules {
		if r.mc.ops == nil {
			set["CREATE"], set["UPDATE"] = true, true
			if r.deleteOp {
				set["DELETE"] = true
			}
			for _, k := range r.mc.kinds {
				if k.subresource == "exec" || k.subresource == "attach" || k.subresource == "portforward" {
					set["CONNECT"] = true
				}
			}
			continue
		}
		for _, o := range r.mc.ops {
			set[o] = true
		}
	}
	order := []string{"CREATE", "UPDATE", "DELETE", "CONNECT"}
	var out []string
	for _, o := range order {
		if set[o] {
			out = append(out, o)
		}
	}
	return out
}

// applies is everything that decides whether a rule applies, beyond the
// output's constraints: its kind guard when the rules differ, then its
// conditions.
func (r *vrule) applies(guard bool) []namedCond {
	var out []namedCond
	if guard {
		var ks []string
		for _, k := range r.mc.kinds {
			ks = append(ks, kindText(k))
		}
		out = append(out, namedCond{name: "kinds", e: kindTest(ks)})
	}
	return append(out, r.conds...)
}

// kindText writes a kind selector back.
func kindText(k kindRef) string {
	var parts []string
	if k.groupGiven {
		parts = append(parts, k.group)
	}
	if k.versionGiven {
		parts = append(parts, k.version)
	}
	parts = append(parts, k.kind)
	if k.subresource != "" {
		parts = append(parts, k.subresource)
	}
	return strings.Join(parts, "/")
}

// conj is the conjunction of named conditions.
func conj(cs []namedCond) ex {
	es := make([]ex, len(cs))
	for i, c := range cs {
		es[i] = c.e
	}
	return and(es...)
}

// sameConds reports whether every rule has the same conditions.
func sameConds(rules []*vrule) bool {
	for _, r := range rules[1:] {
		if conj(r.conds).s != conj(rules[0].conds).s {
			return false
		}
	}
	return true
}

// assembleValidating builds the ValidatingPolicy of a policy's validate
// rules.
func assembleValidating(src api.ClassicPolicy, name string, rules []*vrule, pv *policyVars, autogenControllers []string, autogenNote string) (*api.ValidatingPolicy, map[string]string, map[string][]string) {
	comments := map[string]string{}
	owners := map[string][]string{}
	var all []string
	for _, r := range rules {
		all = append(all, r.name)
	}
	vp := &api.ValidatingPolicy{}
	vp.APIVersion = api.GroupPolicies + "/v1"
	vp.Kind = api.KindValidatingPolicy
	if api.IsNamespaced(src) {
		vp.Kind = api.KindNamespacedValidatingPolicy
		vp.Namespace = src.GetNamespace()
	}
	vp.Name = name
	vp.Annotations = outputAnnotations(src.GetAnnotations())
	if l := labelsOf(src); len(l) > 0 {
		vp.Labels = l
	}
	spec := &vp.Spec
	same := sameKinds(rules)
	var kinds []kindRef
	for _, r := range rules {
		kinds = append(kinds, r.mc.kinds...)
	}
	spec.MatchConstraints = matchConstraints(kinds, operationsOf(rules))
	if liftSelectors(rules, spec.MatchConstraints) {
		comments["spec.matchConstraints"] = "the kinds, operations and selectors the rules match"
	} else {
		comments["spec.matchConstraints"] = "the kinds and operations the rules match"
	}
	writeSettings(src, spec, comments)
	if autogenControllers != nil {
		spec.AutogenConfiguration = autogenConfig(autogenControllers)
		if autogenNote != "" {
			comments["spec.autogen"] = autogenNote
		}
	}
	used := map[string]bool{}
	if wc := src.GetSpec().WebhookConfiguration; wc != nil {
		for _, mc := range wc.MatchConditions {
			spec.MatchConditions = append(spec.MatchConditions, matchCondition(condName(mc.Name, used), ex{s: mc.Expression}))
		}
	}
	if len(rules) == 1 || (same && sameConds(rules)) {
		for _, c := range rules[0].applies(false) {
			n := condName(c.name, used)
			spec.MatchConditions = append(spec.MatchConditions, matchCondition(n, pv.bindVariables(c.e)))
			owners[fmt.Sprintf("spec.matchConditions[%d]", len(spec.MatchConditions)-1)] = all
		}
		for _, r := range rules {
			for _, v := range r.validations {
				spec.Validations = append(spec.Validations, v.out())
				owners[fmt.Sprintf("spec.validations[%d]", len(spec.Validations)-1)] = []string{r.name}
				if v.note != "" {
					comments[fmt.Sprintf("spec.validations[%d]", len(spec.Validations)-1)] = v.note
				}
			}
		}
	} else {
		var anyApplies []ex
		for _, r := range rules {
			anyApplies = append(anyApplies, conj(r.applies(!same)))
		}
		if a := or(anyApplies...); !a.isTrue() {
			spec.MatchConditions = append(spec.MatchConditions, matchCondition(condName("a-rule-applies", used), pv.bindVariables(a)))
			owners[fmt.Sprintf("spec.matchConditions[%d]", len(spec.MatchConditions)-1)] = all
			comments[fmt.Sprintf("spec.matchConditions[%d]", len(spec.MatchConditions)-1)] = "the rules' conditions: the policy is skipped when no rule applies"
		}
		for _, r := range rules {
			guard := conj(r.applies(!same))
			for _, v := range r.validations {
				v.expr = or(not(guard), v.expr)
				spec.Validations = append(spec.Validations, v.out())
				owners[fmt.Sprintf("spec.validations[%d]", len(spec.Validations)-1)] = []string{r.name}
				note := "rule " + r.name + ", where it applies"
				if v.note != "" {
					note += "; " + v.note
				}
				comments[fmt.Sprintf("spec.validations[%d]", len(spec.Validations)-1)] = note
			}
		}
	}
	for _, v := range pv.list {
		spec.Variables = append(spec.Variables, varOut(v))
		owners[fmt.Sprintf("spec.variables[%d]", len(spec.Variables)-1)] = pv.users[v.name]
		if v.note != "" {
			comments[fmt.Sprintf("spec.variables[%d]", len(spec.Variables)-1)] = v.comment()
		}
	}
	for i, mc := range spec.MatchConditions {
		if _, ok := comments[fmt.Sprintf("spec.matchConditions[%d]", i)]; !ok {
			comments[fmt.Sprintf("spec.matchConditions[%d]", i)] = condComment(mc.Name)
		}
	}
	return vp, comments, owners
}

// condComment explains a matchCondition by its name.
func condComment(name string) string {
	switch {
	case strings.HasPrefix(name, "precondition"):
		return "from the rule's preconditions"
	case strings.HasPrefix(name, "match"):
		return "the rule's match beyond kinds and operations"
	case strings.HasPrefix(name, "exclude"):
		return "the rule's exclude"
	case strings.HasPrefix(name, "skip"):
		return "Kyverno skips the rule when nothing in the resource applies (condition anchors, foreach)"
	case strings.HasPrefix(name, "cel-precondition"):
		return "from the rule's celPreconditions"
	}
	return ""
}

// liftSelectors moves the selectors every rule shares into the
// constraints m (dropping the rules' match conditions they were).
func liftSelectors(rules []*vrule, m *admissionregistrationv1.MatchResources) bool {
	first := rules[0].mc
	for _, r := range rules {
		if !r.mc.liftable || rawJSON(r.mc.nsSelector) != rawJSON(first.nsSelector) || rawJSON(r.mc.objSelector) != rawJSON(first.objSelector) {
			return false
		}
	}
	m.NamespaceSelector, m.ObjectSelector = first.nsSelector, first.objSelector
	for _, r := range rules {
		r.conds = dropNamed(r.conds, "match")
	}
	return true
}

func dropNamed(cs []namedCond, name string) []namedCond {
	var out []namedCond
	for _, c := range cs {
		if c.name != name {
			out = append(out, c)
		}
	}
	return out
}
