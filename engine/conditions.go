package engine

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/conditions"
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

func compileConditions(raw any, path *field.Path, errs field.ErrorList) (*condSet, field.ErrorList) {
	if raw == nil {
		return nil, errs
	}
	cs := &condSet{}
	compileList := func(list []any, name string, p *field.Path) []*cond {
		var out []*cond
		for i, item := range list {
			var c api.Condition
			if err := remarshal(item, &c); err != nil {
				errs = append(errs, field.Invalid(p.Index(i), item, err.Error()))
				continue
			}
			cc, cerrs := compileCondition(c, name, i, p.Index(i))
			errs = append(errs, cerrs...)
			if cc != nil {
				out = append(out, cc)
			}
		}
		return out
	}
	switch v := raw.(type) {
	case []any:
		cs.all = compileList(v, "", path)
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
				cs.any = compileList(list, "any", path.Child("any"))
			case "all":
				cs.all = compileList(list, "all", path.Child("all"))
			default:
				errs = append(errs, field.Invalid(path.Child(k), k, "only any and all are allowed"))
			}
		}
	default:
		errs = append(errs, field.Invalid(path, raw, "conditions must be a list or an object with any/all"))
	}
	return cs, errs
}

func compileCondition(c api.Condition, block string, i int, path *field.Path) (*cond, field.ErrorList) {
	var errs field.ErrorList
	op, err := conditions.ParseOperator(c.Operator)
	if err != nil {
		errs = append(errs, field.Invalid(path.Child("operator"), c.Operator, "entered value of `operator` is invalid"))
	}
	base := fmt.Sprintf("/%d", i)
	if block != "" {
		base = "/" + block + base
	}
	key, err := compileTree(c.Key, base+"/key")
	if err != nil {
		errs = append(errs, field.Invalid(path.Child("key"), c.Key, err.Error()))
	}
	value, err := compileTree(c.Value, base+"/value")
	if err != nil {
		errs = append(errs, field.Invalid(path.Child("value"), c.Value, err.Error()))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return &cond{key: key, value: value, op: op, message: c.Message}, nil
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
	anyList, err := s.substituteAll(cs.any, nil)
	if err != nil {
		return false, "", err
	}
	allList, err := s.substituteAll(cs.all, nil)
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
