package migrate

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gavelpolicy/gavel/api"
)

// body is a converted rule body: it holds (does not fail) and it is
// skipped (a condition anchor, a foreach without elements that apply).
type body struct {
	holds, skip ex
}

// objectRef is the admitted object as a pattern's value.
func (c *jp) objectRef() vref {
	return vref{e: c.sc.object, present: exTrue, t: tMap}
}

// validateBody converts the body of a validate rule (every form but cel).
func (c *jp) validateBody(v *api.Validation, path string) (body, error) {
	switch {
	case v.PodSecurity != nil:
		return c.podSecurityBody(v.PodSecurity, path+".podSecurity")
	case v.Manifests != nil:
		return body{}, unsupportedf("validate.manifests", "at %s.manifests: signed manifests have no CEL policy type", path)
	case v.Assert != nil:
		return body{}, unsupportedf("validate.assert", "at %s.assert: kyverno-json assertions", path)
	case v.Pattern != nil:
		t, err := c.strictPattern(c.objectRef(), v.Pattern)
		if err != nil {
			return body{}, at(path+".pattern", err)
		}
		return body{holds: t.holds, skip: t.skip}, nil
	case v.AnyPattern != nil:
		return c.anyPattern(c.objectRef(), v.AnyPattern, path+".anyPattern")
	case v.Deny != nil:
		cond, err := c.denyConditions(v.Deny, path+".deny")
		if err != nil {
			return body{}, err
		}
		return body{holds: not(cond), skip: exFalse}, nil
	case len(v.ForEachValidation) > 0:
		return c.foreach(v.ForEachValidation, path+".foreach", 0)
	}
	return body{}, unsupportedf("validate", "at %s: no pattern, anyPattern, deny, foreach or cel", path)
}

// denyConditions converts a deny block: the condition that denies (no
// conditions deny everything).
func (c *jp) denyConditions(d *api.Deny, path string) (ex, error) {
	if d.Conditions == nil {
		return exTrue, nil
	}
	b, err := readConditions(d.Conditions)
	if err != nil {
		return ex{}, at(path+".conditions", unsupportedf("conditions", "%v", err))
	}
	return c.block(b, path+".conditions")
}

// anyPattern converts an anyPattern: it passes when one pattern passes,
// is skipped when every pattern is skipped.
func (c *jp) anyPattern(v vref, raw any, path string) (body, error) {
	list, ok := raw.([]any)
	if !ok {
		return body{}, unsupportedf("anyPattern", "at %s: not a list", path)
	}
	var passes, skips []ex
	for i, p := range list {
		t, err := c.pattern(v, p, "")
		if err != nil {
			return body{}, at(fmt.Sprintf("%s[%d]", path, i), err)
		}
		passes = append(passes, t.passes())
		skips = append(skips, t.skip)
	}
	pass := or(passes...)
	skip := and(skips...)
	if skip.isFalse() {
		return body{holds: pass, skip: exFalse}, nil
	}
	return body{holds: or(pass, skip), skip: and(not(pass), skip)}, nil
}

// foreach converts validate foreach declarations: every element of every
// list must hold; the rule is skipped when no element applied.
func (c *jp) foreach(list []api.ForEachValidation, path string, depth int) (body, error) {
	var holds, applied []ex
	for i, fe := range list {
		fpath := fmt.Sprintf("%s[%d]", path, i)
		h, a, err := c.foreachOne(&fe, fpath, depth)
		if err != nil {
			return body{}, err
		}
		holds = append(holds, h)
		applied = append(applied, a)
	}
	return body{holds: and(holds...), skip: not(or(applied...))}, nil
}

// foreachOne converts one foreach declaration: whether every element
// holds, and whether one applied.
func (c *jp) foreachOne(fe *api.ForEachValidation, path string, depth int) (holds, applied ex, err error) {
	if strings.Contains(fe.List, "{{") {
		return ex{}, ex{}, unsupportedf("foreach list", "at %s.list: variables in the list expression", path)
	}
	n, err := parseJMESPath(fe.List)
	if err != nil {
		return ex{}, ex{}, at(path+".list", err)
	}
	lv, err := c.node(n, jv{sym: symRoot}, needNullable)
	if err != nil {
		return ex{}, ex{}, at(path+".list", err)
	}
	if lv.sym != symNone {
		return ex{}, ex{}, unsupportedf("foreach list", "at %s.list: Kyverno's context itself", path)
	}
	listE := listOperand(lv)
	x := c.fresh(lv.key)
	defer c.release(x)
	raw, _ := json.Marshal(fe)
	withIndex := strings.Contains(string(raw), "elementIndex")
	idx := ""
	if withIndex {
		idx = c.freshName("index")
		defer c.release(idx)
	}
	saved := c.sc
	c.sc = saved.child()
	defer func() { c.sc = saved }()
	el := jv{e: ident(x), t: lv.elem, key: singular(lv.key)}
	c.sc.names["element"] = el
	c.sc.names[fmt.Sprintf("element%d", depth)] = el
	if withIndex {
		c.sc.names["elementIndex"] = jv{e: ident(idx), t: tNumber}
		c.sc.names[fmt.Sprintf("elementIndex%d", depth)] = jv{e: ident(idx), t: tNumber}
	}
	binds, err := c.localContext(fe.Context, path+".context")
	if err != nil {
		return ex{}, ex{}, err
	}
	pre := exTrue
	if fe.Preconditions != nil {
		b, err := readConditions(fe.Preconditions)
		if err != nil {
			return ex{}, ex{}, at(path+".preconditions", unsupportedf("conditions", "%v", err))
		}
		if pre, err = c.block(b, path+".preconditions"); err != nil {
			return ex{}, ex{}, err
		}
	}
	scoped := fe.ElementScope == nil || *fe.ElementScope
	target := c.objectRef()
	if scoped {
		target = vref{e: ident(x), present: exTrue, key: singular(lv.key), t: lv.elem}
	}
	var b body
	switch {
	case fe.Pattern != nil:
		t, err := c.strictPattern(target, fe.Pattern)
		if err != nil {
			return ex{}, ex{}, at(path+".pattern", err)
		}
		b = body{holds: t.holds, skip: t.skip}
	case fe.AnyPattern != nil:
		if b, err = c.anyPattern(target, fe.AnyPattern, path+".anyPattern"); err != nil {
			return ex{}, ex{}, err
		}
	case fe.Deny != nil:
		d, err := c.denyConditions(fe.Deny, path+".deny")
		if err != nil {
			return ex{}, ex{}, err
		}
		b = body{holds: not(d), skip: exFalse}
	case fe.ForEachValidation != nil:
		var nested []api.ForEachValidation
		data, _ := json.Marshal(fe.ForEachValidation)
		if err := json.Unmarshal(data, &nested); err != nil {
			return ex{}, ex{}, unsupportedf("foreach", "at %s.foreach: %v", path, err)
		}
		if b, err = c.foreach(nested, path+".foreach", depth+1); err != nil {
			return ex{}, ex{}, err
		}
	default:
		return ex{}, ex{}, unsupportedf("foreach", "at %s: no pattern, anyPattern, deny or foreach", path)
	}
	h := binds(or(not(pre), b.holds))
	a := binds(and(pre, not(b.skip)))
	if withIndex {
		return ex{s: listE.at(precPrimary) + ".all(" + idx + ", " + x + ", " + h.s + ")", prec: precPrimary},
			ex{s: listE.at(precPrimary) + ".exists(" + idx + ", " + x + ", " + a.s + ")", prec: precPrimary}, nil
	}
	applied = macro(listE, "exists", x, a)
	if a.isTrue() {
		applied = rel(call("size", listE), ">", numLit(0))
		if lv.nonEmpty && !lv.opt {
			applied = exTrue
		}
	}
	return macro(listE, "all", x, h), applied, nil
}

// localContext converts context entries that read a foreach element:
// they are bound around the expressions that use them (cel.bind).
func (c *jp) localContext(entries []api.ContextEntry, path string) (func(ex) ex, error) {
	type bound struct {
		name string
		e    ex
	}
	var bs []bound
	for i, ce := range entries {
		v, err := c.contextEntry(ce, fmt.Sprintf("%s[%d]", path, i))
		if err != nil {
			return nil, err
		}
		name := c.freshName(v.name)
		bs = append(bs, bound{name: name, e: v.expr})
		if c.pv != nil {
			c.pv.bind(c.rule, ce.Name, localBind{name: name, init: v.expr.s, imageData: v.key == imageDataKey})
		}
		c.sc.names[ce.Name] = jv{e: ident(name), t: v.t, elem: v.elem, key: v.key}
	}
	return func(e ex) ex {
		for i := len(bs) - 1; i >= 0; i-- {
			if !strings.Contains(e.s, bs[i].name) {
				continue
			}
			e = call("cel.bind", ident(bs[i].name), bs[i].e, e)
		}
		return e
	}, nil
}
