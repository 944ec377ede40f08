package patterns

import (
	"github.com/gavelpolicy/gavel/internal/jsonnum"
	"github.com/gavelpolicy/gavel/internal/quantity"
	"github.com/gavelpolicy/gavel/internal/wildcard"

	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// vkind is the kind of a JSON-like value, with every Go number type folded
// into vInt or vFloat.
type vkind uint8

const (
	vOther vkind = iota
	vNil
	vBool
	vInt
	vFloat
	vString
	vMap
	vArray
)

// val is a resource leaf seen through its kind, so that value matching needs
// no type switch on each comparison and no allocation.
type val struct {
	k vkind
	b bool
	i int64
	f float64
	s string

	// Parsed forms, computed on first use by a term.
	durState, qtyState parseState
	dur                time.Duration
	qty                resource.Quantity
}

type parseState uint8

const (
	unparsed parseState = iota
	parsedOK
	parsedBad
)

// toVal classifies x. int, int64, the other Go integer types and json.Number
// holding an integer are integers (as in Kubernetes unstructured objects);
// float32, float64 and other json.Numbers are floats.
func toVal(x any) val {
	switch t := x.(type) {
	case nil:
		return val{k: vNil}
	case string:
		return val{k: vString, s: t}
	case bool:
		return val{k: vBool, b: t}
	case float64:
		return val{k: vFloat, f: t}
	case int64:
		return val{k: vInt, i: t}
	case int:
		return val{k: vInt, i: int64(t)}
	case map[string]any:
		return val{k: vMap}
	case []any:
		return val{k: vArray}
	}
	switch i, f, k := jsonnum.Read(x); k {
	case jsonnum.Integer:
		return val{k: vInt, i: i}
	case jsonnum.Real:
		return val{k: vFloat, f: f}
	}
	return val{k: vOther}
}

// op is a value operator of a string pattern.
type op uint8

const (
	opEqual op = iota
	opNotEqual
	opMore
	opLess
	opMoreEqual
	opLessEqual
	opInRange
	opNotInRange
)

// operatorOf reads the operator at the start of a pattern term, the way
// Kyverno does: two-character prefixes first, then one-character ones, then
// the "a!-b" and "a-b" range forms; anything else is equality.
func operatorOf(term string) (op, int) {
	if len(term) < 2 {
		return opEqual, 0
	}
	switch {
	case strings.HasPrefix(term, ">="):
		return opMoreEqual, 2
	case strings.HasPrefix(term, "<="):
		return opLessEqual, 2
	case term[0] == '>':
		return opMore, 1
	case term[0] == '<':
		return opLess, 1
	case term[0] == '!':
		return opNotEqual, 1
	}
	if _, _, ok := splitRange(term, "!-"); ok {
		return opNotInRange, 0
	}
	if _, _, ok := splitRange(term, "-"); ok {
		return opInRange, 0
	}
	return opEqual, 0
}

// splitRange splits "left<sep>right" where both ends are range endpoints:
// an optional sign ('-', '+' or '|'), digits, an optional fraction and
// optional ASCII letters (a unit suffix such as Mi).
func splitRange(term, sep string) (string, string, bool) {
	end := scanEndpoint(term, 0)
	if end < 0 || !strings.HasPrefix(term[end:], sep) {
		return "", "", false
	}
	start := end + len(sep)
	if scanEndpoint(term, start) != len(term) {
		return "", "", false
	}
	return term[:end], term[start:], true
}

// scanEndpoint returns the end of the range endpoint starting at i, or -1.
func scanEndpoint(s string, i int) int {
	if i < len(s) && (s[i] == '-' || s[i] == '+' || s[i] == '|') {
		i++
	}
	d := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == d {
		return -1
	}
	if i+1 < len(s) && s[i] == '.' && isDigit(s[i+1]) {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z') {
		i++
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// term is one operator term of a string pattern, parsed once. For the range
// operators lo and hi hold the two comparisons the range stands for.
type term struct {
	op      op
	operand string
	wild    wildcard.Pattern
	dur     time.Duration
	durOK   bool
	qty     resource.Quantity
	qtyOK   bool
	lo, hi  *term
}

// parseTerm parses one term the way Kyverno evaluates it: "a-b" is
// ">= a" and "<= b"; "a!-b" is "< a" or "> b"; otherwise the operator
// prefix is removed and the operand trimmed.
func parseTerm(s string) *term {
	o, n := operatorOf(s)
	switch o {
	case opInRange:
		left, right, _ := splitRange(s, "-")
		return &term{op: o, lo: parseTerm(">= " + left), hi: parseTerm("<= " + right)}
	case opNotInRange:
		left, right, _ := splitRange(s, "!-")
		return &term{op: o, lo: parseTerm("< " + left), hi: parseTerm("> " + right)}
	}
	t := &term{op: o, operand: strings.TrimSpace(s[n:])}
	t.wild = wildcard.Compile(t.operand)
	if mayBeDuration(t.operand) {
		if d, err := time.ParseDuration(t.operand); err == nil {
			t.dur, t.durOK = d, true
		}
	}
	if q, ok := quantity.Parse(t.operand); ok {
		t.qty, t.qtyOK = q, true
	}
	return t
}

// match evaluates the term: durations are compared first, then quantities,
// and only equality and inequality fall back to wildcard string matching.
func (t *term) match(v *val) bool {
	switch t.op {
	case opInRange:
		return t.lo.match(v) && t.hi.match(v)
	case opNotInRange:
		return t.lo.match(v) || t.hi.match(v)
	}
	if t.durOK {
		if d, ok := valueDuration(v); ok {
			return compareResult(t.op, cmpDuration(d, t.dur))
		}
	}
	if t.qtyOK {
		if c, ok := compareQuantity(v, &t.qty); ok {
			return compareResult(t.op, c)
		}
	}
	if t.op != opEqual && t.op != opNotEqual {
		return false
	}
	var buf [32]byte
	var matched bool
	switch v.k {
	case vString:
		matched = t.wild.Match(v.s)
	case vFloat:
		matched = t.wild.MatchBytes(strconv.AppendFloat(buf[:0], v.f, 'E', -1, 64))
	case vInt:
		matched = t.wild.MatchBytes(strconv.AppendInt(buf[:0], v.i, 10))
	case vBool:
		matched = t.wild.Match(strconv.FormatBool(v.b))
	default:
		return false
	}
	if t.op == opNotEqual {
		return !matched
	}
	return matched
}

func cmpDuration(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compareResult(o op, c int) bool {
	switch o {
	case opEqual:
		return c == 0
	case opNotEqual:
		return c != 0
	case opMore:
		return c > 0
	case opLess:
		return c < 0
	case opMoreEqual:
		return c >= 0
	case opLessEqual:
		return c <= 0
	}
	return false
}

// valueDuration reads v as a duration the way Kyverno does: nil counts as
// "0", integers and floats are formatted (an integer is a duration only when
// it is 0; a float, formatted with six decimals, never is), strings are
// parsed with time.ParseDuration.
func valueDuration(v *val) (time.Duration, bool) {
	switch v.k {
	case vNil:
		return 0, true
	case vInt:
		return 0, v.i == 0
	case vString:
		if v.durState == unparsed {
			v.durState = parsedBad
			if mayBeDuration(v.s) {
				if d, err := time.ParseDuration(v.s); err == nil {
					v.dur, v.durState = d, parsedOK
				}
			}
		}
		return v.dur, v.durState == parsedOK
	}
	return 0, false
}

// mayBeDuration is a cheap filter in front of time.ParseDuration (whose
// errors allocate): a valid duration is "0" with an optional sign, or ends
// with a unit, and every unit ends in s, m or h.
func mayBeDuration(s string) bool {
	if s == "" {
		return false
	}
	r := s
	if r[0] == '-' || r[0] == '+' {
		r = r[1:]
	}
	if r == "0" {
		return true
	}
	switch s[len(s)-1] {
	case 's', 'm', 'h':
		return true
	}
	return false
}

// compareQuantity compares v, read as a Kubernetes quantity the way Kyverno
// does (nil is 0, floats are formatted with six decimals), with q.
func compareQuantity(v *val, q *resource.Quantity) (int, bool) {
	switch v.k {
	case vNil:
		return -q.CmpInt64(0), true
	case vInt:
		return -q.CmpInt64(v.i), true
	case vFloat, vString:
		if v.qtyState == unparsed {
			s := v.s
			if v.k == vFloat {
				var buf [32]byte
				s = string(strconv.AppendFloat(buf[:0], v.f, 'f', 6, 64))
			}
			v.qtyState = parsedBad
			if vq, ok := quantity.Parse(s); ok {
				v.qty, v.qtyState = vq, parsedOK
			}
		}
		if v.qtyState != parsedOK {
			return 0, false
		}
		return v.qty.Cmp(*q), true
	}
	return 0, false
}

// stringPattern is a string leaf of a pattern: alternatives separated by '|',
// each a conjunction of terms separated by '&'.
type stringPattern struct {
	raw  string
	alts [][]*term
	// plain reports that every term is an equality or an inequality whose
	// operand is neither a duration nor a quantity: a string value is then
	// only compared with wildcards (matchString).
	plain bool
}

func parseStringPattern(s string) *stringPattern {
	sp := &stringPattern{raw: s}
	for _, alt := range strings.Split(s, "|") {
		var terms []*term
		for _, t := range strings.Split(strings.Trim(alt, " "), "&") {
			terms = append(terms, parseTerm(strings.Trim(t, " ")))
		}
		sp.alts = append(sp.alts, terms)
	}
	sp.plain = true
	for _, alt := range sp.alts {
		for _, t := range alt {
			if (t.op != opEqual && t.op != opNotEqual) || t.durOK || t.qtyOK {
				sp.plain = false
			}
		}
	}
	return sp
}

// matchString is match for a string value when sp is plain: what term.match
// does for such terms, without classifying the value.
func (sp *stringPattern) matchString(s string) bool {
	if s == sp.raw {
		return true
	}
	for _, alt := range sp.alts {
		ok := true
		for _, t := range alt {
			if t.wild.Match(s) == (t.op == opNotEqual) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (sp *stringPattern) match(v *val) bool {
	if v.k == vString && v.s == sp.raw {
		return true
	}
	for _, alt := range sp.alts {
		ok := true
		for _, t := range alt {
			if !t.match(v) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// leaf is a compiled scalar pattern value.
type leaf struct {
	k    vkind // vNil, vBool, vInt, vFloat or vString
	b    bool
	i    int64
	f    float64
	str  *stringPattern
	orig any // the pattern value as written, for messages
}

// compileLeaf compiles a scalar pattern value, reporting false for
// non-scalars. json.Number becomes float64, as in a policy decoded from JSON.
func compileLeaf(x any) (*leaf, bool) {
	switch t := x.(type) {
	case string:
		return &leaf{k: vString, str: parseStringPattern(t), orig: t}, true
	case json.Number:
		f, err := t.Float64()
		if err != nil {
			return &leaf{k: vString, str: parseStringPattern(string(t)), orig: string(t)}, true
		}
		return &leaf{k: vFloat, f: f, orig: f}, true
	case map[string]any, []any:
		return nil, false
	}
	v := toVal(x)
	switch v.k {
	case vNil, vBool, vInt, vFloat:
		return &leaf{k: v.k, b: v.b, i: v.i, f: v.f, orig: x}, true
	}
	return nil, false
}

// match compares a resource value with the leaf, following Kyverno's typed
// rules: a bool matches only the same bool; an integer matches integers,
// integral floats and strings that parse as that integer; a float matches
// equal numbers and strings that parse as it; nil matches nil, zero, "" and
// false; a string is an operator pattern.
func (l *leaf) match(v *val) bool {
	switch l.k {
	case vBool:
		return v.k == vBool && v.b == l.b
	case vInt:
		switch v.k {
		case vInt:
			return v.i == l.i
		case vFloat:
			return v.f == math.Trunc(v.f) && int64(v.f) == l.i
		case vString:
			i, err := strconv.ParseInt(v.s, 10, 64)
			return err == nil && i == l.i
		}
		return false
	case vFloat:
		switch v.k {
		case vInt:
			return l.f == math.Trunc(l.f) && int64(l.f) == v.i
		case vFloat:
			return v.f == l.f
		case vString:
			f, err := strconv.ParseFloat(v.s, 64)
			return err == nil && f == l.f
		}
		return false
	case vNil:
		switch v.k {
		case vNil:
			return true
		case vFloat:
			return v.f == 0
		case vInt:
			return v.i == 0
		case vString:
			return v.s == ""
		case vBool:
			return !v.b
		}
		return false
	case vString:
		return l.str.match(v)
	}
	return false
}

// ValueMatcher is a compiled pattern leaf: a scalar (string with operators,
// wildcards, ranges, quantities and durations; number; bool; null), or a map,
// which matches any map value. It is immutable and safe for concurrent use.
type ValueMatcher struct {
	leaf  *leaf
	isMap bool
}

// CompileValue compiles one pattern leaf for repeated use with Match. Arrays
// and values that are not JSON-like are rejected.
func CompileValue(pattern any) (*ValueMatcher, error) {
	if _, ok := pattern.(map[string]any); ok {
		return &ValueMatcher{isMap: true}, nil
	}
	l, ok := compileLeaf(pattern)
	if !ok {
		return nil, fmt.Errorf("patterns: cannot use a value of type %T as a pattern leaf", pattern)
	}
	return &ValueMatcher{leaf: l}, nil
}

// Match reports whether value matches the compiled leaf.
func (m *ValueMatcher) Match(value any) bool {
	if m.isMap {
		_, ok := value.(map[string]any)
		return ok
	}
	v := toVal(value)
	return m.leaf.match(&v)
}

// MatchValue reports whether one resource value matches one pattern leaf,
// with Kyverno's operators (!, >, <, >=, <=, a-b, a!-b, | and &), wildcards
// (* and ?), quantities and durations. A pattern that cannot be a leaf (an
// array, or a value that is not JSON-like) matches nothing. Compile the leaf
// once with CompileValue when it is used many times.
func MatchValue(value any, pattern any) bool {
	m, err := CompileValue(pattern)
	if err != nil {
		return false
	}
	return m.Match(value)
}
