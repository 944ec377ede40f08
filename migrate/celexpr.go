package migrate

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
)

// ex is a CEL expression under construction: its text and the precedence
// of its outermost operator, so that operands are parenthesized only when
// they must be.
type ex struct {
	s    string
	prec int
	// neg, when set, is the natural negation of the expression (the
	// operand of a negation, the inverted comparison)
	neg *ex
	// parts are the operands of an && (op "&&") or || chain, which a
	// negation turns into the other chain (De Morgan)
	parts []ex
	op    string
}

// Precedences of CEL's operators, loosest first.
const (
	precCond    = 1 // c ? a : b
	precOr      = 2 // ||
	precAnd     = 3 // &&
	precRel     = 4 // == != < <= > >= in
	precAdd     = 5 // + -
	precMul     = 6 // * / %
	precUnary   = 7 // ! -
	precPrimary = 8 // member, call, index, literal, identifier
)

var (
	exTrue  = ex{s: "true", prec: precPrimary}
	exFalse = ex{s: "false", prec: precPrimary}
	exNull  = ex{s: "null", prec: precPrimary}
)

func ident(s string) ex { return ex{s: s, prec: precPrimary} }

func (e ex) isTrue() bool  { return e.s == "true" }
func (e ex) isFalse() bool { return e.s == "false" }

// at renders e as an operand that needs at least precedence min.
func (e ex) at(min int) string {
	if e.prec < min {
		return "(" + e.s + ")"
	}
	return e.s
}

// lineWidth is the length past which and/or chains are broken into lines.
const lineWidth = 90

// and is the conjunction of xs, with true dropped and false absorbing.
func and(xs ...ex) ex { return chain(xs, "&&", precAnd, exTrue, exFalse) }

// or is the disjunction of xs, with false dropped and true absorbing.
func or(xs ...ex) ex { return chain(xs, "||", precOr, exFalse, exTrue) }

func chain(xs []ex, op string, prec int, unit, zero ex) ex {
	var kept []ex
	seen := map[string]bool{}
	var add func(x ex) bool
	add = func(x ex) bool {
		switch x.s {
		case unit.s, "":
			return true
		case zero.s:
			return false
		}
		if x.op == op {
			// (a && b) && c is a && b && c
			for _, p := range x.parts {
				if !add(p) {
					return false
				}
			}
			return true
		}
		if !seen[x.s] {
			seen[x.s] = true
			kept = append(kept, x)
		}
		return true
	}
	for _, x := range xs {
		if !add(x) {
			return zero
		}
	}
	switch len(kept) {
	case 0:
		return unit
	case 1:
		return kept[0]
	}
	parts := make([]string, len(kept))
	total := 0
	for i, x := range kept {
		parts[i] = x.at(prec)
		total += len(parts[i]) + len(op) + 2
	}
	sep := " " + op + " "
	if total > lineWidth {
		sep = " " + op + "\n"
	}
	return ex{s: strings.Join(parts, sep), prec: prec, parts: kept, op: op}
}

// not negates x: !true is false, !!x is x, a comparison is inverted.
func not(x ex) ex {
	switch {
	case x.isTrue():
		return exFalse
	case x.isFalse():
		return exTrue
	case x.neg != nil:
		return *x.neg
	case x.op == "&&":
		negs := make([]ex, len(x.parts))
		for i, p := range x.parts {
			negs[i] = not(p)
		}
		return or(negs...)
	case x.op == "||":
		negs := make([]ex, len(x.parts))
		for i, p := range x.parts {
			negs[i] = not(p)
		}
		return and(negs...)
	}
	inner := x
	return ex{s: "!" + x.at(precUnary), prec: precUnary, neg: &inner}
}

// rel is a comparison a op b.
func rel(a ex, op string, b ex) ex {
	e := ex{s: a.at(precRel+1) + " " + op + " " + b.at(precRel+1), prec: precRel}
	if inv, ok := inverse[op]; ok {
		n := ex{s: a.at(precRel+1) + " " + inv + " " + b.at(precRel+1), prec: precRel}
		pos := e
		n.neg = &pos
		e.neg = &n
	}
	return e
}

// inverse are the comparisons whose negation is a comparison (CEL's
// comparisons are total on the values they accept: an error stays an
// error either way).
var inverse = map[string]string{"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}

// add is a + b (string concatenation or arithmetic).
func add(a, b ex) ex { return ex{s: a.at(precAdd) + " + " + b.at(precAdd+1), prec: precAdd} }

// cond is c ? a : b.
func cond(c, a, b ex) ex {
	switch {
	case c.isTrue():
		return a
	case c.isFalse():
		return b
	}
	return ex{s: c.at(precOr) + " ? " + a.at(precOr) + " : " + b.at(precCond), prec: precCond}
}

// call is the function call name(args...).
func call(name string, args ...ex) ex {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.s
	}
	return ex{s: name + "(" + strings.Join(parts, ", ") + ")", prec: precPrimary}
}

// method is the receiver call recv.name(args...).
func method(recv ex, name string, args ...ex) ex {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.s
	}
	return ex{s: recv.at(precPrimary) + "." + name + "(" + strings.Join(parts, ", ") + ")", prec: precPrimary}
}

// macro is a comprehension recv.name(v, body).
func macro(recv ex, name, v string, body ex) ex {
	return ex{s: recv.at(precPrimary) + "." + name + "(" + v + ", " + body.s + ")", prec: precPrimary}
}

// index is recv[i].
func index(recv, i ex) ex { return ex{s: recv.at(precPrimary) + "[" + i.s + "]", prec: precPrimary} }

// celReserved are the words CEL does not accept as a field selection.
var celReserved = map[string]bool{
	"true": true, "false": true, "null": true, "in": true, "as": true, "break": true, "const": true,
	"continue": true, "else": true, "for": true, "function": true, "if": true, "import": true,
	"let": true, "loop": true, "package": true, "return": true, "var": true,
	"void": true, "while": true,
}

// isIdent reports whether key can be selected with a dot.
func isIdent(key string) bool {
	if key == "" || celReserved[key] {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// field is recv.key, or recv['key'] for a key that is not an identifier.
func field(recv ex, key string) ex {
	if isIdent(key) {
		return ex{s: recv.at(precPrimary) + "." + key, prec: precPrimary}
	}
	return index(recv, strLit(key))
}

// optField is recv.?key (recv[?'key']), an optional.
func optField(recv ex, key string) ex {
	if isIdent(key) {
		return ex{s: recv.at(precPrimary) + ".?" + key, prec: precPrimary}
	}
	return ex{s: recv.at(precPrimary) + "[?" + strLit(key).s + "]", prec: precPrimary}
}

// has tests that recv holds key: has(recv.key), or 'key' in recv.
func has(recv ex, key string) ex {
	if isIdent(key) {
		return ex{s: "has(" + recv.at(precPrimary) + "." + key + ")", prec: precPrimary}
	}
	return rel(strLit(key), "in", recv)
}

// strLit is a CEL string literal, single-quoted.
func strLit(s string) ex {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				b.WriteString(`\u` + strconv.FormatInt(int64(r)+0x10000, 16)[1:])
				continue
			}
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return ex{s: b.String(), prec: precPrimary}
}

// lit is a CEL literal of a JSON-like value: integral numbers are ints.
func lit(v any) ex {
	switch t := v.(type) {
	case nil:
		return exNull
	case string:
		return strLit(t)
	case bool:
		if t {
			return exTrue
		}
		return exFalse
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return numLit(float64(i))
		}
		f, _ := t.Float64()
		return numLit(f)
	case float64:
		return numLit(t)
	case int:
		return numLit(float64(t))
	case int64:
		return numLit(float64(t))
	case []any:
		parts := make([]ex, len(t))
		kinds := make([]string, len(t))
		for i, x := range t {
			parts[i] = lit(x)
			kinds[i] = litKind(x)
		}
		return listOf(homogeneous(parts, kinds)...)
	case []string:
		parts := make([]string, len(t))
		for i, x := range t {
			parts[i] = strLit(x).s
		}
		return ex{s: "[" + strings.Join(parts, ", ") + "]", prec: precPrimary}
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		vals := make([]ex, len(keys))
		kinds := make([]string, len(keys))
		for i, k := range keys {
			vals[i] = lit(t[k])
			kinds[i] = litKind(t[k])
		}
		return mapOf(keys, homogeneous(vals, kinds))
	}
	return exNull
}

// numLit is a number literal: an int when integral, else a double.
func numLit(f float64) ex {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		if f < 0 {
			return ex{s: strconv.FormatInt(int64(f), 10), prec: precUnary}
		}
		return ex{s: strconv.FormatInt(int64(f), 10), prec: precPrimary}
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	if f < 0 {
		return ex{s: s, prec: precUnary}
	}
	return ex{s: s, prec: precPrimary}
}

// listOf is the list literal [xs...].
func listOf(xs ...ex) ex {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = x.s
	}
	return ex{s: "[" + strings.Join(parts, ", ") + "]", prec: precPrimary}
}

// litKind is the CEL type of a literal, for homogeneous.
func litKind(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "bool"
	case []any, []string:
		return "list"
	case map[string]any:
		return "map"
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1e15 {
			return "int"
		}
		return "double"
	}
	return "dyn"
}

// homogeneous wraps the elements of a list or map literal in dyn() when
// their types differ (CEL's literals must have one element type).
func homogeneous(xs []ex, kinds []string) []ex {
	if len(xs) < 2 {
		return xs
	}
	mixed := false
	for _, k := range kinds {
		if k != kinds[0] || k == "dyn" {
			mixed = true
		}
	}
	if !mixed {
		return xs
	}
	out := make([]ex, len(xs))
	for i, x := range xs {
		if strings.HasPrefix(x.s, "dyn(") {
			out[i] = x
			continue
		}
		out[i] = call("dyn", x)
	}
	return out
}

// mapOf is the map literal of keys and values.
func mapOf(keys []string, vals []ex) ex {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = strLit(k).s + ": " + vals[i].s
	}
	return ex{s: "{" + strings.Join(parts, ", ") + "}", prec: precPrimary}
}
