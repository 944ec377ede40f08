package engine

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/conditions"
)

// cond is one compiled condition.
type cond struct {
	key, value *tree
	op         conditions.Operator
	message    string
}

// condSet is a compiled any/all block (or the legacy list, held as all).
type condSet struct {
	any        []*cond
	all        []*cond
	anyPresent bool
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
				cs.anyPresent = true
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
	if len(errs) > 0 {
		return nil, errs
	}
	return &cond{key: key, value: value, op: op, message: c.Message}, nil
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
	if r.precondKey == "" || !sc.base || sc.gen != rs.gen {
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

type substituted struct {
	c          *cond
	key, value any
}

// substituteAll substitutes every condition of the block first, as
// upstream substitutes the whole block before evaluating it: an unresolved
// variable is an error even in a condition that would not be reached.
func (s *scope) substituteAll(list []*cond, out []substituted) ([]substituted, error) {
	for _, c := range list {
		key, err := s.substitute(c.key)
		if err != nil {
			return nil, err
		}
		value, err := s.substitute(c.value)
		if err != nil {
			return nil, err
		}
		out = append(out, substituted{c: c, key: key, value: value})
	}
	return out, nil
}

// holds evaluates a substituted condition; an operator error (a type
// mismatch) counts as false, as upstream logs it and returns false.
func (sc substituted) holds() bool {
	ok, err := conditions.Evaluate(sc.key, sc.c.op, sc.value)
	return err == nil && ok
}

// checkConditions evaluates an any/all block: every all condition and, when
// an any block is present, at least one of its conditions must hold. The
// returned message joins the messages of the conditions that failed.
func (s *scope) checkConditions(cs *condSet) (bool, string, error) {
	if cs == nil {
		return true, "", nil
	}
	// most blocks have a few conditions: substitute them on the stack
	var buf [8]substituted
	anyList, err := s.substituteAll(cs.any, buf[:0])
	if err != nil {
		return false, "", err
	}
	allList, err := s.substituteAll(cs.all, anyList[len(anyList):])
	if err != nil {
		return false, "", err
	}
	var msgs []string
	anyOK := true
	if cs.anyPresent {
		anyOK = false
		var anyMsgs []string
		for _, sc := range anyList {
			if sc.holds() {
				anyOK = true
				break
			}
			if sc.c.message != "" {
				anyMsgs = append(anyMsgs, sc.c.message)
			}
		}
		if !anyOK {
			msgs = append(msgs, anyMsgs...)
		}
	}
	allOK := true
	for _, sc := range allList {
		if !sc.holds() {
			allOK = false
			if sc.c.message != "" {
				msgs = append(msgs, sc.c.message)
			}
			break
		}
	}
	return anyOK && allOK, strings.Join(msgs, "; "), nil
}
