package migrate

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gavelpolicy/gavel/internal/patterns"
	"github.com/gavelpolicy/gavel/internal/quantity"
)

// tri is the outcome of matching a value with a pattern, in CEL: holds
// when the value does not fail the pattern, skip when a condition anchor
// skipped it (skip implies holds).
type tri struct {
	holds, skip ex
}

func (t tri) fail() ex { return not(t.holds) }

// passes is the value matching without being skipped.
func (t tri) passes() ex { return and(t.holds, not(t.skip)) }

// vref is how a value of the resource is read: its expression, valid
// when present holds.
type vref struct {
	e       ex
	present ex
	key     string
	t       vtype
}

// child is the field key of the map value v.
func (c *jp) child(v vref, key string) vref {
	present := has(v.e, key)
	if requiredField(v.key, key) {
		present = exTrue
	}
	return vref{e: field(v.e, key), present: present, key: key, t: fieldType(key)}
}

// pattern converts a validate pattern matched with the value v.
func (c *jp) pattern(v vref, pat any, path string) (tri, error) {
	switch p := pat.(type) {
	case map[string]any:
		t, err := c.mapPattern(v, p, path)
		if err != nil {
			return tri{}, err
		}
		return tri{holds: and(v.present, t.holds), skip: and(v.present, t.skip)}, nil
	case []any:
		t, err := c.listPattern(v, p, path)
		if err != nil {
			return tri{}, err
		}
		return tri{holds: and(v.present, t.holds), skip: and(v.present, t.skip)}, nil
	}
	h, err := c.leaf(v, pat, path)
	if err != nil {
		return tri{}, err
	}
	return tri{holds: h, skip: exFalse}, nil
}

// anchorEntry is a key of a map pattern with its anchor.
type anchorEntry struct {
	raw, key string
	anchor   patterns.AnchorType
	isAnchor bool
	value    any
}

// order sorts the keys of a map pattern as Kyverno evaluates them:
// condition, existence, equality and negation anchors first, sorted; then
// global anchors and keys whose values hold anchors, in reverse order;
// then the other keys, sorted.
func order(p map[string]any) (anchors, rest []anchorEntry) {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var front, back []anchorEntry
	for _, k := range keys {
		e := anchorEntry{raw: k, key: k, value: p[k]}
		if a, ok := patterns.ParseAnchor(k); ok && a.Type != patterns.AddIfNotPresent {
			e.anchor, e.key, e.isAnchor = a.Type, a.Key, true
		}
		switch {
		case e.isAnchor && e.anchor != patterns.Global:
			anchors = append(anchors, e)
		case e.isAnchor || holdsAnchor(e.value):
			front = append(front, e)
		default:
			back = append(back, e)
		}
	}
	for i := len(front) - 1; i >= 0; i-- {
		rest = append(rest, front[i])
	}
	return anchors, append(rest, back...)
}

// holdsAnchor reports a pattern value with an anchor somewhere below.
func holdsAnchor(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if a, ok := patterns.ParseAnchor(k); ok && a.Type != patterns.AddIfNotPresent {
				return true
			}
			if holdsAnchor(x) {
				return true
			}
		}
	case []any:
		for _, x := range t {
			if holdsAnchor(x) {
				return true
			}
		}
	}
	return false
}

// outcome is one key's outcome: fail and skip exclusive; direct marks
// the skips of a condition or global anchor itself.
type outcome struct {
	fail, skip ex
	direct     bool
}

// mapPattern converts the keys of a map pattern matched with the map v,
// in Kyverno's two phases.
func (c *jp) mapPattern(v vref, p map[string]any, path string) (tri, error) {
	anchors, rest := order(p)
	var phase1, phase2 []outcome
	for _, e := range anchors {
		o, err := c.entry(v, e, path)
		if err != nil {
			return tri{}, err
		}
		phase1 = append(phase1, o)
	}
	for _, e := range rest {
		o, err := c.entry(v, e, path)
		if err != nil {
			return tri{}, err
		}
		phase2 = append(phase2, o)
	}
	// phase 1: a failure counts unless a condition that did not hold came
	// before it; the map is skipped on a direct skip, or when every
	// anchor skipped
	var f1 []ex
	var guard []ex
	for _, o := range phase1 {
		f1 = append(f1, and(append(append([]ex{}, guard...), o.fail)...))
		if o.direct {
			guard = append(guard, not(o.skip))
		}
	}
	fail1 := or(f1...)
	var direct, allSkip []ex
	for _, o := range phase1 {
		if o.direct {
			direct = append(direct, o.skip)
		}
		allSkip = append(allSkip, o.skip)
	}
	skip1 := exFalse
	if len(phase1) > 0 {
		skip1 = and(not(fail1), or(or(direct...), and(allSkip...)))
	}
	// phase 2: the first key that does not pass decides
	var f2, s2 []ex
	var prevSkip, prevFail []ex
	for _, o := range phase2 {
		f2 = append(f2, and(append(append([]ex{}, prevSkip...), o.fail)...))
		s2 = append(s2, and(append(append([]ex{}, prevFail...), o.skip)...))
		prevSkip = append(prevSkip, not(o.skip))
		prevFail = append(prevFail, not(o.fail))
	}
	fail2, skip2 := or(f2...), or(s2...)
	fail := or(fail1, and(not(skip1), fail2))
	skip := or(skip1, and(not(fail1), skip2))
	return tri{holds: not(fail), skip: skip}, nil
}

// entry converts one key of a map pattern.
func (c *jp) entry(v vref, e anchorEntry, path string) (outcome, error) {
	epath := path + "." + e.raw
	if strings.ContainsAny(e.key, "*?") {
		return c.wildcardEntry(v, e, epath)
	}
	ch := c.child(v, e.key)
	if !e.isAnchor {
		if s, ok := e.value.(string); ok && s == "*" {
			// "*" alone: the field must be there
			return outcome{fail: not(ch.present), skip: exFalse}, nil
		}
		t, err := c.pattern(ch, e.value, epath)
		if err != nil {
			return outcome{}, err
		}
		return outcome{fail: not(t.holds), skip: t.skip}, nil
	}
	switch e.anchor {
	case patterns.Negation:
		return outcome{fail: ch.present, skip: exFalse}, nil
	case patterns.Equality:
		present := ch
		present.present = exTrue
		t, err := c.pattern(present, e.value, epath)
		if err != nil {
			return outcome{}, err
		}
		return outcome{fail: and(ch.present, not(t.holds)), skip: and(ch.present, t.skip)}, nil
	case patterns.Condition:
		present := ch
		present.present = exTrue
		t, err := c.pattern(present, e.value, epath)
		if err != nil {
			return outcome{}, err
		}
		return outcome{fail: exFalse, skip: or(not(ch.present), not(t.passes())), direct: true}, nil
	case patterns.Global:
		present := ch
		present.present = exTrue
		t, err := c.pattern(present, e.value, epath)
		if err != nil {
			return outcome{}, err
		}
		return outcome{fail: exFalse, skip: and(ch.present, not(t.passes())), direct: true}, nil
	case patterns.Existence:
		list, ok := e.value.([]any)
		if !ok {
			return outcome{}, unsupportedf("existence anchor", "at %s: the pattern must be a list", epath)
		}
		var holds []ex
		for i, pe := range list {
			if _, ok := pe.(map[string]any); !ok {
				return outcome{}, unsupportedf("existence anchor", "at %s: the pattern's elements must be maps", epath)
			}
			x := c.fresh(e.key)
			t, err := c.pattern(vref{e: ident(x), present: exTrue, key: singular(e.key)}, pe, fmt.Sprintf("%s[%d]", epath, i))
			c.release(x)
			if err != nil {
				return outcome{}, err
			}
			holds = append(holds, macro(ch.e, "exists", x, t.passes()))
		}
		return outcome{fail: and(ch.present, not(and(holds...))), skip: exFalse}, nil
	}
	return outcome{}, unsupportedf("anchor "+e.raw, "not a validate anchor")
}

// wildcardEntry converts a key with wildcards under metadata labels or
// annotations: Kyverno matches the first key of the resource that fits.
func (c *jp) wildcardEntry(v vref, e anchorEntry, path string) (outcome, error) {
	if v.key != "labels" && v.key != "annotations" {
		return outcome{}, unsupportedf("wildcard key "+e.raw, "at %s: only under metadata.labels and metadata.annotations", path)
	}
	k := c.freshName("key")
	defer c.release(k)
	keyTest := wildcardMatch(ident(k), e.key)
	switch {
	case e.isAnchor && e.anchor == patterns.Negation:
		return outcome{fail: macro(v.e, "exists", k, keyTest), skip: exFalse}, nil
	case e.isAnchor && e.anchor == patterns.Equality:
		// optional: no key that fits passes, else the value of one must
		val := vref{e: index(v.e, ident(k)), present: exTrue, key: "value", t: tString}
		h, err := c.leaf(val, e.value, path)
		if err != nil {
			return outcome{}, err
		}
		return outcome{fail: and(macro(v.e, "exists", k, keyTest), not(macro(v.e, "exists", k, and(keyTest, h)))), skip: exFalse}, nil
	case e.isAnchor:
		return outcome{}, unsupportedf("anchor "+e.raw, "at %s: a wildcard key under this anchor", path)
	}
	val := vref{e: index(v.e, ident(k)), present: exTrue, key: "value", t: tString}
	h, err := c.leaf(val, e.value, path)
	if err != nil {
		return outcome{}, err
	}
	return outcome{fail: not(macro(v.e, "exists", k, and(keyTest, h))), skip: exFalse}, nil
}

// listPattern converts a list pattern matched with the list v.
func (c *jp) listPattern(v vref, p []any, path string) (tri, error) {
	if len(p) == 0 {
		return tri{}, unsupportedf("empty list pattern", "at %s: Kyverno rejects every value", path)
	}
	x := c.fresh(v.key)
	defer c.release(x)
	el := vref{e: ident(x), present: exTrue, key: singular(v.key), t: elemOf(v.key)}
	switch first := p[0].(type) {
	case map[string]any:
		t, err := c.mapPattern(el, first, path+"[0]")
		if err != nil {
			return tri{}, err
		}
		out := tri{holds: macro(v.e, "all", x, t.holds), skip: exFalse}
		if !t.skip.isFalse() {
			out.skip = and(rel(call("size", v.e), ">", numLit(0)), macro(v.e, "all", x, t.skip))
		}
		return out, nil
	case []any:
		return tri{}, unsupportedf("nested list pattern", "at %s", path)
	default:
		h, err := c.leaf(el, first, path+"[0]")
		if err != nil {
			return tri{}, err
		}
		return tri{holds: macro(v.e, "all", x, h), skip: exFalse}, nil
	}
}

// leaf converts a scalar pattern matched with v: the test of a present
// value, or what a missing one gives.
func (c *jp) leaf(v vref, pat any, path string) (ex, error) {
	if s, ok := pat.(string); ok && strings.Contains(s, "{{") {
		test, err := c.dynamicLeaf(v, s)
		if err != nil {
			return ex{}, at(path, err)
		}
		return and(v.present, test), nil
	}
	if s, ok := pat.(string); ok && strings.Contains(s, "$(") {
		return ex{}, unsupportedf("reference "+s, "at %s: $( ) references", path)
	}
	nilOK := patterns.MatchValue(nil, pat)
	if v.t == tList {
		x := c.fresh(v.key)
		defer c.release(x)
		test, err := c.scalar(vref{e: ident(x), present: exTrue, key: singular(v.key), t: elemOf(v.key)}, pat)
		if err != nil {
			return ex{}, at(path, err)
		}
		if nilOK {
			return or(not(v.present), macro(v.e, "all", x, test)), nil
		}
		return and(v.present, macro(v.e, "all", x, test)), nil
	}
	test, err := c.scalar(v, pat)
	if err != nil {
		return ex{}, at(path, err)
	}
	if nilOK {
		return or(not(v.present), test), nil
	}
	return and(v.present, test), nil
}

// scalar is the test of a present scalar value v against a leaf.
func (c *jp) scalar(v vref, pat any) (ex, error) {
	switch p := normalizeNumber(pat).(type) {
	case bool:
		return rel(v.e, "==", lit(p)), nil
	case float64:
		return rel(v.e, "==", numLit(p)), nil
	case nil:
		switch v.t {
		case tString:
			return rel(v.e, "==", strLit("")), nil
		case tNumber:
			return rel(v.e, "==", numLit(0)), nil
		case tBool:
			return rel(v.e, "==", exFalse), nil
		}
		return or(rel(v.e, "==", exNull), rel(v.e, "==", numLit(0)), rel(v.e, "==", strLit("")), rel(v.e, "==", exFalse)), nil
	case string:
		return c.stringPattern(v, p)
	}
	return ex{}, unsupportedf("pattern value", "%T", pat)
}

// stringPattern converts a string leaf: alternatives (|) of conjunctions
// (&) of terms.
func (c *jp) stringPattern(v vref, s string) (ex, error) {
	if s == "*" && v.t != tList {
		return exTrue, nil
	}
	var alts []ex
	for _, alt := range strings.Split(s, "|") {
		var terms []ex
		for _, t := range strings.Split(strings.Trim(alt, " "), "&") {
			e, err := c.term(v, strings.Trim(t, " "))
			if err != nil {
				return ex{}, err
			}
			terms = append(terms, e)
		}
		alts = append(alts, and(terms...))
	}
	whole := or(alts...)
	if len(alts) > 1 || strings.Contains(s, "&") {
		// the value equal to the whole pattern text matches too
		if v.t == tString {
			whole = or(rel(v.e, "==", strLit(s)), whole)
		}
	}
	return whole, nil
}

// term converts one term of a string pattern.
func (c *jp) term(v vref, t string) (ex, error) {
	op, operand := termOperator(t)
	switch op {
	case "range", "!range":
		lo, hi := splitRangeTerm(t, op == "!range")
		if op == "range" {
			a, err := c.term(v, ">="+lo)
			if err != nil {
				return ex{}, err
			}
			b, err := c.term(v, "<="+hi)
			if err != nil {
				return ex{}, err
			}
			return and(a, b), nil
		}
		a, err := c.term(v, "<"+lo)
		if err != nil {
			return ex{}, err
		}
		b, err := c.term(v, ">"+hi)
		if err != nil {
			return ex{}, err
		}
		return or(a, b), nil
	}
	cmp := map[string]string{"": "==", "!": "!=", ">": ">", "<": "<", ">=": ">=", "<=": "<="}[op]
	if isDurationText(operand) {
		return rel(call("duration", v.e), cmp, call("duration", strLit(operand))), nil
	}
	if _, ok := quantity.Parse(operand); ok {
		if f, err := strconv.ParseFloat(operand, 64); err == nil && (v.t == tNumber || v.t == tAny && op != "" && op != "!") {
			// a plain number: numbers compare as numbers
			return rel(v.e, cmp, numLit(f)), nil
		}
		if v.t != tNumber && !isQuantityText(operand) && (op == "" || op == "!") {
			// equality with a plain number: as text
			x := v.e
			if v.t != tString {
				x = call("string", x)
			}
			return rel(x, cmp, strLit(operand)), nil
		}
		q := v.e
		if v.t != tString {
			q = call("string", v.e)
		}
		return rel(method(call("quantity", q), "compareTo", call("quantity", strLit(operand))), cmp, numLit(0)), nil
	}
	// a value that is not a string matches as its text: a boolean
	// field against "false"
	text := v.e
	if v.t != tString && (v.t != tAny || operand == "true" || operand == "false") {
		text = call("string", v.e)
	}
	switch op {
	case "":
		return wildcardMatch(text, operand), nil
	case "!":
		return not(wildcardMatch(text, operand)), nil
	}
	// an order on a value that is neither a duration nor a quantity:
	// Kyverno never matches it
	return exFalse, nil
}

// termOperator reads the operator of a term as Kyverno does.
func termOperator(t string) (string, string) {
	if len(t) >= 2 {
		for _, p := range []string{">=", "<=", ">", "<", "!"} {
			if strings.HasPrefix(t, p) {
				return p, strings.TrimSpace(t[len(p):])
			}
		}
	}
	if _, _, ok := rangeParts(t, "!-"); ok {
		return "!range", t
	}
	if _, _, ok := rangeParts(t, "-"); ok {
		return "range", t
	}
	return "", strings.TrimSpace(t)
}

func splitRangeTerm(t string, negated bool) (string, string) {
	sep := "-"
	if negated {
		sep = "!-"
	}
	lo, hi, _ := rangeParts(t, sep)
	return lo, hi
}

// rangeParts splits "a<sep>b" where a and b are numbers with an optional
// sign and unit, as Kyverno's range operators.
func rangeParts(t, sep string) (string, string, bool) {
	end := rangeEndpoint(t, 0)
	if end < 0 || !strings.HasPrefix(t[end:], sep) {
		return "", "", false
	}
	start := end + len(sep)
	if rangeEndpoint(t, start) != len(t) {
		return "", "", false
	}
	return t[:end], t[start:], true
}

func rangeEndpoint(s string, i int) int {
	if i < len(s) && (s[i] == '-' || s[i] == '+' || s[i] == '|') {
		i++
	}
	d := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == d {
		return -1
	}
	if i+1 < len(s) && s[i] == '.' && s[i+1] >= '0' && s[i+1] <= '9' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z') {
		i++
	}
	return i
}

// dynamicLeaf converts a leaf that holds variables: Kyverno substitutes
// them and reads the result as a pattern; the converter handles the
// result compared as text (with a "!" or a trailing "*").
func (c *jp) dynamicLeaf(v vref, s string) (ex, error) {
	neg := false
	if strings.HasPrefix(s, "!") {
		neg, s = true, s[1:]
	}
	prefix := strings.HasSuffix(s, "*") && !strings.HasSuffix(s, "}}*}}")
	if prefix {
		s = strings.TrimSuffix(s, "*")
	}
	if strings.ContainsAny(stripTemplates(s), "*?|&<>!") {
		return ex{}, unsupportedf("pattern "+s, "variables inside a pattern with operators or wildcards")
	}
	val, err := c.str(s)
	if err != nil {
		return ex{}, err
	}
	x := v.e
	if v.t != tString {
		x = call("string", x)
	}
	want := val.value(strLit(""))
	if c.patternVars != nil && !val.opt && !isLiteral(want.s) {
		want = c.patternVar(val)
	}
	if val.t != tString {
		want = call("string", want)
	}
	test := rel(x, "==", want)
	if prefix {
		test = method(x, "startsWith", want)
	}
	return negIf(test, neg), nil
}

// patternVar is a value a pattern's variable reads strictly (see
// strictPattern).
type patternVar struct {
	e ex
}

// patternVar records the value v for strictPattern (once per value).
func (c *jp) patternVar(v jv) ex {
	e := v.value(strLit(""))
	for _, pv := range *c.patternVars {
		if pv.e.s == e.s {
			return e
		}
	}
	*c.patternVars = append(*c.patternVars, patternVar{e: e})
	return e
}

// strictPattern converts a validate pattern as Kyverno evaluates it: the
// variables of the whole pattern are substituted first, so one that
// reads a missing field is an error wherever it is, even where the
// pattern would not compare it. The values they read are read first, in
// a list (a conditional's condition: CEL's && and || would let a false
// or true operand hide the error).
func (c *jp) strictPattern(v vref, p any) (tri, error) {
	saved := c.patternVars
	var vars []patternVar
	c.patternVars = &vars
	t, err := c.pattern(v, p, "")
	c.patternVars = saved
	if err != nil || len(vars) == 0 {
		return t, err
	}
	items := make([]ex, len(vars))
	for i, pv := range vars {
		items[i] = pv.e
	}
	read := rel(call("size", listOf(items...)), "==", numLit(float64(len(items))))
	read.s = "\n// Kyverno substitutes the pattern's variables first: one that reads a missing field is an error\n" + read.s
	t.holds = ex{s: read.s + " ? " + t.holds.at(precOr) + " : false", prec: precCond}
	return t, nil
}

// stripTemplates removes the {{ }} of s.
func stripTemplates(s string) string {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "{{"):
			depth++
			i++
		case strings.HasPrefix(s[i:], "}}") && depth > 0:
			depth--
			i++
		case depth == 0:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
