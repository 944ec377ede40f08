package migrate

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/conditions"
	"github.com/gavelpolicy/gavel/internal/quantity"
)

// condBlock is a block of conditions: every condition of all, and at
// least one of any when any is given.
type condBlock struct {
	any, all   []api.Condition
	anyPresent bool
}

// readConditions reads a preconditions or conditions value: the list
// form (all) or the any/all object.
func readConditions(raw any) (*condBlock, error) {
	if raw == nil {
		return nil, nil
	}
	b := &condBlock{}
	read := func(x any) ([]api.Condition, error) {
		if x == nil {
			return nil, nil
		}
		data, err := json.Marshal(x)
		if err != nil {
			return nil, err
		}
		var out []api.Condition
		if err := json.Unmarshal(data, &out); err != nil {
			return nil, fmt.Errorf("expected a list of conditions: %w", err)
		}
		return out, nil
	}
	switch v := raw.(type) {
	case []any:
		all, err := read(v)
		if err != nil {
			return nil, err
		}
		b.all = all
	case map[string]any:
		for k, x := range v {
			list, err := read(x)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			switch k {
			case "any":
				b.any, b.anyPresent = list, x != nil
			case "all":
				b.all = list
			default:
				return nil, fmt.Errorf("%s: only any and all are allowed", k)
			}
		}
	default:
		return nil, fmt.Errorf("conditions must be a list or an object with any and all")
	}
	return b, nil
}

func blockOf(c *api.AnyAllConditions) *condBlock {
	if c == nil {
		return nil
	}
	return &condBlock{any: c.AnyConditions, all: c.AllConditions, anyPresent: c.AnyConditions != nil}
}

// block converts a block into the CEL expression that holds when it does.
// path is the block's field path, for problems.
func (c *jp) block(b *condBlock, path string) (ex, error) {
	if b == nil {
		return exTrue, nil
	}
	var all []ex
	for i, cd := range b.all {
		e, err := c.condition(cd)
		if err != nil {
			return ex{}, at(fmt.Sprintf("%s.all[%d]", path, i), err)
		}
		all = append(all, e)
	}
	if b.anyPresent {
		var anyOf []ex
		for i, cd := range b.any {
			e, err := c.condition(cd)
			if err != nil {
				return ex{}, at(fmt.Sprintf("%s.any[%d]", path, i), err)
			}
			anyOf = append(anyOf, e)
		}
		all = append(all, or(anyOf...))
		if len(anyOf) == 0 {
			all = append(all, exFalse)
		}
	}
	return and(all...), nil
}

// operand converts a condition's key or value: a string with {{ }}, or
// a JSON value (whose strings may hold {{ }} too).
func (c *jp) operand(x any) (jv, bool, error) {
	switch v := x.(type) {
	case string:
		if !strings.Contains(v, "{{") {
			return literal(v), true, nil
		}
		out, err := c.str(v)
		return out, false, err
	case []any:
		static := true
		parts := make([]ex, len(v))
		for i, e := range v {
			o, s, err := c.operand(e)
			if err != nil {
				return jv{}, false, err
			}
			static = static && s
			parts[i] = o.value(exNull)
		}
		if static {
			return literal(v), true, nil
		}
		return jv{e: listOf(parts...), t: tList}, false, nil
	case map[string]any:
		data, _ := json.Marshal(v)
		if strings.Contains(string(data), "{{") {
			return jv{}, false, unsupportedf("condition", "a map holding variables")
		}
		return literal(v), true, nil
	}
	return literal(normalizeNumber(x)), true, nil
}

// normalizeNumber reads the Go number types as float64.
func normalizeNumber(x any) any {
	switch t := x.(type) {
	case int:
		return float64(t)
	case int64:
		return float64(t)
	case json.Number:
		f, _ := t.Float64()
		return f
	}
	return x
}

// condition converts one condition.
func (c *jp) condition(cd api.Condition) (ex, error) {
	op, err := conditions.ParseOperator(cd.Operator)
	if err != nil {
		return ex{}, unsupportedf("operator "+cd.Operator, "unknown")
	}
	key, _, err := c.operand(cd.Key)
	if err != nil {
		return ex{}, at("key", err)
	}
	value, static, err := c.operand(cd.Value)
	if err != nil {
		return ex{}, at("value", err)
	}
	switch op {
	case conditions.Equals:
		return equalsCond(key, value, static), nil
	case conditions.NotEquals:
		return not(equalsCond(key, value, static)), nil
	case conditions.AnyIn, conditions.AllIn, conditions.AnyNotIn, conditions.AllNotIn, conditions.In, conditions.NotIn:
		return c.setCond(key, op, value, static, cd.Value, literalPattern(cd.Key))
	case conditions.GreaterThan, conditions.GreaterThanOrEquals, conditions.LessThan, conditions.LessThanOrEquals:
		return orderCond(key, op, value, static, cd.Value)
	case conditions.DurationGreaterThan, conditions.DurationGreaterThanOrEquals, conditions.DurationLessThan, conditions.DurationLessThanOrEquals:
		return durationCond(key, op, value)
	}
	return ex{}, unsupportedf("operator "+cd.Operator, "no CEL form")
}

// textOf is a key as the set operators compare it: its text.
func textOf(k jv) ex {
	switch k.t {
	case tString:
		return k.value(exNull)
	case tNumber, tBool:
		return call("string", k.value(exNull))
	}
	return k.value(exNull)
}

// equalsCond converts key Equals value: wildcards in a literal string
// value, quantities and durations compared by value.
func equalsCond(key, value jv, static bool) ex {
	k := key.value(exNull)
	if static {
		if s, ok := value.staticString(); ok {
			switch {
			case isQuantityText(s):
				return and(call("isQuantity", k), rel(method(call("quantity", k), "compareTo", call("quantity", strLit(s))), "==", numLit(0)))
			case isDurationText(s) && key.t != tString:
				return rel(call("duration", k), "==", call("duration", strLit(s)))
			case hasWildcard(s):
				if key.t == tString {
					return wildcardMatch(k, s)
				}
				return wildcardMatch(call("string", k), s)
			}
			if key.t == tNumber {
				if f, err := strconv.ParseFloat(s, 64); err == nil {
					return rel(k, "==", numLit(f))
				}
			}
		}
		if key.opt {
			return equality(key, "==", value)
		}
	}
	if !static && key.t == tString && !key.opt && (value.t == tString || value.t == tAny) {
		return dynWildcardMatch(k, value.value(exNull), value.t == tString)
	}
	if !static && key.t == tNumber && !key.opt && (value.t == tString || value.t == tAny) {
		// Kyverno reads a string value as the number it writes
		v := ident("value")
		parsed := and(method(v, "matches", strLit(numberRE)),
			rel(call("double", v), "==", call("double", k)))
		if value.t == tString {
			return call("cel.bind", v, value.value(exNull), parsed)
		}
		return call("cel.bind", v, value.value(exNull), cond(rel(call("type", v), "==", ident("string")), parsed, rel(k, "==", v)))
	}
	return rel(k, "==", value.value(exNull))
}

// dynWildcardMatch is key Equals a value known only at evaluation: Kyverno
// matches a string key against the value as a wildcard pattern, so the
// pattern becomes an anchored regular expression, its text quoted
// (\Q...\E) and its wildcards * and ? left out of the quotes.
func dynWildcardMatch(k, v ex, isString bool) ex {
	p := ident("pattern")
	re := method(method(method(p, "replace", strLit(`\E`), strLit(`\E\\E\Q`)),
		"replace", strLit("*"), strLit(`\E.*\Q`)), "replace", strLit("?"), strLit(`\E.\Q`))
	match := cond(or(method(p, "contains", strLit("*")), method(p, "contains", strLit("?"))),
		method(k, "matches", add(add(strLit(`^\Q`), re), strLit(`\E$`))),
		rel(k, "==", p))
	if !isString {
		// a value that is no string is never equal to a string key
		match = and(rel(call("type", p), "==", ident("string")), match)
	}
	return call("cel.bind", p, v, match)
}

// staticString is the text of a literal string.
func (v jv) staticString() (string, bool) {
	if v.t != tString || !isStringLiteral(v.e.s) {
		return "", false
	}
	return unquote(v.e.s), true
}

// isQuantityText reports a value Kyverno compares as a quantity: one
// with a unit (a plain number compares as a number).
func isQuantityText(s string) bool {
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return false
	}
	_, ok := quantity.Parse(s)
	return ok
}

// durationRE is a Go duration with a unit.
var durationRE = regexp.MustCompile(`^[-+]?([0-9]*(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$`)

func isDurationText(s string) bool {
	if !durationRE.MatchString(s) {
		return false
	}
	_, err := time.ParseDuration(s)
	return err == nil
}

// literalPattern is a condition's key when it is a literal string with
// wildcards, else "".
func literalPattern(key any) string {
	if s, ok := key.(string); ok && !strings.Contains(s, "{{") && hasWildcard(s) {
		return s
	}
	return ""
}

// setCond converts the set operators. pattern, when set, is the key: a
// literal with wildcards, which Kyverno matches against each element of
// the value.
func (c *jp) setCond(key jv, op conditions.Operator, value jv, static bool, raw any, pattern string) (ex, error) {
	not := op == conditions.AnyNotIn || op == conditions.AllNotIn || op == conditions.NotIn
	all := op == conditions.AllIn || op == conditions.AllNotIn || op == conditions.In || op == conditions.NotIn
	if op == conditions.NotIn {
		all = false
	}
	inValue, err := c.member(value, static, raw, pattern)
	if err != nil {
		return ex{}, err
	}
	bind := memberBinding(value, static)
	member := inValue
	if static && wildcardKeys[key.key] {
		// Kyverno matches wildcards in the key too: RBAC rules say "*"
		member = func(k ex) ex { return or(rel(k, "==", strLit("*")), inValue(k)) }
	}
	if key.t != tList && !(key.t == tAny && key.opt) {
		in := member(textOf(key))
		if key.t == tAny {
			// a key of unknown type: a list is compared element by element
			v := c.freshName("x")
			defer c.release(v)
			kv := key.value(exNull)
			el := jv{e: ident(v)}
			listCase := listCond(kv, v, member(textOf(el)), all, not)
			return bind(cond(rel(call("type", kv), "==", ident("list")), listCase, negIf(in, not))), nil
		}
		return bind(negIf(in, not)), nil
	}
	v := c.fresh(key.key)
	defer c.release(v)
	el := jv{e: ident(v), t: key.elem}
	return bind(listCond(listOperand(key), v, member(textOf(el)), all, not)), nil
}

func negIf(e ex, n bool) ex {
	if n {
		return not(e)
	}
	return e
}

// listCond is the set operator on a list key: Any (exists) or All, of
// elements in or not in the value.
func listCond(list ex, v string, in ex, all, not bool) ex {
	body := negIf(in, not)
	if all {
		return macro(list, "all", v, body)
	}
	return macro(list, "exists", v, body)
}

// member returns the test that a text is in a condition's value: a list
// (wildcards), a single string, a range "a-b" or a JSON list in a string.
// With a pattern (a literal key with wildcards) and a value read at run
// time, an element is in when the pattern matches it, as Kyverno's set
// operators match (its other direction, an element with wildcards that
// matches the key, is not: a value read from a resource holds text).
func (c *jp) member(value jv, static bool, raw any, pattern string) (func(ex) ex, error) {
	if static {
		var items []string
		switch v := raw.(type) {
		case []any:
			for _, x := range v {
				s, err := textValue(x)
				if err != nil {
					return nil, err
				}
				items = append(items, s)
			}
		case string:
			if lo, hi, ok := numericRange(v); ok {
				return func(k ex) ex {
					n := call("double", k)
					return and(rel(n, ">=", numLit(lo)), rel(n, "<=", numLit(hi)))
				}, nil
			}
			var list []string
			if json.Valid([]byte(v)) {
				if err := json.Unmarshal([]byte(v), &list); err != nil {
					return nil, unsupportedf("condition value", "JSON that is not a list of strings")
				}
				items = list
			} else {
				items = []string{v}
			}
		default:
			s, err := textValue(raw)
			if err != nil {
				return nil, err
			}
			items = []string{s}
		}
		return func(k ex) ex { return inItems(k, items) }, nil
	}
	list := value.value(exNull)
	if value.t == tList {
		if value.elem == tBool || value.elem == tNumber {
			// Kyverno compares the texts of the value's elements
			v := c.freshName("v")
			list = macro(list, "map", v, call("string", ident(v)))
			c.release(v)
		}
		if pattern != "" {
			return c.patternIn(list, pattern), nil
		}
		return func(k ex) ex { return rel(k, "in", list) }, nil
	}
	// a string value is a JSON list of strings, or the string itself; a
	// null value holds nothing (Kyverno answers false for In and NotIn
	// alike: see setCond)
	name := ident("set")
	set := cond(method(name, "startsWith", strLit("[")), call("json.unmarshal", name), listOf(name))
	if value.t != tString {
		set = cond(rel(call("type", name), "==", ident("string")), call("dyn", set), call("dyn", name))
	}
	if pattern != "" {
		return c.patternIn(set, pattern), nil
	}
	return func(k ex) ex { return rel(k, "in", set) }, nil
}

// patternIn tests that the wildcard pattern matches an element (its
// text) of the list.
func (c *jp) patternIn(list ex, pattern string) func(ex) ex {
	return func(ex) ex {
		v := c.freshName("e")
		defer c.release(v)
		return macro(list, "exists", v, wildcardMatch(call("string", ident(v)), pattern))
	}
}

// memberBinding binds the set a dynamic value stands for around a set
// condition (see member): a null value makes the condition false.
func memberBinding(value jv, static bool) func(ex) ex {
	if static || value.t == tList {
		return func(e ex) ex { return e }
	}
	v := value.value(exNull)
	if value.t == tString && !value.opt && !mentions(v.s, "null") {
		// a string read strictly is never null
		return func(e ex) ex { return call("cel.bind", ident("set"), v, e) }
	}
	return func(e ex) ex {
		return call("cel.bind", ident("set"), v, and(rel(nullable(ident("set"), value), "!=", exNull), e))
	}
}

// nullable is e, whose value v is, in a form CEL compares with null: a
// value of a known JSON type (a string, a number) is dyn for it.
func nullable(e ex, v jv) ex {
	switch v.t {
	case tString, tNumber, tBool, tList, tMap:
		return call("dyn", e)
	}
	return e
}

// textValue is the text of a scalar in a condition's value.
func textValue(x any) (string, error) {
	switch t := normalizeNumber(x).(type) {
	case string:
		return t, nil
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), nil
	case bool:
		return strconv.FormatBool(t), nil
	}
	return "", unsupportedf("condition value", "a list element that is not a scalar")
}

// inItems tests k against literal items, with their wildcards.
func inItems(k ex, items []string) ex {
	var plain []ex
	var tests []ex
	for _, it := range items {
		if hasWildcard(it) {
			tests = append(tests, wildcardMatch(k, it))
		} else {
			plain = append(plain, strLit(it))
		}
	}
	var out []ex
	switch len(plain) {
	case 0:
	case 1:
		out = append(out, rel(k, "==", plain[0]))
	default:
		out = append(out, rel(k, "in", listOf(plain...)))
	}
	return or(append(out, tests...)...)
}

// numericRange reads "a-b" with numbers a and b.
func numericRange(s string) (float64, float64, bool) {
	m := regexp.MustCompile(`^(-?[0-9]+(?:\.[0-9]+)?)-(-?[0-9]+(?:\.[0-9]+)?)$`).FindStringSubmatch(s)
	if m == nil {
		return 0, 0, false
	}
	lo, _ := strconv.ParseFloat(m[1], 64)
	hi, _ := strconv.ParseFloat(m[2], 64)
	return lo, hi, true
}

// orderCond converts GreaterThan and its siblings: quantities and
// durations by value, else numbers.
func orderCond(key jv, op conditions.Operator, value jv, static bool, raw any) (ex, error) {
	ops := map[conditions.Operator]string{conditions.GreaterThan: ">", conditions.GreaterThanOrEquals: ">=",
		conditions.LessThan: "<", conditions.LessThanOrEquals: "<="}
	o := ops[op]
	k := key.value(exNull)
	if static {
		if s, ok := value.staticString(); ok {
			switch {
			case isDurationText(s):
				return rel(call("duration", k), o, call("duration", strLit(s))), nil
			case isQuantityText(s):
				return rel(method(call("quantity", k), "compareTo", call("quantity", strLit(s))), o, numLit(0)), nil
			}
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				value = jv{e: numLit(f), t: tNumber}
			} else {
				return ex{}, unsupportedf("condition value", "%q is neither a number, a quantity nor a duration", s)
			}
		}
	}
	if s, ok := key.staticString(); ok && !static {
		// a literal key: its kind (a duration, a quantity) says how the
		// value compares, as Kyverno reads both sides
		v := value.value(exNull)
		switch {
		case isDurationText(s):
			return rel(call("duration", strLit(s)), o, call("duration", v)), nil
		case isQuantityText(s):
			return rel(method(call("quantity", strLit(s)), "compareTo", call("quantity", v)), o, numLit(0)), nil
		}
	}
	if key.t != tNumber && value.t == tNumber && !key.opt {
		if _, lit := key.staticString(); !lit && (key.t == tString || key.t == tAny) {
			return numericText(k, o, value.value(exNull), key.t == tString), nil
		}
	}
	if key.t != tNumber {
		k = call("double", k)
	}
	v := value.value(exNull)
	if value.t != tNumber {
		v = call("double", v)
	}
	return rel(k, o, v), nil
}

// numberRE is the text of a number as Kyverno's operators parse it.
const numberRE = `^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$`

// numericText compares a key known only at evaluation with a number: a
// string key is read as the number it writes, and one that writes none
// compares false, as Kyverno's operators do (CEL's double() would fail).
func numericText(k ex, op string, v ex, isString bool) ex {
	key := ident("key")
	text := and(method(key, "matches", strLit(numberRE)), rel(call("double", key), op, v))
	if isString {
		return call("cel.bind", key, k, text)
	}
	isNumber := or(rel(call("type", key), "==", ident("int")), rel(call("type", key), "==", ident("uint")), rel(call("type", key), "==", ident("double")))
	return call("cel.bind", key, k, cond(rel(call("type", key), "==", ident("string")), text, and(isNumber, rel(call("double", key), op, v))))
}

// durationCond converts the deprecated Duration* operators.
func durationCond(key jv, op conditions.Operator, value jv) (ex, error) {
	ops := map[conditions.Operator]string{conditions.DurationGreaterThan: ">", conditions.DurationGreaterThanOrEquals: ">=",
		conditions.DurationLessThan: "<", conditions.DurationLessThanOrEquals: "<="}
	d := func(v jv) ex {
		if v.t == tNumber {
			return call("duration", add(call("string", v.value(exNull)), strLit("s")))
		}
		return call("duration", v.value(exNull))
	}
	return rel(d(key), ops[op], d(value)), nil
}

// pathError is an error located at a field path.
type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// at locates err at path (relative: the paths of nested calls join).
func at(path string, err error) error {
	if err == nil {
		return nil
	}
	if pe, ok := err.(*pathError); ok {
		return &pathError{path: path + "." + pe.path, err: pe.err}
	}
	return &pathError{path: path, err: err}
}

// wildcardKeys are the fields whose values are wildcards ("*" in RBAC
// rules): Kyverno's set operators match wildcards in the key too.
var wildcardKeys = map[string]bool{"apiGroups": true, "resources": true, "verbs": true, "resourceNames": true,
	"nonResourceURLs": true}
