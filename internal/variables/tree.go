package variables

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gavelpolicy/gavel/internal/jsonnum"
)

// Tree is a pre-compiled JSON-like document (a rule body, a message, a patch
// ...): every string value and map key containing variables is found once at
// compile time with its JSON path; Substitute copies only the changed paths
// (copy-on-write). A Tree owns a private copy of the document, is immutable
// and safe for concurrent use.
type Tree struct {
	base any
	root *cnode // nil when the document has no variables
	vars []Variable
}

// cnode marks a place in the document below which there are variables.
type cnode struct {
	tmpl  *Template  // a string with variables
	keys  []keyNode  // a map: entries with variables in the key or below
	elems []elemNode // a list: elements with variables below
}

type keyNode struct {
	key     string    // key as stored in the compiled document
	keyTmpl *Template // nil when the key has no variables
	child   *cnode    // nil when the value has no variables
}

type elemNode struct {
	idx   int
	child *cnode
}

// Compile pre-compiles doc: a JSON-like tree made of map[string]any, []any
// (or []map[string]any), string, bool, nil and numbers (float64, int, int64,
// json.Number and the other Go number types). Strings and keys that only
// contain escapes (`\{{...}}`) are unescaped once, here. Any other value is an
// [*InvalidDocumentError]; a template nested too deeply is a [*ParseError].
// doc is not modified and not retained.
func Compile(doc any, opts ...CompileOption) (*Tree, error) {
	cfg, err := newCompileConfig(opts)
	if err != nil {
		return nil, err
	}
	c := compiler{cfg: cfg}
	base, root, err := c.value(doc)
	if err != nil {
		return nil, err
	}
	return &Tree{base: base, root: root, vars: c.vars}, nil
}

// Find lists the variables Compile(doc, opts...).Variables() would list,
// with the same errors, without copying the document: for callers that
// only check the expressions of a document.
func Find(doc any, opts ...CompileOption) ([]Variable, error) {
	cfg, err := newCompileConfig(opts)
	if err != nil {
		return nil, err
	}
	c := compiler{cfg: cfg, scan: true}
	if _, _, err := c.value(doc); err != nil {
		return nil, err
	}
	return c.vars, nil
}

type compiler struct {
	cfg  compileConfig
	vars []Variable
	// scan only collects the variables: no copy of the document is made
	scan bool
	// steps is the path of the value being compiled below the base path,
	// turned into a string only where a template or an error needs it
	steps []pathStep
}

type pathStep struct {
	key   string
	index int // -1 for a map key
}

// path renders the JSON path of the value being compiled.
func (c *compiler) path() string {
	var b strings.Builder
	b.WriteString(c.cfg.basePath)
	for _, st := range c.steps {
		b.WriteByte('/')
		if st.index >= 0 {
			b.WriteString(strconv.Itoa(st.index))
		} else {
			b.WriteString(st.key)
		}
	}
	return b.String()
}

func (c *compiler) value(v any) (any, *cnode, error) {
	switch t := v.(type) {
	case string:
		return c.str(t)
	case map[string]any:
		return c.object(t)
	case []any:
		return c.list(t)
	case []map[string]any:
		l := make([]any, len(t))
		for i, m := range t {
			l[i] = m
		}
		return c.list(l)
	case nil, bool, float64:
		return v, nil, nil
	default:
		if jsonnum.Is(v) {
			return v, nil, nil
		}
		return nil, nil, &InvalidDocumentError{Path: c.path(), Value: v}
	}
}

func (c *compiler) str(s string) (any, *cnode, error) {
	if !strings.Contains(s, "{{") {
		return s, nil, nil
	}
	t, err := parseTemplate(s, c.path(), &c.cfg)
	if err != nil {
		return nil, nil, err
	}
	if !t.HasVariables() {
		return t.text, nil, nil
	}
	c.vars = t.appendVariables(c.vars, false)
	return s, &cnode{tmpl: t}, nil
}

func (c *compiler) object(m map[string]any) (any, *cnode, error) {
	var out map[string]any
	if !c.scan {
		out = make(map[string]any, len(m))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var node *cnode
	for _, k := range keys {
		stored := k
		var kt *Template
		if strings.Contains(k, "{{") {
			t, err := parseTemplate(k, c.path(), &c.cfg)
			if err != nil {
				return nil, nil, err
			}
			if t.HasVariables() {
				kt = t
				c.vars = t.appendVariables(c.vars, true)
			} else {
				stored = t.text
			}
		}
		c.steps = append(c.steps, pathStep{key: k, index: -1})
		val, child, err := c.value(m[k])
		c.steps = c.steps[:len(c.steps)-1]
		if err != nil {
			return nil, nil, err
		}
		if !c.scan {
			out[stored] = val
		}
		if kt != nil || child != nil {
			if node == nil {
				node = &cnode{}
			}
			node.keys = append(node.keys, keyNode{key: stored, keyTmpl: kt, child: child})
		}
	}
	return out, node, nil
}

func (c *compiler) list(l []any) (any, *cnode, error) {
	var out []any
	if !c.scan {
		out = make([]any, len(l))
	}
	var node *cnode
	for i, e := range l {
		c.steps = append(c.steps, pathStep{index: i})
		val, child, err := c.value(e)
		c.steps = c.steps[:len(c.steps)-1]
		if err != nil {
			return nil, nil, err
		}
		if !c.scan {
			out[i] = val
		}
		if child != nil {
			if node == nil {
				node = &cnode{}
			}
			node.elems = append(node.elems, elemNode{idx: i, child: child})
		}
	}
	return out, node, nil
}

// HasVariables reports whether the document contains at least one expression.
func (t *Tree) HasVariables() bool { return t.root != nil }

// Document returns the compiled document (escape-only strings already
// unescaped). It is shared: treat it as read-only.
func (t *Tree) Document() any { return t.base }

// Variables lists every expression of the document with its path; within a
// string, inner expressions come before the outer ones.
func (t *Tree) Variables() []Variable { return slices.Clone(t.vars) }

// Substitute evaluates every variable and returns the substituted document.
// Only the maps and lists on the way to a changed string are copied; the rest
// is shared with the compiled document, so the result must be treated as
// read-only. A document without variables is returned as is, without any
// copy. Map keys are processed in sorted order; a key whose template gives a
// non-string is a [*KeyError] (a nil key value keeps the key as written, as
// upstream does).
func (t *Tree) Substitute(ev Evaluator, opts ...Option) (any, error) {
	cfg, err := newEvalConfig(opts)
	if err != nil {
		return nil, err
	}
	if t.root == nil {
		return t.base, nil
	}
	if ev == nil {
		return nil, ErrNilEvaluator
	}
	st := newEvalState(ev, cfg)
	return substitute(t.root, t.base, &st)
}

func substitute(n *cnode, v any, st *evalState) (any, error) {
	if n.tmpl != nil {
		return n.tmpl.render(st)
	}
	switch t := v.(type) {
	case map[string]any:
		out := maps.Clone(t)
		for _, kn := range n.keys {
			newKey := kn.key
			if kn.keyTmpl != nil {
				k, err := kn.keyTmpl.render(st)
				if err != nil {
					return nil, err
				}
				switch ks := k.(type) {
				case nil:
				case string:
					newKey = ks
				default:
					return nil, &KeyError{Key: kn.key, Path: kn.keyTmpl.path, Value: k}
				}
			}
			val := t[kn.key]
			if kn.child != nil {
				var err error
				if val, err = substitute(kn.child, val, st); err != nil {
					return nil, err
				}
			}
			if newKey != kn.key {
				delete(out, kn.key)
			}
			out[newKey] = val
		}
		return out, nil
	case []any:
		out := slices.Clone(t)
		for _, en := range n.elems {
			val, err := substitute(en.child, t[en.idx], st)
			if err != nil {
				return nil, err
			}
			out[en.idx] = val
		}
		return out, nil
	}
	return v, nil
}
