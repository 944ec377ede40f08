package variables

import (
	"slices"
	"strings"
)

// Template is one string pre-split at compile time into literal parts and
// expressions. Nested `{{ a.{{ b }} }}` is kept as a tree; escapes `\{{` are
// recorded as literals; the shallow form `{{- expr }}` is accepted. A Template
// is immutable and safe for concurrent use.
type Template struct {
	src   string
	path  string
	nodes []exprNode // in evaluation order; inner nodes come before outer ones
	top   []part     // the string: literal parts and references to nodes
	text  string     // the whole string when there is no expression
	whole bool       // the string is exactly one expression

	// `{{ @ }}` support, computed when a node may be "@"
	atTail   []string
	atReq    string
	atTarget string
}

// part is a literal run (node < 0) or a reference to an expression node.
type part struct {
	lit  string
	node int
}

// exprNode is one `{{ ... }}`.
type exprNode struct {
	parts  []part // what is between the delimiters
	static bool   // no inner expression: expr is final
	expr   string // trimmed expression text, shallow dash dropped (static only)
	src    string // as written, delimiters included
	depth  int
}

// Variable describes one expression found at compile time.
type Variable struct {
	// Path is the raw JSON path of the string holding the expression (for a
	// map key: the path of the map).
	Path string
	// Key is true when the expression is in a map key.
	Key bool
	// Source is the expression as written, delimiters included.
	Source string
	// Expression is the expression text, trimmed, shallow dash dropped. Inner
	// expressions appear as written (their values are known only when
	// evaluating).
	Expression string
	// Nested is true when Expression contains inner expressions.
	Nested bool
}

// token values: bytes of the string, or phBase+i for the expression node i
const phBase = 256

// Parse compiles one string. It never fails on unusual text (anything that is
// not a well-formed template stays literal, as upstream); it fails only when
// the nesting limit is exceeded or an option is invalid.
func Parse(s string, opts ...CompileOption) (*Template, error) {
	cfg, err := newCompileConfig(opts)
	if err != nil {
		return nil, err
	}
	return parseTemplate(s, cfg.basePath, &cfg)
}

func parseTemplate(s, path string, cfg *compileConfig) (*Template, error) {
	maxNesting := cfg.maxNesting
	t := &Template{src: s, path: path, text: s}
	if !strings.Contains(s, "{{") {
		return t, nil
	}
	toks := make([]int32, len(s))
	for i := 0; i < len(s); i++ {
		toks[i] = int32(s[i])
	}
	maxPasses := 2*maxNesting + 2
	for pass := 0; ; pass++ {
		spans := findTemplates(toks)
		if len(spans) == 0 {
			break
		}
		if pass >= maxPasses {
			return nil, &ParseError{Template: s, Path: path, Reason: "templates nested too deeply"}
		}
		next := make([]int32, 0, len(toks))
		prev := 0
		for _, sp := range spans {
			next = append(next, toks[prev:sp.start]...)
			n, err := t.newNode(toks[sp.start+2:sp.end-2], maxNesting)
			if err != nil {
				return nil, err
			}
			next = append(next, int32(phBase+n))
			prev = sp.end
		}
		toks = append(next, toks[prev:]...)
	}
	// escapes: a backslash right before a complete `{{...}}` is dropped.
	// Like upstream, every occurrence of each escaped text is unescaped, once
	// per time that text was found.
	if spans := findEscapes(toks); len(spans) > 0 {
		seqs := make([][]int32, len(spans))
		for i, sp := range spans {
			seqs[i] = slices.Clone(toks[sp.start:sp.end])
		}
		for _, seq := range seqs {
			toks = replaceAllTokens(toks, seq, seq[1:])
		}
	}
	t.top = toParts(toks)
	switch {
	case len(t.nodes) == 0:
		t.top = nil
		t.text = renderLiteral(toks)
	case len(t.top) == 1 && t.top[0].node >= 0:
		t.whole = true
	}
	t.prepareCurrentValue()
	return t, nil
}

// newNode records the expression whose content (between the delimiters) is
// content and returns its index.
func (t *Template) newNode(content []int32, maxNesting int) (int, error) {
	n := exprNode{parts: toParts(content)}
	var src strings.Builder
	src.WriteString("{{")
	n.static = true
	for _, p := range n.parts {
		if p.node >= 0 {
			n.static = false
			inner := &t.nodes[p.node]
			src.WriteString(inner.src)
			if inner.depth+1 > n.depth {
				n.depth = inner.depth + 1
			}
			continue
		}
		src.WriteString(p.lit)
	}
	src.WriteString("}}")
	n.src = src.String()
	if n.depth+1 > maxNesting {
		return 0, &ParseError{Template: t.src, Path: t.path, Reason: "templates nested too deeply"}
	}
	if n.static {
		n.expr = cleanExpression(n.src[2 : len(n.src)-2])
	}
	t.nodes = append(t.nodes, n)
	return len(t.nodes) - 1, nil
}

// cleanExpression trims the text between the delimiters and drops the dash of
// the shallow form.
func cleanExpression(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "-") {
		s = strings.TrimSpace(s[1:])
	}
	return s
}

func (t *Template) prepareCurrentValue() {
	need := false
	for i := range t.nodes {
		if !t.nodes[i].static || t.nodes[i].expr == "@" {
			need = true
			break
		}
	}
	if !need {
		return
	}
	t.atTail = currentValueTail(t.path)
	t.atReq = currentValueExpr(prefixRequestObject, t.atTail)
	t.atTarget = currentValueExpr(prefixTarget, t.atTail)
}

type span struct{ start, end int } // start of "{{", end just past "}}"

func isOpenAt(toks []int32, i int) bool {
	return i >= 0 && i+1 < len(toks) && toks[i] == '{' && toks[i+1] == '{'
}

// bodyEnd matches upstream's template body `(?:\{[^{}]*\}|[^{}])*\}\}` from
// toks[i:] and returns the index just past the closing braces. Expression
// tokens count as ordinary characters.
func bodyEnd(toks []int32, i int) (int, bool) {
	n := len(toks)
	for i < n {
		switch toks[i] {
		case '}':
			if i+1 < n && toks[i+1] == '}' {
				return i + 2, true
			}
			return 0, false
		case '{':
			j := i + 1
			for j < n && toks[j] != '{' && toks[j] != '}' {
				j++
			}
			if j < n && toks[j] == '}' {
				i = j + 1
				continue
			}
			return 0, false
		default:
			i++
		}
	}
	return 0, false
}

// findTemplates finds, left to right and without overlap, the templates that
// upstream's `(^|[^\\])(\{\{(?:\{[^{}]*\}|[^{}])*\}\})` finds: a template at
// the start of the string, or one preceded by a character other than a
// backslash (that character is consumed by the match).
func findTemplates(toks []int32) []span {
	var out []span
	for p := 0; p < len(toks); {
		if p == 0 && isOpenAt(toks, 0) {
			if e, ok := bodyEnd(toks, 2); ok {
				out = append(out, span{0, e})
				p = e
				continue
			}
		}
		if toks[p] != '\\' && isOpenAt(toks, p+1) {
			if e, ok := bodyEnd(toks, p+3); ok {
				out = append(out, span{p + 1, e})
				p = e
				continue
			}
		}
		p++
	}
	return out
}

// findEscapes finds the escaped templates `\{{...}}` (upstream's
// `\\\{\{(\{[^{}]*\}|[^{}])*\}\}`), left to right and without overlap.
func findEscapes(toks []int32) []span {
	var out []span
	for p := 0; p+2 < len(toks); {
		if toks[p] == '\\' && toks[p+1] == '{' && toks[p+2] == '{' {
			if e, ok := bodyEnd(toks, p+3); ok {
				out = append(out, span{p, e})
				p = e
				continue
			}
		}
		p++
	}
	return out
}

// replaceAllTokens is strings.ReplaceAll over tokens.
func replaceAllTokens(toks, old, repl []int32) []int32 {
	out := make([]int32, 0, len(toks))
	for i := 0; i < len(toks); {
		if i+len(old) <= len(toks) && slices.Equal(toks[i:i+len(old)], old) {
			out = append(out, repl...)
			i += len(old)
			continue
		}
		out = append(out, toks[i])
		i++
	}
	return out
}

func toParts(toks []int32) []part {
	var parts []part
	start := 0
	flush := func(end int) {
		if end > start {
			parts = append(parts, part{lit: renderLiteral(toks[start:end]), node: -1})
		}
	}
	for i, tk := range toks {
		if tk >= phBase {
			flush(i)
			parts = append(parts, part{node: int(tk - phBase)})
			start = i + 1
		}
	}
	flush(len(toks))
	return parts
}

func renderLiteral(toks []int32) string {
	b := make([]byte, len(toks))
	for i, tk := range toks {
		b[i] = byte(tk)
	}
	return string(b)
}

// HasVariables reports whether the string contains at least one expression.
func (t *Template) HasVariables() bool { return len(t.nodes) > 0 }

// Literal returns what Render returns for a template without variables
// (its text, escapes resolved), and false for one with variables.
func (t *Template) Literal() (string, bool) {
	if len(t.nodes) > 0 {
		return "", false
	}
	return t.text, true
}

// String returns the template as written.
func (t *Template) String() string { return t.src }

// Path returns the JSON path the template was compiled at.
func (t *Template) Path() string { return t.path }

// Variables lists the expressions of the template in evaluation order (inner
// expressions before the outer ones).
func (t *Template) Variables() []Variable {
	return t.appendVariables(nil, false)
}

func (t *Template) appendVariables(dst []Variable, key bool) []Variable {
	for i := range t.nodes {
		n := &t.nodes[i]
		v := Variable{Path: t.path, Key: key, Source: n.src, Nested: !n.static, Expression: n.expr}
		if !n.static {
			v.Expression = cleanExpression(n.src[2 : len(n.src)-2])
		}
		dst = append(dst, v)
	}
	return dst
}

// Render evaluates the template. A template that is exactly one expression
// returns the value with its JSON type; otherwise the result is a string in
// which values are rendered as upstream does (strings as they are, anything
// else as compact JSON). A template without expressions returns its text,
// escapes removed.
func (t *Template) Render(ev Evaluator, opts ...Option) (any, error) {
	cfg, err := newEvalConfig(opts)
	if err != nil {
		return nil, err
	}
	if len(t.nodes) == 0 {
		return t.text, nil
	}
	st := newEvalState(ev, cfg)
	return t.render(&st)
}

func (t *Template) render(st *evalState) (any, error) {
	if len(t.nodes) == 0 {
		return t.text, nil
	}
	if st.ev == nil {
		return nil, ErrNilEvaluator
	}
	if t.whole && len(t.nodes) == 1 {
		// the common "{{ expr }}": its value, without the lists below
		return st.resolve(t.rewrite(t.nodes[0].expr, st), t.path)
	}
	var vals []any
	var exprs []string
	var buf []byte
	if len(t.nodes) <= 4 {
		var v [4]any
		var e [4]string
		vals, exprs = v[:len(t.nodes)], e[:len(t.nodes)]
	} else {
		vals, exprs = make([]any, len(t.nodes)), make([]string, len(t.nodes))
	}
	for i := range t.nodes {
		n := &t.nodes[i]
		expr := n.expr
		if !n.static {
			buf = buf[:0]
			for _, p := range n.parts {
				if p.node < 0 {
					buf = append(buf, p.lit...)
					continue
				}
				var err error
				if buf, err = appendText(buf, vals[p.node]); err != nil {
					return nil, &ResolveError{Variable: exprs[p.node], Path: t.path, Err: err}
				}
			}
			expr = cleanExpression(string(buf))
		}
		expr = t.rewrite(expr, st)
		v, err := st.resolve(expr, t.path)
		if err != nil {
			return nil, err
		}
		vals[i], exprs[i] = v, expr
	}
	if t.whole {
		return vals[t.top[0].node], nil
	}
	buf = buf[:0]
	for _, p := range t.top {
		if p.node < 0 {
			buf = append(buf, p.lit...)
			continue
		}
		var err error
		if buf, err = appendText(buf, vals[p.node]); err != nil {
			return nil, &ResolveError{Variable: exprs[p.node], Path: t.path, Err: err}
		}
	}
	return string(buf), nil
}

// rewrite applies upstream's rewriting of an expression: `@` becomes the path
// of the current value, and on DELETE requests request.object becomes
// request.oldObject.
func (t *Template) rewrite(expr string, st *evalState) string {
	if expr == "@" {
		switch prefix := st.currentPrefix(); prefix {
		case prefixRequestObject:
			expr = t.atReq
		case prefixTarget:
			expr = t.atTarget
		default:
			expr = currentValueExpr(prefix, t.atTail)
		}
	}
	if st.cfg.deleteRequest {
		expr = strings.ReplaceAll(expr, "request.object", "request.oldObject")
	}
	return expr
}
