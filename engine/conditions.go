package engine

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/conditions"
	"github.com/gavelpolicy/gavel/internal/variables"
)

// cond is one compiled condition.
type cond struct {
	key, value *tree
	op         conditions.Operator
	message    string
	// msg is message compiled (nil when empty): deny messages substitute
	// the variables of the messages of the conditions that held
	msg *template
}

// condSet is a compiled any/all block (or the legacy list, held as all).
type condSet struct {
	any        []*cond
	all        []*cond
	anyPresent bool
	// legacy: the list form (upstream joins its messages with ";")
	legacy bool
	// exception: a PolicyException's conditions, evaluated in upstream's
	// order for them (see evaluateException)
	exception bool
}

func (e *Engine) compileConditions(raw any, path *field.Path, errs field.ErrorList) (*condSet, field.ErrorList) {
	if raw == nil {
		return nil, errs
	}
	cs := &condSet{}
	conditionList := func(list []any, name string, p *field.Path) []*cond {
		var out []*cond
		for i, item := range list {
			var c api.Condition
			if err := remarshal(item, &c); err != nil {
				errs = append(errs, field.Invalid(p.Index(i), item, err.Error()))
				continue
			}
			cc, cerrs := e.compileCondition(c, name, i, p.Index(i))
			errs = append(errs, cerrs...)
			if cc != nil {
				out = append(out, cc)
			}
		}
		return out
	}
	switch v := raw.(type) {
	case []any:
		cs.legacy = true
		cs.all = conditionList(v, "", path)
	case map[string]any:
		for k, x := range v {
			list, ok := x.([]any)
			if !ok && x != nil {
				errs = append(errs, field.Invalid(path.Child(k), x, "expected a list of conditions"))
				continue
			}
			switch k {
			case "any":
				// any: null is no any block (upstream decodes it to nil)
				cs.anyPresent = x != nil
				cs.any = conditionList(list, "any", path.Child("any"))
			case "all":
				cs.all = conditionList(list, "all", path.Child("all"))
			default:
				errs = append(errs, field.Invalid(path.Child(k), k, "only any and all are allowed"))
			}
		}
	default:
		errs = append(errs, field.Invalid(path, raw, "conditions must be a list or an object with any/all"))
	}
	return cs, errs
}

func (e *Engine) compileCondition(c api.Condition, block string, i int, path *field.Path) (*cond, field.ErrorList) {
	var errs field.ErrorList
	op, err := conditions.ParseOperator(c.Operator)
	if err != nil {
		errs = append(errs, field.Invalid(path.Child("operator"), c.Operator, "entered value of `operator` is invalid"))
	}
	base := fmt.Sprintf("/%d", i)
	if block != "" {
		base = "/" + block + base
	}
	key, err := e.compileTree(c.Key, base+"/key")
	if err != nil {
		errs = append(errs, field.Invalid(path.Child("key"), c.Key, err.Error()))
	}
	value, err := e.compileTree(c.Value, base+"/value")
	if err != nil {
		errs = append(errs, field.Invalid(path.Child("value"), c.Value, err.Error()))
	}
	var msg *template
	if c.Message != "" {
		if msg, err = e.compileTemplate(c.Message); err != nil {
			errs = append(errs, field.Invalid(path.Child("message"), c.Message, err.Error()))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return &cond{key: key, value: value, op: op, message: c.Message, msg: msg}, nil
}

// conditionsKey returns the text of a conditions block whose outcome on a
// rule's initial variables depends only on them: every expression is pure
// (no clock, no randomness) and has no inner expressions. Otherwise, or
// for no block, it returns "".
func (e *Engine) conditionsKey(raw any, cs *condSet) string {
	if raw == nil || cs == nil {
		return ""
	}
	for _, list := range [][]*cond{cs.any, cs.all} {
		for _, c := range list {
			for _, t := range []*tree{c.key, c.value} {
				if t == nil {
					continue
				}
				for _, v := range t.Variables() {
					if v.Nested {
						return ""
					}
					q, err := e.jp.Compile(v.Expression)
					if err != nil || !q.Pure() {
						return ""
					}
				}
			}
		}
	}
	raw2, err := json.Marshal(raw)
	if err != nil {
		return ""
	}
	return string(raw2)
}

// rulePreconditions checks the rule's preconditions. A block that only
// reads the request (see conditionsKey), checked on a scope that holds
// only the request's variables, gives the same outcome for every rule of
// the request with the same block: it is evaluated once.
func (rs *reqState) rulePreconditions(sc *scope, r *rule) (bool, string, error) {
	if r.precondKey == "" || !sc.base || sc.gen != rs.gen || len(sc.deferred) > 0 {
		return sc.checkConditions(r.preconditions)
	}
	for i := range rs.condMemo {
		if m := &rs.condMemo[i]; m.key == r.precondKey {
			return m.passed, m.msg, m.err
		}
	}
	passed, msg, err := sc.checkConditions(r.preconditions)
	if len(rs.condMemo) < maxMemo {
		rs.condMemo = append(rs.condMemo, condMemo{key: r.precondKey, passed: passed, msg: msg, err: err})
	}
	return passed, msg, err
}

// condMemo is the remembered outcome of a preconditions block.
type condMemo struct {
	key    string
	passed bool
	msg    string
	err    error
}

// denyMessage renders upstream's message for deny conditions that held
// (getDenyMessage): the block's message (nil: none) and the messages of
// the conditions that held, joined with "; ", their variables substituted
// as one string; def when there are none. When a substitution fails, the
// conditions' messages as written; when the whole text is one variable
// whose value is not a string, upstream's text for that. ok is false when
// there is no message: the caller's default applies.
func (s *scope) denyMessage(msg *template, held condMessages) (text string, ok bool) {
	n := len(held.conds)
	if msg != nil {
		n++
	}
	if n == 0 {
		return "", false
	}
	if n == 1 {
		// most deny blocks: the rule's message alone
		t := msg
		if t == nil {
			t = held.conds[0].msg
		}
		if text, ok := t.Literal(); ok {
			return text, true
		}
		v, err := t.Render(s, s.evalOpts()...)
		if err != nil {
			return held.raw(), true
		}
		if text, ok := v.(string); ok {
			return text, true
		}
		return "the produced message didn't resolve to a string, check your policy definition.", true
	}
	out := make([]byte, 0, 64)
	for i := 0; i < n; i++ {
		t := msg
		switch {
		case msg == nil:
			t = held.conds[i].msg
		case i > 0:
			t = held.conds[i-1].msg
		}
		if i == 1 && msg != nil {
			out = append(out, "; "...)
		} else if i > 0 {
			out = append(out, held.sep...)
		}
		if text, ok := t.Literal(); ok {
			out = append(out, text...)
			continue
		}
		v, err := t.Render(s, s.evalOpts()...)
		if err != nil {
			return held.raw(), true
		}
		if out, err = variables.AppendText(out, v); err != nil {
			return held.raw(), true
		}
	}
	return string(out), true
}

// substituted is a condition with its key and value substituted.
type substituted struct {
	key, value any
}

// substitute substitutes a condition's key and value, as upstream's
// Evaluate does just before evaluating it.
func (s *scope) substituteCond(c *cond) (substituted, error) {
	key, err := s.substitute(c.key)
	if err != nil {
		return substituted{}, fmt.Errorf("failed to substitute variables in condition key: %w", err)
	}
	value, err := s.substitute(c.value)
	if err != nil {
		return substituted{}, fmt.Errorf("failed to substitute variables in condition value: %w", err)
	}
	return substituted{key: key, value: value}, nil
}

// holds evaluates a substituted condition; an operator error (a type
// mismatch) counts as false, as upstream logs it and returns false.
func (c *cond) holds(sub substituted) bool {
	ok, err := conditions.Evaluate(sub.key, c.op, sub.value)
	return err == nil && ok
}

// checkConditions evaluates an any/all block one condition at a time, as
// upstream has done since v1.10: each condition is substituted just
// before it is evaluated, the any block stops at its first condition that
// holds, the all block at its first that does not, so a variable in a
// condition never reached is never resolved. A substitution error in a
// condition reached is the block's error.
//
// Rule blocks (preconditions, deny conditions) evaluate the any block,
// then the all block, and hold when at least one any condition holds (when
// the any block is present) and every all condition holds. The returned
// message joins the messages of the conditions that held when the block
// holds, of those that did not otherwise (upstream's), as written.
// Exception blocks (spec.conditions of a PolicyException) evaluate the
// all block first and the any block only when it held; an absent or empty
// any block holds.
func (s *scope) checkConditions(cs *condSet) (bool, string, error) {
	ok, msgs, err := s.checkConditionsMessages(cs)
	return ok, msgs.raw(), err
}

// checkConditionsMessages is checkConditions with the conditions whose
// messages the outcome carries, for callers that render them.
func (s *scope) checkConditionsMessages(cs *condSet) (bool, condMessages, error) {
	if cs == nil {
		return true, condMessages{}, nil
	}
	return cs.evaluate(func(c *cond) (bool, error) {
		sub, err := s.substituteCond(c)
		if err != nil {
			return false, err
		}
		return c.holds(sub), nil
	})
}

// condMessages are the conditions (with a message) an outcome reports.
type condMessages struct {
	conds []*cond
	sep   string
}

// raw joins the messages as written.
func (m condMessages) raw() string {
	switch len(m.conds) {
	case 0:
		return ""
	case 1:
		return m.conds[0].message
	}
	parts := make([]string, len(m.conds))
	for i, c := range m.conds {
		parts[i] = c.message
	}
	return strings.Join(parts, m.sep)
}

// checkConditionsEagerly evaluates blocks after substituting every
// condition of every block, as upstream's attestation conditions do
// (SubstituteAllInConditions, then EvaluateAnyAllConditions): an
// unresolved variable is an error even in a condition that is not
// reached. The blocks hold when each holds, evaluated in order up to the
// first that does not.
func (s *scope) checkConditionsEagerly(blocks []*condSet) (bool, error) {
	subs := make(map[*cond]substituted)
	for _, cs := range blocks {
		if cs == nil {
			continue
		}
		for _, list := range [][]*cond{cs.any, cs.all} {
			for _, c := range list {
				key, err := s.substitute(c.key)
				if err != nil {
					return false, err
				}
				value, err := s.substitute(c.value)
				if err != nil {
					return false, err
				}
				subs[c] = substituted{key: key, value: value}
			}
		}
	}
	holds := func(c *cond) (bool, error) { return c.holds(subs[c]), nil }
	for _, cs := range blocks {
		if cs == nil {
			continue
		}
		ok, _, err := cs.evaluate(holds)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// evaluate decides the block, asking holds about each condition reached.
func (cs *condSet) evaluate(holds func(*cond) (bool, error)) (bool, condMessages, error) {
	if cs.exception {
		ok, err := cs.evaluateException(holds)
		return ok, condMessages{}, err
	}
	var trueMsgs, falseMsgs []*cond
	note := func(c *cond, ok bool) {
		switch {
		case c.message == "":
		case ok:
			trueMsgs = append(trueMsgs, c)
		default:
			falseMsgs = append(falseMsgs, c)
		}
	}
	anyOK := true
	if cs.anyPresent {
		anyOK = false
		for _, c := range cs.any {
			ok, err := holds(c)
			if err != nil {
				return false, condMessages{}, err
			}
			note(c, ok)
			if ok {
				anyOK = true
				break
			}
		}
	}
	allOK := true
	for _, c := range cs.all {
		ok, err := holds(c)
		if err != nil {
			return false, condMessages{}, err
		}
		note(c, ok)
		if !ok {
			allOK = false
			break
		}
	}
	if anyOK && allOK {
		sep := "; "
		if cs.legacy {
			// upstream's evaluateOldConditions joins with ";"
			sep = ";"
		}
		return true, condMessages{conds: trueMsgs, sep: sep}, nil
	}
	return false, condMessages{conds: falseMsgs, sep: "; "}, nil
}

// evaluateException is upstream's CheckAnyAllConditions (PolicyException
// conditions): every all condition, then the any conditions up to the
// first that holds; no any condition is needed.
func (cs *condSet) evaluateException(holds func(*cond) (bool, error)) (bool, error) {
	for _, c := range cs.all {
		if ok, err := holds(c); err != nil || !ok {
			return false, err
		}
	}
	for _, c := range cs.any {
		if ok, err := holds(c); err != nil || ok {
			return ok && err == nil, err
		}
	}
	return len(cs.any) == 0, nil
}
