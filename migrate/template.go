package migrate

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/gavelpolicy/gavel/internal/variables"
)

// placeholder stands for the value of an inner {{ }} in the text of the
// expression around it: a JMESPath identifier no policy uses.
const placeholderPrefix = "__gavel_v"

var placeholderRE = regexp.MustCompile(placeholderPrefix + `([0-9]+)__`)

func placeholder(i int) string { return placeholderPrefix + strconv.Itoa(i) + "__" }

// jsonPlaceholderPrefix marks the value of an inner {{ }} written as a
// JSON literal (`{{ x }}`): the value itself, not its text.
const jsonPlaceholderPrefix = "__gavel_j"

func jsonPlaceholder(i int) string { return jsonPlaceholderPrefix + strconv.Itoa(i) + "__" }

// templateParts splits a Kyverno string into its literal text and its
// expressions, as upstream's engine reads them: the result is a string in
// which each expression's value is a placeholder, and the expressions in
// evaluation order (an expression may hold the placeholders of the inner
// ones it contains).
func templateParts(s string) (rendered any, exprs []string, err error) {
	t, err := variables.Parse(s)
	if err != nil {
		return nil, nil, unsupportedf("template", "%v", err)
	}
	if !t.HasVariables() {
		lit, _ := t.Literal()
		return lit, nil, nil
	}
	rec := variables.EvaluatorFunc(func(expr string) (any, error) {
		exprs = append(exprs, expr)
		return placeholder(len(exprs) - 1), nil
	})
	out, err := t.Render(rec)
	if err != nil {
		return nil, nil, unsupportedf("template", "%v", err)
	}
	return out, exprs, nil
}

// str converts a Kyverno string that may hold {{ }} into a CEL value: a
// literal, the value of a single expression, or the concatenation of the
// text and the expressions' values.
func (c *jp) str(s string) (jv, error) {
	if strings.Contains(s, placeholderPrefix) && c.dyn != nil {
		// a string of a document whose {{ }} were read before it
		if v, ok, err := c.dynString(s); ok || err != nil {
			return v, err
		}
	}
	rendered, exprs, err := templateParts(s)
	if err != nil {
		return jv{}, err
	}
	if len(exprs) == 0 {
		return jv{e: strLit(rendered.(string)), t: tString}, nil
	}
	vals := make([]jv, len(exprs))
	saved := c.dyn
	defer func() { c.dyn = saved }()
	c.dyn = map[string]jv{}
	for k, v := range saved {
		c.dyn[k] = v
	}
	for i, e := range exprs {
		v, err := c.template(e)
		if err != nil {
			return jv{}, err
		}
		vals[i] = v
		c.dyn[placeholder(i)] = v
	}
	text, _ := rendered.(string)
	if m := placeholderRE.FindStringSubmatchIndex(text); m != nil && m[0] == 0 && m[1] == len(text) {
		i, _ := strconv.Atoi(text[m[2]:m[3]])
		return vals[i], nil
	}
	return concat(text, vals)
}

// concat builds the string of text with each placeholder replaced by its
// value's text.
func concat(text string, vals []jv) (jv, error) {
	var parts []ex
	last := 0
	for _, m := range placeholderRE.FindAllStringSubmatchIndex(text, -1) {
		if m[0] > last {
			parts = append(parts, strLit(text[last:m[0]]))
		}
		i, _ := strconv.Atoi(text[m[2]:m[3]])
		t, err := asText(vals[i])
		if err != nil {
			return jv{}, err
		}
		parts = append(parts, t)
		last = m[1]
	}
	if last < len(text) {
		parts = append(parts, strLit(text[last:]))
	}
	if len(parts) == 0 {
		return jv{e: strLit(""), t: tString}, nil
	}
	out := parts[0]
	for _, p := range parts[1:] {
		out = add(out, p)
	}
	return jv{e: out, t: tString}, nil
}

// asText is a value as upstream splices it into a longer string: strings
// as they are, scalars in their JSON form.
func asText(v jv) (ex, error) {
	switch v.t {
	case tString:
		if v.opt {
			return v.value(strLit("")), nil
		}
		return v.e, nil
	case tNumber, tBool:
		return call("string", v.value(exNull)), nil
	case tList, tMap:
		// Kyverno writes the JSON of a list or map (encoding/json's,
		// as the json library's marshal)
		return call("json.marshal", v.value(exNull)), nil
	}
	return call("string", v.value(exNull)), nil
}

// dynField resolves a placeholder used as a field name (a."{{ x }}").
func (c *jp) dynField(name string) (jv, bool) {
	v, ok := c.dyn[name]
	return v, ok
}

// dynString resolves the placeholders of a string literal ('{{ x }}-y').
func (c *jp) dynString(s string) (jv, bool, error) {
	if !strings.Contains(s, placeholderPrefix) || c.dyn == nil {
		return jv{}, false, nil
	}
	ms := placeholderRE.FindAllStringSubmatchIndex(s, -1)
	if len(ms) == 0 {
		return jv{}, false, nil
	}
	vals := make([]jv, 0, len(c.dyn))
	for i := 0; ; i++ {
		v, ok := c.dyn[placeholder(i)]
		if !ok {
			break
		}
		vals = append(vals, v)
	}
	for _, m := range ms {
		i, _ := strconv.Atoi(s[m[2]:m[3]])
		if i >= len(vals) {
			return jv{}, false, fmt.Errorf("unknown placeholder %d", i)
		}
	}
	if ms[0][0] == 0 && ms[0][1] == len(s) {
		i, _ := strconv.Atoi(s[ms[0][2]:ms[0][3]])
		v := vals[i]
		if v.t != tString {
			t, err := asText(v)
			if err != nil {
				return jv{}, false, err
			}
			return jv{e: t, t: tString}, true, nil
		}
		return v, true, nil
	}
	v, err := concat(s, vals)
	return v, true, err
}
