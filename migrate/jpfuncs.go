package migrate

import (
	"strings"

	"github.com/jmespath-community/go-jmespath/pkg/parsing"
)

// function converts a JMESPath function call (JMESPath's and Kyverno's
// functions) into its CEL form.
func (c *jp) function(n parsing.ASTNode, cur jv, nd need) (jv, error) {
	name := n.Value.(string)
	args := make([]jv, len(n.Children))
	for i, ch := range n.Children {
		if ch.NodeType == parsing.ASTExpRef {
			return jv{}, unsupportedf("JMESPath function "+name, "expression references (&expr)")
		}
		argNeed := needValue
		if nullableArg(name, i) {
			argNeed = needNullable
		}
		v, err := c.node(ch, cur, argNeed)
		if err != nil {
			return jv{}, err
		}
		if v.sym != symNone {
			return jv{}, unsupportedf("JMESPath function "+name, "of Kyverno's context")
		}
		args[i] = v
	}
	arity := map[string]int{"length": 1, "contains": 2, "starts_with": 2, "ends_with": 2, "to_string": 1,
		"to_number": 1, "to_upper": 1, "to_lower": 1, "split": 2, "join": 2, "keys": 1, "values": 1,
		"regex_match": 2, "replace_all": 3, "label_match": 2, "sum": 1, "max": 1, "min": 1, "to_array": 1,
		"parse_json": 1, "parse_yaml": 1, "base64_decode": 1, "base64_encode": 1, "not_null": -1,
		"sort": 1, "reverse": 1, "truncate": 2, "equal_fold": 2, "pattern_match": 2, "abs": 1, "ceil": 1,
		"floor": 1, "lookup": 2, "sha256": 1, "type": 1, "to_boolean": 1, "divide": 2, "multiply": 2,
		"add": 2, "subtract": 2, "modulo": 2, "trim_prefix": 2, "trim_suffix": 2}
	if want, ok := arity[name]; ok && want >= 0 && len(args) != want {
		return jv{}, unsupportedf("JMESPath function "+name, "%d arguments", len(args))
	}
	val := func(i int) ex { return args[i].value(exNull) }
	switch name {
	case "length":
		return jv{e: call("size", val(0)), t: tNumber}, nil
	case "contains":
		return c.contains(args[0], args[1])
	case "starts_with":
		return jv{e: method(val(0), "startsWith", val(1)), t: tBool}, nil
	case "ends_with":
		return jv{e: method(val(0), "endsWith", val(1)), t: tBool}, nil
	case "to_string":
		return toString(args[0])
	case "to_number":
		if args[0].t == tNumber {
			return args[0], nil
		}
		return jv{e: call("double", val(0)), t: tNumber}, nil
	case "to_upper":
		return jv{e: method(val(0), "upperAscii"), t: tString}, nil
	case "to_lower":
		return jv{e: method(val(0), "lowerAscii"), t: tString}, nil
	case "split":
		return jv{e: method(val(0), "split", val(1)), t: tList, elem: tString}, nil
	case "join":
		return jv{e: method(val(1), "join", val(0)), t: tString}, nil
	case "keys":
		k := c.fresh("keys")
		defer c.release(k)
		return jv{e: macro(val(0), "map", k, ident(k)), t: tList, elem: tString, key: "keys"}, nil
	case "values":
		k := c.fresh("keys")
		defer c.release(k)
		return jv{e: macro(val(0), "map", k, index(val(0), ident(k))), t: tList}, nil
	case "regex_match":
		s := val(1)
		if args[1].t != tString {
			s = call("string", s)
		}
		return jv{e: method(s, "matches", val(0)), t: tBool}, nil
	case "pattern_match":
		s := val(1)
		if args[1].t != tString {
			s = call("string", s)
		}
		if args[0].t == tString && args[0].e.prec == precPrimary && isStringLiteral(args[0].e.s) {
			return jv{e: wildcardMatch(s, unquote(args[0].e.s)), t: tBool}, nil
		}
		return jv{}, unsupportedf("JMESPath function pattern_match", "a pattern that is not a literal")
	case "replace_all":
		return jv{e: method(val(0), "replace", val(1), val(2)), t: tString}, nil
	case "trim_prefix":
		return jv{e: cond(method(val(0), "startsWith", val(1)), method(val(0), "substring", call("size", val(1))), val(0)), t: tString}, nil
	case "trim_suffix":
		return jv{e: cond(method(val(0), "endsWith", val(1)),
			method(val(0), "substring", numLit(0), ex{s: "size(" + val(0).s + ") - size(" + val(1).s + ")", prec: precAdd}), val(0)), t: tString}, nil
	case "label_match":
		k := c.freshName("key")
		defer c.release(k)
		sel, labels := val(0), val(1)
		return jv{e: macro(sel, "all", k, and(rel(ident(k), "in", labels), rel(index(labels, ident(k)), "==", index(sel, ident(k))))), t: tBool}, nil
	}
	return c.moreFunctions(name, args, val)
}

// moreFunctions converts the functions on lists, numbers, encodings and
// time (function converts those on strings and maps).
func (c *jp) moreFunctions(name string, args []jv, val func(int) ex) (jv, error) {
	switch name {
	case "sum":
		return jv{e: method(val(0), "sum"), t: tNumber}, nil
	case "max", "min":
		return jv{e: method(val(0), name), t: args[0].elem}, nil
	case "to_array":
		if args[0].t == tList {
			return args[0], nil
		}
		if args[0].t != tAny {
			return jv{e: listOf(val(0)), t: tList, elem: args[0].t}, nil
		}
		return jv{e: cond(rel(call("type", val(0)), "==", ident("list")), val(0), listOf(val(0))), t: tList}, nil
	case "parse_json":
		return jv{e: call("json.unmarshal", val(0))}, nil
	case "parse_yaml":
		return jv{e: call("yaml.parse", val(0))}, nil
	case "base64_decode":
		return jv{e: call("string", call("base64.decode", val(0))), t: tString}, nil
	case "base64_encode":
		return jv{e: call("base64.encode", call("bytes", val(0))), t: tString}, nil
	case "not_null":
		return notNull(args)
	case "sort":
		return jv{e: method(val(0), "sort"), t: tList, elem: args[0].elem}, nil
	case "reverse":
		return jv{e: method(val(0), "reverse"), t: args[0].t, elem: args[0].elem}, nil
	case "truncate":
		s, l := val(0), val(1)
		return jv{e: cond(rel(call("size", s), ">", l), method(s, "substring", numLit(0), call("int", l)), s), t: tString}, nil
	case "equal_fold":
		return jv{e: rel(method(val(0), "lowerAscii"), "==", method(val(1), "lowerAscii")), t: tBool}, nil
	case "abs":
		return jv{e: call("math.abs", val(0)), t: tNumber}, nil
	case "ceil", "floor":
		return jv{e: call("math."+name, call("double", val(0))), t: tNumber}, nil
	case "lookup":
		if args[0].opt {
			return jv{e: ex{s: args[0].e.at(precPrimary) + "[?" + val(1).s + "]", prec: precPrimary}, opt: true}, nil
		}
		return jv{e: ex{s: val(0).at(precPrimary) + "[?" + val(1).s + "]", prec: precPrimary}, opt: true}, nil
	case "sha256":
		return jv{e: call("sha256", val(0)), t: tString}, nil
	case "divide", "multiply", "add", "subtract", "modulo":
		if args[0].t == tNumber && args[1].t == tNumber {
			op := map[string]string{"divide": "/", "multiply": "*", "add": "+", "subtract": "-", "modulo": "%"}[name]
			prec := precMul
			if op == "+" || op == "-" {
				prec = precAdd
			}
			l, r := call("double", val(0)), call("double", val(1))
			return jv{e: ex{s: l.at(prec) + " " + op + " " + r.at(prec+1), prec: prec}, t: tNumber}, nil
		}
		if name == "divide" && args[0].t != tNumber && args[1].t != tNumber && args[0].t != tList && args[1].t != tList {
			// Kyverno's quantity / quantity is the ratio of their
			// approximate values (a string that is not a quantity, a
			// duration, is an error here)
			q := func(i int) ex { return method(call("quantity", val(i)), "asApproximateFloat") }
			return jv{e: ex{s: q(0).s + " / " + q(1).s, prec: precMul}, t: tNumber}, nil
		}
		return jv{}, unsupportedf("JMESPath function "+name, "Kyverno's arithmetic on quantities and durations")
	case "time_now_utc":
		if len(args) != 0 {
			return jv{}, unsupportedf("JMESPath function "+name, "%d arguments", len(args))
		}
		return jv{e: call("string", call("time.now")), t: tString}, nil
	case "time_to_cron", "time_add", "time_since", "time_utc":
		return timeFunction(name, args, val)
	case "merge":
		return c.merge(args)
	case "regex_replace_all", "regex_replace_all_literal":
		return regexReplace(name, args, val)
	case "random":
		if len(args) != 1 {
			return jv{}, unsupportedf("JMESPath function "+name, "%d arguments", len(args))
		}
		return jv{e: call("random", val(0)), t: tString}, nil
	}
	return jv{}, unsupportedf("JMESPath function "+name, "no CEL equivalent")
}

// nullableArg reports the arguments a function accepts null in.
func nullableArg(name string, i int) bool {
	switch name {
	case "not_null", "to_string", "to_array", "type", "lookup":
		return true
	case "contains":
		return i == 1
	}
	return false
}

// contains converts contains(subject, search): membership in a list,
// or a substring.
func (c *jp) contains(subject, search jv) (jv, error) {
	s, x := subject.value(exNull), search.value(exNull)
	switch subject.t {
	case tList:
		return jv{e: rel(x, "in", s), t: tBool}, nil
	case tString:
		return jv{e: method(s, "contains", x), t: tBool}, nil
	}
	if search.t == tString && subject.key != "" && stringFields[subject.key] {
		return jv{e: method(s, "contains", x), t: tBool}, nil
	}
	// unknown: as JMESPath, by the subject's type
	return jv{e: cond(rel(call("type", s), "==", ident("string")), method(s, "contains", x), rel(x, "in", s)), t: tBool}, nil
}

// toString converts to_string(v): strings unchanged, other scalars in
// their JSON form.
func toString(v jv) (jv, error) {
	switch v.t {
	case tString:
		if v.opt {
			return jv{e: v.value(exNull), t: tAny}, nil
		}
		return v, nil
	case tNumber, tBool:
		return jv{e: call("string", v.value(exNull)), t: tString}, nil
	case tList, tMap:
		// JMESPath's JSON text: encoding/json's, as json.marshal
		return jv{e: call("json.marshal", v.value(exNull)), t: tString}, nil
	}
	return jv{e: call("string", v.value(exNull)), t: tString}, nil
}

// notNull converts not_null(a, b, ...): the first argument that is not
// null.
func notNull(args []jv) (jv, error) {
	if len(args) == 0 {
		return jv{}, unsupportedf("JMESPath function not_null", "no arguments")
	}
	out := args[len(args)-1].value(exNull)
	t := args[len(args)-1].t
	for i := len(args) - 2; i >= 0; i-- {
		a := args[i]
		if a.opt {
			out = method(a.e, "orValue", out)
		} else {
			out = cond(rel(a.e, "!=", exNull), a.e, out)
		}
		if a.t != t {
			t = tAny
		}
	}
	return jv{e: out, t: t}, nil
}

// isStringLiteral reports a CEL single-quoted string literal.
func isStringLiteral(s string) bool {
	if len(s) < 2 || s[0] != '\'' {
		return false
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\'':
			return i == len(s)-1
		}
	}
	return false
}

// unquote reads back a literal strLit wrote.
func unquote(s string) string {
	s = s[1 : len(s)-1]
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'n':
				out = append(out, '\n')
			case 't':
				out = append(out, '\t')
			case 'r':
				out = append(out, '\r')
			default:
				out = append(out, s[i])
			}
			continue
		}
		out = append(out, s[i])
	}
	return string(out)
}

// timestampOf is the timestamp of an RFC 3339 time string (the string of
// a timestamp, time_now_utc's, is that timestamp).
func timestampOf(v jv, e ex) ex {
	if strings.HasPrefix(e.s, "string(") && strings.HasSuffix(e.s, ")") && matching(e.s, len("string")) == len(e.s)-1 {
		inner := e.s[len("string(") : len(e.s)-1]
		if inner == "time.now()" || strings.HasPrefix(inner, "timestamp(") {
			return ex{s: inner, prec: precPrimary}
		}
	}
	return call("timestamp", e)
}

// timeFunction converts Kyverno's time functions on RFC 3339 strings:
// time_to_cron (the time library's toCron), time_add and time_since
// (timestamp and duration arithmetic; time_since's duration is CEL's
// text of it, in seconds, which the duration operators read back),
// time_utc.
func timeFunction(name string, args []jv, val func(int) ex) (jv, error) {
	want := map[string]int{"time_to_cron": 1, "time_add": 2, "time_since": 3, "time_utc": 1}[name]
	if len(args) != want {
		return jv{}, unsupportedf("JMESPath function "+name, "%d arguments", len(args))
	}
	switch name {
	case "time_to_cron":
		return jv{e: call("time.toCron", timestampOf(args[0], val(0))), t: tString}, nil
	case "time_add":
		return jv{e: call("string", add(timestampOf(args[0], val(0)), call("duration", val(1)))), t: tString}, nil
	case "time_utc":
		return jv{e: call("string", timestampOf(args[0], val(0))), t: tString}, nil
	}
	// time_since(layout, t1, t2): t2 (now when empty) - t1
	if !isStringLiteral(val(0).s) || unquote(val(0).s) != "" {
		return jv{}, unsupportedf("JMESPath function time_since", "a layout other than RFC 3339 ('')")
	}
	end := ex{s: "time.now()", prec: precPrimary}
	if !isStringLiteral(val(2).s) || unquote(val(2).s) != "" {
		end = timestampOf(args[2], val(2))
	}
	d := ex{s: end.at(precAdd) + " - " + timestampOf(args[1], val(1)).at(precAdd+1), prec: precAdd}
	return jv{e: call("string", d), t: tString}, nil
}

// merge converts merge(a, b, ...): the keys of every map, a later map's
// value winning, built with transform.listObjToMap.
func (c *jp) merge(args []jv) (jv, error) {
	if len(args) < 1 {
		return jv{}, unsupportedf("JMESPath function merge", "no arguments")
	}
	if len(args) == 1 {
		return args[0], nil
	}
	k := c.freshName("key")
	defer c.release(k)
	// the keys: those of each map that no later map has, in order
	var keyParts, pick []ex
	for i, a := range args {
		m := a.value(ex{s: "{}", prec: precPrimary})
		keys := macro(m, "map", k, ident(k))
		var later []ex
		for _, b := range args[i+1:] {
			later = append(later, not(rel(ident(k), "in", b.value(ex{s: "{}", prec: precPrimary}))))
		}
		if len(later) > 0 {
			keys = macro(keys, "filter", k, and(later...))
		}
		keyParts = append(keyParts, keys)
		pick = append(pick, m)
	}
	ks := keyParts[0]
	for _, p := range keyParts[1:] {
		ks = add(ks, p)
	}
	// the value of a key: from the last map that has it
	value := index(pick[0], ident(k))
	for _, m := range pick[1:] {
		value = cond(rel(ident(k), "in", m), index(m, ident(k)), value)
	}
	names := c.freshName("keys")
	defer c.release(names)
	e := call("cel.bind", ident(names), ks, call("transform.listObjToMap",
		macro(ident(names), "map", k, ex{s: "{'key': " + k + "}", prec: precPrimary}),
		macro(ident(names), "map", k, ex{s: "{'value': " + value.s + "}", prec: precPrimary}),
		strLit("key"), strLit("value")))
	return jv{e: e, t: tMap}, nil
}

// regexReplace converts regex_replace_all(regex, src, replacement) into
// the regex library's replace: Go's $1 and ${1} references become \1;
// the literal variant escapes the replacement's backslashes.
func regexReplace(name string, args []jv, val func(int) ex) (jv, error) {
	if len(args) != 3 {
		return jv{}, unsupportedf("JMESPath function "+name, "%d arguments", len(args))
	}
	src := val(1)
	if args[1].t != tString {
		src = call("string", src)
	}
	repl := val(2)
	if !isStringLiteral(repl.s) {
		return jv{}, unsupportedf("JMESPath function "+name, "a replacement that is not a literal")
	}
	text := unquote(repl.s)
	if name == "regex_replace_all_literal" {
		text = strings.ReplaceAll(text, `\`, `\\`)
	} else {
		var ok bool
		if text, ok = goToCELReplacement(text); !ok {
			return jv{}, unsupportedf("JMESPath function "+name, "a replacement with named groups")
		}
	}
	return jv{e: call("regex.replace", src, val(0), strLit(text)), t: tString}, nil
}

// goToCELReplacement rewrites a Go regexp replacement ($1, ${1}, $$)
// into the regex library's (\1, \\ for a backslash); false for a named
// group.
func goToCELReplacement(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			b.WriteString(`\\`)
		case s[i] != '$':
			b.WriteByte(s[i])
		case i+1 < len(s) && s[i+1] == '$':
			b.WriteByte('$')
			i++
		default:
			name, n := replacementName(s[i+1:])
			if name == "" {
				// Go drops a $ not followed by a name
				i += n
				continue
			}
			for _, r := range name {
				if r < '0' || r > '9' {
					return "", false
				}
			}
			b.WriteString(`\` + name)
			i += n
		}
	}
	return b.String(), true
}

// replacementName reads the name after a $: {name} or the longest run of
// letters, digits and underscores; n is the length read.
func replacementName(s string) (string, int) {
	if strings.HasPrefix(s, "{") {
		if end := strings.IndexByte(s, '}'); end > 0 {
			return s[1:end], end + 1
		}
		return "", 0
	}
	n := 0
	for n < len(s) && (isIdentByte(s[n])) {
		n++
	}
	return s[:n], n
}
