package migrate

import (
	"encoding/json"
	"fmt"
	"strings"

	admissionregistrationv1alpha1 "k8s.io/api/admissionregistration/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
)

// mutation is one mutation of a MutatingPolicy.
type mutation struct {
	// apply is an ApplyConfiguration (else a JSON patch)
	apply bool
	expr  ex
	note  string
	// root, for an ApplyConfiguration of the object's fields, lets a
	// condition guard each field (see smpResult.guarded)
	root *smpResult
}

// mrule is a mutate rule converted.
type mrule struct {
	name, path string
	mc         *matchConv
	conds      []namedCond
	mutations  []mutation
	// atomic reports patches that replace atomic lists
	atomic bool
	// target is the rule's mutate target (existing resources)
	target *mtarget
}

// mtarget is a mutate target converted: the existing resources the
// output mutates.
type mtarget struct {
	kind      kindRef
	expr      ex
	conds     []namedCond
	onUpdate  bool
	synthetic bool
}

// convertMutateRule converts one mutate rule.
func convertMutateRule(p api.ClassicPolicy, r *api.Rule, path string, pv *policyVars) (*mrule, error) {
	c := &jp{sc: newScope()}
	m := r.Mutation
	if len(m.Targets) > 0 && len(r.Context) > 0 {
		// the output's variables are computed where object is the
		// target (the mutations) and where it is the trigger (the
		// conditions): the context reads the trigger as request.object
		trigger := ident("request.object")
		c.contextObject = &trigger
	}
	mc, conds, err := ruleBase(c, r, path, pv)
	if err != nil {
		return nil, err
	}
	out := &mrule{name: r.Name, path: path, mc: mc, conds: conds}
	mpath := path + ".mutate"
	if len(m.Targets) > 0 {
		t, err := c.mutateTarget(m, mpath)
		if err != nil {
			return nil, err
		}
		out.target = t
		// the patch applies to the target (object); request.object is
		// the trigger
		c.sc = c.sc.child()
		c.sc.object = ident("request.object")
		target := ident("object")
		c.sc.patched = &target
		c.sc.names["target"] = jv{e: target, t: tMap}
	}
	switch {
	case m.PatchStrategicMerge != nil:
		res, err := c.smpRoot(m.PatchStrategicMerge, mpath+".patchStrategicMerge")
		if err != nil {
			return nil, err
		}
		if cond := and(res.cond, res.global); !cond.isTrue() {
			if out.target != nil {
				// the anchors select the targets the patch applies to
				out.target.conds = append(out.target.conds, namedCond{name: "anchors", e: cond})
			} else {
				out.conds = append(out.conds, namedCond{name: "anchors", e: cond})
			}
		}
		out.atomic = res.atomic
		if !res.empty {
			root := res
			out.mutations = append(out.mutations, mutation{apply: true, expr: res.obj, note: "patchStrategicMerge", root: &root})
		}
		if len(res.patches) > 0 {
			out.mutations = append(out.mutations, mutation{expr: joinPatches(res.patches), note: "patchStrategicMerge of an atomic map, key by key"})
		}
	case m.PatchesJSON6902 != "":
		e, err := c.jsonPatch(m.PatchesJSON6902, mpath+".patchesJson6902")
		if err != nil {
			return nil, err
		}
		out.mutations = append(out.mutations, mutation{expr: e, note: "patchesJson6902"})
	case len(m.ForEachMutation) > 0:
		for i := range m.ForEachMutation {
			mu, err := c.foreachMutation(&m.ForEachMutation[i], fmt.Sprintf("%s.foreach[%d]", mpath, i))
			if err != nil {
				return nil, err
			}
			out.atomic = out.atomic || mu.atomic
			out.mutations = append(out.mutations, mu.mutation)
		}
		out.mutations = joinForeachPatches(out.mutations, len(r.Context) > 0)
	default:
		return nil, unsupportedf("mutate", "at %s: no patchStrategicMerge, patchesJson6902 or foreach", mpath)
	}
	return out, nil
}

// mutateTarget converts the targets of a mutate rule (one target): the
// expression that resolves them from the trigger, and their conditions.
func (c *jp) mutateTarget(m *api.Mutation, path string) (*mtarget, error) {
	if len(m.Targets) > 1 {
		return nil, unsupportedf("mutate targets", "at %s.targets: several targets (a MutatingPolicy has one targetMatchConstraints)", path)
	}
	t := m.Targets[0]
	tpath := path + ".targets[0]"
	if len(t.Context) > 0 {
		return nil, unsupportedf("target context", "at %s.context", tpath)
	}
	kind := t.Kind
	if t.APIVersion != "" {
		kind = t.APIVersion + "/" + t.Kind
	}
	kr := parseKind(kind)
	rr := ruleFor(kr)
	av := t.APIVersion
	if av == "" {
		av = rr.version
		if rr.group != "" && rr.group != "*" {
			av = rr.group + "/" + rr.version
		}
	}
	out := &mtarget{kind: kr, onUpdate: m.MutateExistingOnPolicyUpdate != nil && *m.MutateExistingOnPolicyUpdate}
	ns := jv{e: strLit(""), t: tString}
	if t.Namespace != "" {
		v, err := c.str(t.Namespace)
		if err != nil {
			return nil, at(tpath+".namespace", err)
		}
		ns = v
	}
	res := resourceOf(kr.kind)
	named := t.Name != "" && (!hasWildcard(t.Name) || strings.Contains(t.Name, "{{"))
	switch {
	case named && (t.Namespace != "" || clusterScopedKinds[kr.kind]):
		name, err := c.str(t.Name)
		if err != nil {
			return nil, at(tpath+".name", err)
		}
		get := method(ident("resource"), "Get", strLit(av), strLit(res), ns.value(strLit("")), name.value(strLit("")))
		// the target itself (a target expression is a map(string, any):
		// the resource library's own type); one that does not exist is
		// none where resource.Get gives null for it
		out.expr = get
	default:
		args := []ex{strLit(av), strLit(res), ns.value(strLit(""))}
		if s := t.Selector; s != nil {
			if len(s.MatchExpressions) > 0 {
				return nil, unsupportedf("target selector", "at %s.selector: matchExpressions (resource.List takes labels)", tpath)
			}
			args = append(args, lit(stringMap(s.MatchLabels)))
		}
		out.expr = method(ident("resource"), "List", args...)
		switch {
		case named:
			// a name without a namespace: the objects of that name in
			// every namespace, as Kyverno lists them (the condition is
			// on each target: request.object is the trigger)
			saved := c.sc
			c.sc = saved.child()
			c.sc.object = ident("request.object")
			name, err := c.str(t.Name)
			c.sc = saved
			if err != nil {
				return nil, at(tpath+".name", err)
			}
			out.conds = append(out.conds, namedCond{name: "name", e: rel(ident("object.metadata.name"), "==", name.value(strLit("")))})
		case t.Name != "":
			// a name with wildcards: the listed objects it matches
			out.conds = append(out.conds, namedCond{name: "name", e: wildcardMatch(ident("object.metadata.name"), t.Name)})
		}
	}
	if t.Preconditions != nil {
		// evaluated on each target: object is the target, request.object
		// the trigger
		saved := c.sc
		c.sc = saved.child()
		c.sc.object = ident("request.object")
		c.sc.names["target"] = jv{e: ident("object"), t: tMap}
		b, err := readConditions(t.Preconditions)
		if err == nil {
			out.conds, err = c.preconditions(b, tpath+".preconditions")
		}
		c.sc = saved
		if err != nil {
			return nil, at(tpath+".preconditions", err)
		}
	}
	return out, nil
}

// jsonOp is one operation of a patchesJson6902.
type jsonOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from,omitempty"`
	Value any    `json:"value,omitempty"`
}

// jsonPatch converts a patchesJson6902 into a JSONPatch expression: a
// list of JSONPatch operations, their paths and values with their
// variables.
func (c *jp) jsonPatch(text, path string) (ex, error) {
	var ops []jsonOp
	if strings.Contains(text, "{{") {
		// Kyverno substitutes the variables of the text first: each
		// becomes a placeholder the operations' strings resolve
		rendered, exprs, err := templateParts(text)
		if err != nil {
			return ex{}, at(path, err)
		}
		saved := c.dyn
		defer func() { c.dyn = saved }()
		c.dyn = map[string]jv{}
		for k, v := range saved {
			c.dyn[k] = v
		}
		for i, e := range exprs {
			v, err := c.template(e)
			if err != nil {
				return ex{}, at(path, err)
			}
			c.dyn[placeholder(i)] = v
		}
		text, _ = rendered.(string)
	}
	if err := yaml.Unmarshal([]byte(text), &ops); err != nil {
		return ex{}, unsupportedf("patchesJson6902", "at %s: %v", path, err)
	}
	var parts []ex
	var plain []ex
	for i, op := range ops {
		e, err := c.jsonOp(op)
		if err != nil {
			return ex{}, at(fmt.Sprintf("%s[%d]", path, i), err)
		}
		if e.single != nil {
			plain = append(plain, *e.single)
			continue
		}
		if len(plain) > 0 {
			parts = append(parts, patchList(plain))
			plain = nil
		}
		parts = append(parts, e.list)
	}
	if len(plain) > 0 {
		parts = append(parts, patchList(plain))
	}
	return joinPatches(parts), nil
}

// opList is a converted operation: a single JSONPatch, or a list
// expression (an add that creates its parents).
type opList struct {
	single *ex
	list   ex
}

// patchList is the list of patch operations, one per line.
func patchList(parts []ex) ex {
	strs := make([]string, len(parts))
	for i, p := range parts {
		strs[i] = p.s
	}
	s := "[" + strings.Join(strs, ", ") + "]"
	if len(s) > lineWidth {
		s = "[\n" + indent(strings.Join(strs, ",\n")) + "\n]"
	}
	return ex{s: s, prec: precPrimary}
}

// jsonOp converts one operation. An add whose parents are missing
// creates them, as Kyverno's JSON patches do.
func (c *jp) jsonOp(op jsonOp) (opList, error) {
	switch op.Op {
	case "add", "replace", "remove", "test", "move", "copy":
	default:
		return opList{}, unsupportedf("operation "+op.Op, "not an RFC 6902 operation")
	}
	p, err := c.str(op.Path)
	if err != nil {
		return opList{}, at("path", err)
	}
	fields := []string{"op: " + strLit(op.Op).s, "path: " + p.value(strLit("")).s}
	if op.From != "" {
		f, err := c.str(op.From)
		if err != nil {
			return opList{}, at("from", err)
		}
		fields = append(fields, "from: "+f.value(strLit("")).s)
	}
	var val ex
	if op.Op == "add" || op.Op == "replace" || op.Op == "test" {
		v, err := c.document(op.Value)
		if err != nil {
			return opList{}, at("value", err)
		}
		val = v.value(exNull)
		if v.t == tMap || v.t == tList || v.t == tAny {
			val = call("dyn", val)
		}
		fields = append(fields, "value: "+val.s)
	}
	single := typed("JSONPatch", fields)
	dynamic := strings.Contains(op.Path, "{{") || strings.Contains(op.Path, placeholderPrefix)
	if op.Op == "remove" && !dynamic {
		// Kyverno removes what is missing without an error
		segs := strings.Split(strings.TrimPrefix(op.Path, "/"), "/")
		for i := range segs {
			segs[i] = strings.ReplaceAll(strings.ReplaceAll(segs[i], "~1", "/"), "~0", "~")
		}
		if present, ok := pointerPresence(c.sc.object, segs); ok {
			return opList{list: cond(present, patchList([]ex{single}), listOf())}, nil
		}
	}
	if op.Op != "add" {
		return opList{single: &single}, nil
	}
	l, ok := c.addWithParents(op.Path, val, patchList([]ex{single}))
	if ok {
		return opList{list: l}, nil
	}
	ensure, ok := c.ensureParent(op.Path)
	if !ok {
		return opList{single: &single}, nil
	}
	if c.hoisted != nil {
		for _, h := range *c.hoisted {
			if h.s == ensure.s {
				return opList{single: &single}, nil
			}
		}
		*c.hoisted = append(*c.hoisted, ensure)
		return opList{single: &single}, nil
	}
	return opList{list: add(ensure, patchList([]ex{single}))}, nil
}

// ensureParent is, for an add whose last segment mixes text and a
// variable (kyverno.io~1image{{elementIndex}}), the operation that
// creates its parent when missing, as Kyverno's JSON patches do: an
// empty map (a list when the segment is an index), added when the
// parent is absent, nothing otherwise. Only a static parent directly
// under metadata, spec or template (which objects have), or at the root,
// is created; false otherwise.
func (c *jp) ensureParent(path string) (ex, bool) {
	raw := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(raw) < 2 {
		return ex{}, false
	}
	last := raw[len(raw)-1]
	if !strings.Contains(last, placeholderPrefix) || isIndex(last) || last == "-" {
		return ex{}, false
	}
	parent := make([]string, len(raw)-1)
	for i, r := range raw[:len(raw)-1] {
		if strings.Contains(r, placeholderPrefix) || strings.Contains(r, "{{") || isIndex(r) || r == "-" {
			return ex{}, false
		}
		parent[i] = strings.ReplaceAll(strings.ReplaceAll(r, "~1", "/"), "~0", "~")
	}
	if n := len(parent); n > 1 {
		if gp := parent[n-2]; gp != "metadata" && gp != "spec" && gp != "template" {
			return ex{}, false
		}
	}
	present, ok := pointerPresence(c.sc.object, parent)
	if !ok {
		return ex{}, false
	}
	segs := make([]pointerSeg, len(parent))
	for i, p := range parent {
		segs[i] = pointerSeg{static: p}
	}
	value := call("dyn", ex{s: "{}", prec: precPrimary})
	add := patchList([]ex{typed("JSONPatch", []string{"op: 'add'", "path: " + segPointer(segs).s, "value: " + value.s})})
	return cond(present, listOf(), add), true
}

// addWithParents is the add of value at path, or, when a parent is
// missing, the add of the first missing parent holding it (Kyverno's
// JSON patches create the parents of an add). A segment of the path may
// be one {{ }} (a foreach's elementIndex).
func (c *jp) addWithParents(path string, value, direct ex) (ex, bool) {
	segs, ok := c.pointerSegs(path)
	if !ok || len(segs) < 2 {
		return direct, false
	}
	out := direct
	changed := false
	// from the deepest parent up: when parent i is missing, add it
	// holding what is below (parents that objects always have are not
	// tested: spec, metadata, template, a list's element)
	wrapped := value
	for i := len(segs) - 1; i >= 1; i-- {
		if last := segs[i-1]; last.index() || last.static == "spec" || last.static == "metadata" || last.static == "template" {
			break
		}
		seg := segs[i]
		if seg.static == "-" || seg.index() {
			wrapped = call("dyn", listOf(wrapped))
		} else if seg.dyn == nil {
			wrapped = call("dyn", ex{s: "{" + strLit(seg.static).s + ": " + wrapped.s + "}", prec: precPrimary})
		} else {
			return direct, false
		}
		parent := segs[:i]
		present, ok := segPresence(c.sc.object, parent)
		if !ok {
			break
		}
		add := patchList([]ex{typed("JSONPatch", []string{"op: 'add'", "path: " + segPointer(parent).s, "value: " + wrapped.s})})
		out = cond(present, out, add)
		changed = true
	}
	return out, changed
}

// pointerSeg is a segment of a JSON pointer: static text, or the value
// of one {{ }}.
type pointerSeg struct {
	static string
	dyn    *jv
}

// index reports whether the segment is a list index.
func (s pointerSeg) index() bool {
	if s.dyn != nil {
		return s.dyn.t == tNumber
	}
	return isIndex(s.static)
}

// pointerSegs splits a JSON pointer whose {{ }} were replaced by
// placeholders; false when a segment mixes text and a placeholder.
func (c *jp) pointerSegs(path string) ([]pointerSeg, bool) {
	raw := strings.Split(strings.TrimPrefix(path, "/"), "/")
	out := make([]pointerSeg, len(raw))
	for i, r := range raw {
		if strings.Contains(r, placeholderPrefix) {
			v, ok := c.dyn[r]
			if !ok {
				return nil, false
			}
			out[i] = pointerSeg{dyn: &v}
			continue
		}
		if strings.Contains(r, "{{") {
			return nil, false
		}
		out[i] = pointerSeg{static: strings.ReplaceAll(strings.ReplaceAll(r, "~1", "/"), "~0", "~")}
	}
	return out, true
}

// segPresence tests that the value at a JSON pointer exists.
func segPresence(root ex, segs []pointerSeg) (ex, bool) {
	e := root.s
	for _, s := range segs {
		switch {
		case s.dyn != nil:
			e += "[?" + s.dyn.value(exNull).s + "]"
		case isIndex(s.static):
			e += "[?" + s.static + "]"
		case s.static == "-":
			return ex{}, false
		case isIdent(s.static):
			e += ".?" + s.static
		default:
			e += "[?" + strLit(s.static).s + "]"
		}
	}
	return method(ex{s: e, prec: precPrimary}, "hasValue"), true
}

// segPointer is the text of a JSON pointer as a CEL string.
func segPointer(segs []pointerSeg) ex {
	var parts []ex
	text := ""
	for _, s := range segs {
		text += "/"
		if s.dyn == nil {
			text += jsonPointerEscape(s.static)
			continue
		}
		parts = append(parts, strLit(text))
		text = ""
		v := s.dyn.value(exNull)
		if s.dyn.t != tString {
			v = call("string", v)
		}
		parts = append(parts, v)
	}
	if text != "" {
		parts = append(parts, strLit(text))
	}
	out := parts[0]
	for _, p := range parts[1:] {
		out = ex{s: out.s + " + " + p.at(precAdd), prec: precAdd}
	}
	return out
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func joinPointer(segs []string) string {
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = jsonPointerEscape(s)
	}
	return strings.Join(out, "/")
}

// pointerPresence tests that the value at a JSON pointer exists.
func pointerPresence(root ex, segs []string) (ex, bool) {
	e := root.s
	for _, s := range segs {
		switch {
		case isIndex(s):
			e += "[?" + s + "]"
		case s == "-":
			return ex{}, false
		case isIdent(s):
			e += ".?" + s
		default:
			e += "[?" + strLit(s).s + "]"
		}
	}
	return method(ex{s: e, prec: precPrimary}, "hasValue"), true
}

// foreachMut is a converted mutate foreach.
type foreachMut struct {
	mutation
	atomic bool
}

// foreachMutation converts a mutate foreach: its patch for each element
// that passes the preconditions. A strategic merge patch of the element
// (a keyed list element named by the element) becomes one patch of the
// selected elements; a patch that does not read the element applies once
// when an element is selected; a JSON patch is one list of operations.
func (c *jp) foreachMutation(fe *api.ForEachMutation, path string) (foreachMut, error) {
	if fe.ForEachMutation != nil || fe.PatchesJSON6902 != "" {
		e, err := c.foreachPatch(fe, 0, path)
		if err != nil {
			return foreachMut{}, err
		}
		return foreachMut{mutation: mutation{expr: e, note: "foreach patchesJson6902"}}, nil
	}
	if strings.Contains(fe.List, "{{") {
		return foreachMut{}, unsupportedf("foreach list", "at %s.list: variables in the list expression", path)
	}
	n, err := parseJMESPath(fe.List)
	if err != nil {
		return foreachMut{}, at(path+".list", err)
	}
	lv, err := c.node(n, jv{sym: symRoot}, needNullable)
	if err != nil {
		return foreachMut{}, at(path+".list", err)
	}
	listE := listOperand(lv)
	x := c.fresh(lv.key)
	defer c.release(x)
	raw, _ := json.Marshal(fe)
	idx := ""
	if strings.Contains(string(raw), "elementIndex") {
		idx = c.freshName("index")
		defer c.release(idx)
	}
	saved := c.sc
	c.sc = saved.child()
	defer func() { c.sc = saved }()
	el := jv{e: ident(x), t: lv.elem, key: singular(lv.key)}
	c.sc.names["element"], c.sc.names["element0"] = el, el
	if idx != "" {
		c.sc.names["elementIndex"] = jv{e: ident(idx), t: tNumber}
		c.sc.names["elementIndex0"] = jv{e: ident(idx), t: tNumber}
	}
	binds, err := c.localContext(fe.Context, path+".context")
	if err != nil {
		return foreachMut{}, err
	}
	pre := exTrue
	if fe.Preconditions != nil {
		b, err := readConditions(fe.Preconditions)
		if err != nil {
			return foreachMut{}, at(path+".preconditions", unsupportedf("conditions", "%v", err))
		}
		if pre, err = c.block(b, path+".preconditions"); err != nil {
			return foreachMut{}, err
		}
	}
	pre = binds(pre)
	if fe.PatchStrategicMerge != nil {
		res, err := c.smpRoot(fe.PatchStrategicMerge, path+".patchStrategicMerge")
		if err != nil {
			return foreachMut{}, err
		}
		return c.foreachApply(res, listE, x, idx, pre, binds, path)
	}
	return foreachMut{}, unsupportedf("foreach", "at %s: no patchStrategicMerge or patchesJson6902", path)
}

// joinForeachPatches joins the JSON patches of a rule's foreach entries
// into one list when the rule has a context: Kyverno computes the
// context once for the rule, where the variables of a MutatingPolicy
// are computed again on the object each mutation patched.
func joinForeachPatches(ms []mutation, context bool) []mutation {
	if !context || len(ms) < 2 {
		return ms
	}
	parts := make([]ex, len(ms))
	for i, m := range ms {
		if m.apply {
			return ms
		}
		parts[i] = m.expr
	}
	return []mutation{{expr: joinPatches(parts), note: "foreach patchesJson6902, one list (the rule's context is computed once, on the object before the patches)"}}
}

// foreachPatch converts a foreach of JSON patches (and the foreach
// nested in it, at depth+1) into the list of its operations: per
// selected element, in the foreach's order, the element's operations
// (its patch, then those of its nested foreach).
func (c *jp) foreachPatch(fe *api.ForEachMutation, depth int, path string) (ex, error) {
	if fe.PatchStrategicMerge != nil && fe.ForEachMutation != nil {
		return ex{}, unsupportedf("nested foreach", "at %s.foreach: beside a patchStrategicMerge", path)
	}
	if fe.PatchStrategicMerge != nil {
		return ex{}, unsupportedf("nested foreach", "at %s: a patchStrategicMerge in a nested foreach", path)
	}
	if strings.Contains(fe.List, "{{") {
		return ex{}, unsupportedf("foreach list", "at %s.list: variables in the list expression", path)
	}
	n, err := parseJMESPath(fe.List)
	if err != nil {
		return ex{}, at(path+".list", err)
	}
	lv, err := c.node(n, jv{sym: symRoot}, needNullable)
	if err != nil {
		return ex{}, at(path+".list", err)
	}
	listE := listOperand(lv)
	var hoisted []ex
	if c.hoisted == nil {
		// the parents the elements' adds need are created once, before
		// them: each element's operations are computed on the object
		// before any patch, so a parent created per element would be
		// replaced by the next one
		c.hoisted = &hoisted
		defer func() { c.hoisted = nil }()
	}
	x := c.fresh(lv.key)
	defer c.release(x)
	idx := c.freshName("index")
	defer c.release(idx)
	saved := c.sc
	c.sc = saved.child()
	defer func() { c.sc = saved }()
	el := jv{e: ident(x), t: lv.elem, key: singular(lv.key)}
	ix := jv{e: ident(idx), t: tNumber}
	c.sc.names["element"], c.sc.names["elementIndex"] = el, ix
	c.sc.names[fmt.Sprintf("element%d", depth)], c.sc.names[fmt.Sprintf("elementIndex%d", depth)] = el, ix
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
	pre = binds(pre)
	var parts []ex
	if fe.PatchesJSON6902 != "" {
		ops, err := c.jsonPatch(fe.PatchesJSON6902, path+".patchesJson6902")
		if err != nil {
			return ex{}, err
		}
		parts = append(parts, ops)
	}
	if fe.ForEachMutation != nil {
		var nested []api.ForEachMutation
		raw, _ := json.Marshal(fe.ForEachMutation)
		if err := json.Unmarshal(raw, &nested); err != nil {
			return ex{}, unsupportedf("nested foreach", "at %s.foreach: %v", path, err)
		}
		for i := range nested {
			e, err := c.foreachPatch(&nested[i], depth+1, fmt.Sprintf("%s.foreach[%d]", path, i))
			if err != nil {
				return ex{}, err
			}
			parts = append(parts, e)
		}
	}
	if len(parts) == 0 {
		return ex{}, unsupportedf("foreach", "at %s: no patchesJson6902 or foreach", path)
	}
	ops := binds(joinPatches(parts))
	var e ex
	if mentions(ops.s, idx) || mentions(pre.s, idx) {
		e = ex{s: listE.at(precPrimary) + ".transformList(" + idx + ", " + x + ", " + pre.s + ", " + ops.s + ")", prec: precPrimary}
	} else {
		e = macro(macro(listE, "filter", x, pre), "map", x, ops)
	}
	if fe.Order == nil || *fe.Order != api.Ascending {
		// upstream patches the elements from the last one, so that
		// removals keep the indexes of the others
		e = method(e, "reverse")
	}
	e = method(e, "flatten")
	if len(hoisted) > 0 {
		e = joinPatches(append(hoisted, e))
	}
	return e, nil
}

// liftElementMaps lifts the free maps (labels, annotations) of a patch
// whose entry reads the element into one map of every selected element's
// entry (transform.listObjToMap), when nothing else of the patch reads
// the element: each element's patch merges its entry.
func liftElementMaps(res smpResult, listE ex, x string, sel ex, binds func(ex) ex) (ex, bool) {
	if len(res.perElement) == 0 {
		return ex{}, false
	}
	selected := listE
	if !sel.isTrue() {
		selected = macro(listE, "filter", x, sel)
	}
	text := res.obj.s
	for _, m := range res.perElement {
		if len(m.keys) != 1 || !strings.Contains(text, m.text) {
			return ex{}, false
		}
		keys := macro(selected, "map", x, binds(ex{s: "{'key': " + m.keys[0].s + "}", prec: precPrimary}))
		vals := macro(selected, "map", x, binds(ex{s: "{'value': " + m.vals[0].s + "}", prec: precPrimary}))
		lifted := call("transform.listObjToMap", keys, vals, strLit("key"), strLit("value"))
		text = strings.Replace(text, m.text, lifted.s, 1)
	}
	if !onlyInLifted(text, x) {
		return ex{}, false
	}
	return ex{s: text, prec: res.obj.prec}, true
}

// onlyInLifted reports whether every use of x in text is inside a
// transform.listObjToMap call (the lifted maps bind x themselves).
func onlyInLifted(text, x string) bool {
	for {
		i := strings.Index(text, "transform.listObjToMap(")
		if i < 0 {
			return !mentions(text, x)
		}
		depth, j := 0, i+len("transform.listObjToMap")
		for ; j < len(text); j++ {
			if text[j] == '(' {
				depth++
			} else if text[j] == ')' {
				depth--
				if depth == 0 {
					break
				}
			}
		}
		if mentions(text[:i], x) {
			return false
		}
		if j >= len(text) {
			return true
		}
		text = text[j+1:]
	}
}

// foreachApply turns the strategic merge patch of one element into the
// patch of every selected element.
func (c *jp) foreachApply(res smpResult, listE ex, x, idx string, pre ex, binds func(ex) ex, path string) (foreachMut, error) {
	if idx != "" {
		return foreachMut{}, unsupportedf("elementIndex", "at %s: a strategic merge patch that reads the element's index", path)
	}
	if len(res.patches) > 0 {
		return foreachMut{}, unsupportedf("foreach patchStrategicMerge", "at %s: an atomic map (nodeSelector) patched per element", path)
	}
	sel := and(pre, res.cond, res.global)
	obj := binds(res.obj)
	if lifted, ok := liftList(res.obj, listE, x, sel, binds); ok {
		return foreachMut{mutation: mutation{apply: true, expr: lifted, note: "foreach patchStrategicMerge"}, atomic: res.atomic}, nil
	}
	if lifted, ok := liftFilters(res.obj, listE, x, sel, binds); ok {
		return foreachMut{mutation: mutation{apply: true, expr: lifted, note: "foreach patchStrategicMerge"}, atomic: res.atomic}, nil
	}
	if lifted, ok := liftElementMaps(res, listE, x, sel, binds); ok {
		return foreachMut{mutation: mutation{apply: true, expr: lifted, note: "foreach patchStrategicMerge"}, atomic: res.atomic}, nil
	}
	if !mentions(obj.s, x) {
		// the same patch whatever the element: once, when one is selected
		e := obj
		if !sel.isTrue() {
			e = cond(macro(listE, "exists", x, sel), obj, ex{s: "Object{}", prec: precPrimary})
		}
		return foreachMut{mutation: mutation{apply: true, expr: e, note: "foreach patchStrategicMerge"}, atomic: res.atomic}, nil
	}
	return foreachMut{}, unsupportedf("foreach patchStrategicMerge", "at %s: the patch reads the element outside a list it patches", path)
}

// mentions reports whether the expression s uses the identifier x.
func mentions(s, x string) bool {
	for i := 0; i+len(x) <= len(s); i++ {
		if s[i:i+len(x)] != x {
			continue
		}
		before := i == 0 || !isIdentByte(s[i-1]) && s[i-1] != '.'
		after := i+len(x) == len(s) || !isIdentByte(s[i+len(x)])
		if before && after {
			return true
		}
	}
	return false
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// liftList rewrites the one-element list literal of the patch that holds
// the element variable x into the list of the selected elements:
// [T{...x...}] becomes list.filter(x, sel).map(x, T{...x...}). The list
// literal is the innermost one that holds every use of x; bind wraps the
// element (the foreach's context entries).
func liftList(obj, list ex, x string, sel ex, bind func(ex) ex) (ex, bool) {
	s := obj.s
	at, end := -1, -1
	for i := 0; i < len(s); i++ {
		if s[i] != '[' {
			continue
		}
		e := matching(s, i)
		if e < 0 {
			return ex{}, false
		}
		if mentions(s[i+1:e], x) && !mentions(s[:i], x) && !mentions(s[e+1:], x) {
			// nested literals come later: the last one found is the
			// innermost
			at, end = i, e
		}
	}
	if at < 0 {
		return ex{}, false
	}
	elem := bind(ex{s: s[at+1 : end]})
	selected := list
	if !sel.isTrue() {
		selected = macro(list, "filter", x, bind(sel))
	}
	out := s[:at] + macro(selected, "map", x, elem).s + s[end+1:]
	return ex{s: out, prec: obj.prec}, true
}

// liftFilters rewrites a patch that reads the element x only in the
// predicates of filters (a condition anchor that selects the resource's
// elements by the foreach element: (name): "{{ element.name }}") into the
// patch of the resource's elements that some selected element selects:
// filter(v, P) becomes filter(v, list.exists(x, sel && P)).
func liftFilters(obj, list ex, x string, sel ex, bind func(ex) ex) (ex, bool) {
	s := obj.s
	var b, outside strings.Builder
	lifted := false
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], ".filter(")
		if j < 0 {
			b.WriteString(s[i:])
			outside.WriteString(s[i:])
			break
		}
		open := i + j + len(".filter")
		end := matching(s, open)
		comma := strings.IndexByte(s[open:], ',')
		if end < 0 || comma < 0 || open+comma > end {
			return ex{}, false
		}
		pred := strings.TrimSpace(s[open+comma+1 : end])
		head := s[i : open+comma+1]
		b.WriteString(head)
		outside.WriteString(head)
		if mentions(pred, x) {
			b.WriteString(" " + macro(list, "exists", x, bind(and(sel, ex{s: pred, prec: precCond}))).s)
			lifted = true
		} else {
			b.WriteString(" " + pred)
			outside.WriteString(pred)
		}
		b.WriteByte(')')
		outside.WriteByte(')')
		i = end + 1
	}
	if !lifted || mentions(outside.String(), x) {
		return ex{}, false
	}
	return ex{s: b.String(), prec: obj.prec}, true
}

// matching is the index of the bracket that closes the one at i.
func matching(s string, i int) int {
	depth := 0
	var quote byte
	for j := i; j < len(s); j++ {
		ch := s[j]
		if quote != 0 {
			switch ch {
			case '\\':
				j++
			case quote:
				quote = 0
			}
			continue
		}
		switch ch {
		case '\'', '"':
			quote = ch
		case '[', '(', '{':
			depth++
		case ']', ')', '}':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// joinPatches concatenates lists of JSON patch operations.
func joinPatches(ps []ex) ex {
	out := ps[0]
	for _, p := range ps[1:] {
		out = add(out, p)
	}
	return out
}

// mutationOut is a mutation as the API type.
func mutationOut(m mutation) admissionregistrationv1alpha1.Mutation {
	if m.apply {
		return admissionregistrationv1alpha1.Mutation{PatchType: admissionregistrationv1alpha1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregistrationv1alpha1.ApplyConfiguration{Expression: m.expr.s}}
	}
	return admissionregistrationv1alpha1.Mutation{PatchType: admissionregistrationv1alpha1.PatchTypeJSONPatch,
		JSONPatch: &admissionregistrationv1alpha1.JSONPatch{Expression: m.expr.s}}
}
