package migrate

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
)

// genEnv is the environment of GeneratingPolicy expressions: the
// ValidatingPolicy's with the generator library.
var genEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(append(celpolicy.EnvOptions(), cel.WithLibraries(cel.GeneratingPolicyLibraries))...)
})

// grule is a generate rule converted.
type grule struct {
	name, path string
	mc         *matchConv
	conds      []namedCond
	// exprs are the generate expressions (generator.Apply calls)
	exprs       []ex
	synchronize bool
	orphan      bool
	clone       bool
}

// convertGenerateRule converts one generate rule: its data or clone
// source into the objects generator.Apply creates.
func convertGenerateRule(r *api.Rule, path string, pv *policyVars) (*grule, error) {
	c := &jp{sc: newScope()}
	g := r.Generation
	mc, conds, err := ruleBase(c, r, path, pv)
	if err != nil {
		return nil, err
	}
	out := &grule{name: r.Name, path: path, mc: mc, conds: conds, synchronize: g.Synchronize, orphan: g.OrphanDownstreamOnPolicyDelete}
	gpath := path + ".generate"
	if len(g.ForEachGeneration) > 0 {
		for i := range g.ForEachGeneration {
			e, err := c.foreachGeneration(&g.ForEachGeneration[i], fmt.Sprintf("%s.foreach[%d]", gpath, i))
			if err != nil {
				return nil, err
			}
			out.exprs = append(out.exprs, e)
		}
		return out, nil
	}
	e, clone, err := c.generation(g.ResourceSpec, g.RawData, g.Clone, g.CloneList, gpath)
	if err != nil {
		return nil, err
	}
	out.exprs, out.clone = append(out.exprs, e), clone
	return out, nil
}

// generation converts what one generate rule (or foreach) produces into
// a generator.Apply call.
func (c *jp) generation(spec api.ResourceSpec, data any, clone *api.CloneFrom, cloneList *api.CloneList, path string) (ex, bool, error) {
	ns := jv{e: strLit(""), t: tString}
	if spec.Namespace != "" {
		v, err := c.str(spec.Namespace)
		if err != nil {
			return ex{}, false, at(path+".namespace", err)
		}
		ns = v
	}
	nsE := ns.value(strLit(""))
	switch {
	case cloneList != nil && len(cloneList.Kinds) > 0:
		var lists []ex
		for _, k := range cloneList.Kinds {
			kr := parseKind(k)
			av := kr.version
			if kr.groupGiven {
				av = kr.group + "/" + kr.version
			}
			if av == "" {
				av = "v1"
				if b, ok := builtin[kr.kind]; ok && b.group != "" {
					av = b.group + "/" + b.version
				}
			}
			srcNS, err := c.str(cloneList.Namespace)
			if err != nil {
				return ex{}, false, at(path+".cloneList.namespace", err)
			}
			args := []ex{strLit(av), strLit(resourceOf(kr.kind)), srcNS.value(strLit(""))}
			if s := cloneList.Selector; s != nil {
				if len(s.MatchExpressions) > 0 {
					return ex{}, false, unsupportedf("cloneList.selector", "at %s.cloneList.selector: matchExpressions (resource.List takes labels)", path)
				}
				args = append(args, lit(stringMap(s.MatchLabels)))
			}
			l := method(ident("resource"), "List", args...)
			lists = append(lists, method(optField(l, "items"), "orValue", listOf()))
		}
		return call("generator.Apply", nsE, joinPatches(lists)), true, nil
	case clone != nil && clone.Name != "":
		srcNS, err := c.str(clone.Namespace)
		if err != nil {
			return ex{}, false, at(path+".clone.namespace", err)
		}
		srcName, err := c.str(clone.Name)
		if err != nil {
			return ex{}, false, at(path+".clone.name", err)
		}
		av := spec.APIVersion
		if av == "" {
			av = "v1"
		}
		src := method(ident("resource"), "Get", strLit(av), strLit(resourceOf(spec.Kind)), srcNS.value(strLit("")), srcName.value(strLit("")))
		name, err := c.str(spec.Name)
		if err != nil {
			return ex{}, false, at(path+".name", err)
		}
		if name.e.s == srcName.e.s {
			return call("generator.Apply", nsE, listOf(src)), true, nil
		}
		// the copy has the rule's name: the source with its metadata
		// renamed
		k, v := c.freshName("key"), c.freshName("value")
		defer c.release(k)
		defer c.release(v)
		md := ex{s: "{'name': " + name.value(strLit("")).s + ", 'labels': " + v + ".?labels.orValue({}), 'annotations': " + v + ".?annotations.orValue({})}", prec: precPrimary}
		renamed := ex{s: src.s + ".transformMap(" + k + ", " + v + ", " + k + " == 'metadata' ? dyn(" + md.s + ") : dyn(" + v + "))", prec: precPrimary}
		return call("generator.Apply", nsE, listOf(renamed)), true, nil
	}
	obj, err := c.generatedObject(spec, data, path)
	if err != nil {
		return ex{}, false, err
	}
	return call("generator.Apply", nsE, listOf(obj)), false, nil
}

// generatedObject is the object of a generate rule's data: its kind,
// apiVersion and name, and the data.
func (c *jp) generatedObject(spec api.ResourceSpec, data any, path string) (ex, error) {
	m := map[string]any{}
	if d, ok := data.(map[string]any); ok {
		for k, v := range d {
			m[k] = v
		}
	} else if data != nil {
		return ex{}, unsupportedf("generate.data", "at %s.data: not a map", path)
	}
	md := map[string]any{}
	if d, ok := m["metadata"].(map[string]any); ok {
		for k, v := range d {
			md[k] = v
		}
	}
	md["name"] = spec.Name
	m["metadata"] = md
	m["apiVersion"], m["kind"] = spec.APIVersion, spec.Kind
	// an object of any fields: each value dyn, as generator.Apply takes
	// maps of dyn
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	vals := make([]ex, len(keys))
	c.dynAll = true
	defer func() { c.dynAll = false }()
	for i, k := range keys {
		d, err := c.document(m[k])
		if err != nil {
			return ex{}, at(path+".data."+k, err)
		}
		vals[i] = call("dyn", d.value(exNull))
	}
	obj := mapOf(keys, vals)
	if len(obj.s) > lineWidth {
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = strLit(k).s + ": " + vals[i].s
		}
		obj = ex{s: "{\n" + indent(strings.Join(parts, ",\n")) + "\n}", prec: precPrimary}
	}
	return obj, nil
}

// stringMap is a map of strings as a JSON-like map.
func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// foreachGeneration converts a generate foreach: the objects of the
// selected elements, in one namespace.
func (c *jp) foreachGeneration(fe *api.ForEachGeneration, path string) (ex, error) {
	n, err := parseJMESPath(fe.List)
	if err != nil {
		return ex{}, at(path+".list", err)
	}
	lv, err := c.node(n, jv{sym: symRoot}, needNullable)
	if err != nil || lv.sym != symNone {
		return ex{}, at(path+".list", unsupportedf("foreach list", "%q", fe.List))
	}
	x := c.fresh(lv.key)
	defer c.release(x)
	saved := c.sc
	c.sc = saved.child()
	defer func() { c.sc = saved }()
	el := jv{e: ident(x), t: lv.elem, key: singular(lv.key)}
	c.sc.names["element"], c.sc.names["element0"] = el, el
	binds, err := c.localContext(fe.Context, path+".context")
	if err != nil {
		return ex{}, err
	}
	pre := exTrue
	if fe.Preconditions != nil {
		b, err := readConditions(fe.Preconditions)
		if err != nil {
			return ex{}, at(path+".preconditions", unsupportedf("conditions", "%v", err))
		}
		if pre, err = c.block(b, path+".preconditions"); err != nil {
			return ex{}, err
		}
	}
	if fe.Clone != nil || fe.CloneList != nil {
		return ex{}, unsupportedf("foreach clone", "at %s: a clone per element", path)
	}
	ns := jv{e: strLit(""), t: tString}
	if fe.Namespace != "" {
		if ns, err = c.str(fe.Namespace); err != nil {
			return ex{}, at(path+".namespace", err)
		}
	}
	obj, err := c.generatedObject(fe.ResourceSpec, fe.RawData, path)
	if err != nil {
		return ex{}, err
	}
	list := listOperand(lv)
	if !pre.isTrue() {
		list = macro(list, "filter", x, binds(pre))
	}
	if mentions(ns.e.s, x) {
		// one namespace per element
		return macro(list, "all", x, binds(call("generator.Apply", ns.value(strLit("")), listOf(obj)))), nil
	}
	return call("generator.Apply", ns.value(strLit("")), macro(list, "map", x, binds(obj))), nil
}

// convertGenerateRules converts the generate rules at idx into one
// GeneratingPolicy.
func convertGenerateRules(p api.ClassicPolicy, name string, idx []int, outcomes []RuleOutcome) *Output {
	pv := &policyVars{}
	var rules []*grule
	spec := p.GetSpec()
	for _, i := range idx {
		path := fmt.Sprintf("spec.rules[%d]", i)
		r, err := convertGenerateRule(&spec.Rules[i], path, pv)
		if err != nil {
			outcomes[i].Problems = append(outcomes[i].Problems, problemOf(path, err))
			continue
		}
		rules = append(rules, r)
	}
	var kept []*grule
	for _, r := range rules {
		if r.synchronize != rules[0].synchronize || r.orphan != rules[0].orphan {
			i := originOf(p, r.name)
			outcomes[i].Problems = append(outcomes[i].Problems, Problem{Path: r.path + ".generate.synchronize",
				Construct: "synchronize", Detail: "differs between the policy's rules: a GeneratingPolicy has one setting"})
			continue
		}
		kept = append(kept, r)
	}
	rules = kept
	if len(rules) == 0 {
		return nil
	}
	gp, comments := assembleGenerating(p, name, rules, pv)
	s := &exprSet{namespace: gp.Namespace, conditions: gp.Spec.MatchConditions, condPath: "spec.matchConditions",
		variables: gp.Spec.Variables, varPath: "spec.variables"}
	for i, g := range gp.Spec.Generation {
		s.exprs = append(s.exprs, checkedExpr{path: fmt.Sprintf("spec.generate[%d]", i), expr: g.Expression, kind: cel.Variable})
	}
	errs, err := s.checkOn(genEnv)
	if err == nil && len(errs) > 0 {
		for _, r := range rules {
			i := originOf(p, r.name)
			outcomes[i].Problems = append(outcomes[i].Problems, Problem{Path: r.path, Construct: "CEL of the conversion",
				Detail: fmt.Sprintf("%s does not compile: %v", errs[0].path, errs[0].err)})
		}
		return nil
	}
	out := &Output{Object: gp, Type: TypeGenerate, comments: comments, entries: pv.entries, numbers: pv.numbers(), binds: pv.binds, imageVars: pv.imageVars()}
	for _, r := range rules {
		i := originOf(p, r.name)
		outcomes[i].Policy = name
		out.Rules = append(out.Rules, outcomes[i].Rule)
	}
	return out
}

// assembleGenerating builds the GeneratingPolicy of generate rules.
func assembleGenerating(src api.ClassicPolicy, name string, rules []*grule, pv *policyVars) (*api.GeneratingPolicy, map[string]string) {
	comments := map[string]string{}
	gp := &api.GeneratingPolicy{}
	gp.APIVersion = api.GroupPolicies + "/v1"
	gp.Kind = api.KindGeneratingPolicy
	if api.IsNamespaced(src) {
		gp.Kind = api.KindNamespacedGeneratingPolicy
		gp.Namespace = src.GetNamespace()
	}
	gp.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: gp.Namespace, Labels: labelsOf(src), Annotations: outputAnnotations(src.GetAnnotations())}
	spec := &gp.Spec
	vrs := make([]*vrule, len(rules))
	var kinds []kindRef
	for i, r := range rules {
		vrs[i] = &vrule{name: r.name, path: r.path, mc: r.mc, conds: r.conds}
		kinds = append(kinds, r.mc.kinds...)
	}
	same := sameKinds(vrs)
	spec.MatchConstraints = matchConstraints(kinds, operationsOf(vrs))
	comments["spec.matchConstraints"] = "the kinds and operations of the triggers"
	if liftSelectors(vrs, spec.MatchConstraints) {
		comments["spec.matchConstraints"] = "the kinds, operations and selectors of the triggers"
	}
	eval := &policiesv1alpha1.GeneratingPolicyEvaluationConfiguration{}
	t := true
	if rules[0].synchronize {
		eval.SynchronizationConfiguration = &policiesv1alpha1.SynchronizationConfiguration{Enabled: &t}
	}
	if rules[0].orphan {
		eval.OrphanDownstreamOnPolicyDelete = &policiesv1alpha1.OrphanDownstreamOnPolicyDeleteConfiguration{Enabled: &t}
	}
	if generateExisting(src.GetSpec()) {
		eval.GenerateExistingConfiguration = &policiesv1alpha1.GenerateExistingConfiguration{Enabled: &t}
	}
	if s := src.GetSpec(); s.Admission != nil && !*s.Admission {
		f := false
		eval.Admission = &policiesv1alpha1.AdmissionConfiguration{Enabled: &f}
	}
	if eval.SynchronizationConfiguration != nil || eval.OrphanDownstreamOnPolicyDelete != nil || eval.GenerateExistingConfiguration != nil || eval.Admission != nil {
		spec.EvaluationConfiguration = eval
		comments["spec.evaluation"] = "the rules' synchronize and orphanDownstreamOnPolicyDelete, the policy's generateExisting"
	}
	used := map[string]bool{}
	shared := len(rules) == 1 || same && sameConds(vrs)
	if shared {
		for _, c := range vrs[0].applies(false) {
			spec.MatchConditions = append(spec.MatchConditions, matchCondition(condName(c.name, used), pv.bindVariables(c.e)))
			comments[fmt.Sprintf("spec.matchConditions[%d]", len(spec.MatchConditions)-1)] = condComment(c.name)
		}
	} else {
		var anyApplies []ex
		for _, r := range vrs {
			anyApplies = append(anyApplies, conj(r.applies(!same)))
		}
		if a := or(anyApplies...); !a.isTrue() {
			spec.MatchConditions = append(spec.MatchConditions, matchCondition(condName("a-rule-applies", used), pv.bindVariables(a)))
			comments[fmt.Sprintf("spec.matchConditions[%d]", len(spec.MatchConditions)-1)] = "the rules' conditions: the policy is skipped when no rule applies"
		}
	}
	for i, r := range rules {
		guard := exTrue
		if !shared {
			guard = conj(vrs[i].applies(!same))
		}
		for _, e := range r.exprs {
			if !guard.isTrue() {
				e = or(not(guard), e)
			}
			spec.Generation = append(spec.Generation, policiesv1alpha1.Generation{Expression: e.s})
			what := "data"
			if r.clone {
				what = "clone"
			}
			comments[fmt.Sprintf("spec.generate[%d]", len(spec.Generation)-1)] = "rule " + r.name + ": " + what
		}
	}
	for _, v := range pv.list {
		spec.Variables = append(spec.Variables, varOut(v))
	}
	return gp, comments
}

// generateExisting reports whether generate rules also apply to existing
// triggers, combining the rule field and the deprecated spec fields as
// upstream does.
func generateExisting(s *api.Spec) bool {
	for i := range s.Rules {
		if g := s.Rules[i].Generation; g != nil && g.GenerateExisting != nil {
			return *g.GenerateExisting
		}
	}
	if s.GenerateExistingOnPolicyUpdate != nil && *s.GenerateExistingOnPolicyUpdate {
		return true
	}
	return s.GenerateExisting
}
