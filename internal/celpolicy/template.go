package celpolicy

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	yaml "sigs.k8s.io/yaml/goyaml.v3"

	"github.com/gavelpolicy/gavel/internal/cel"
)

// A template is a generate entry's YAML (spec.generate[].template): one or
// more documents, each a resource. With interpolation, "(( expr ))"
// placeholders are CEL expressions on the evaluation's variables: one
// that is a whole scalar is replaced by its value (of any type), one
// embedded in a string by its text (a scalar only); "\((" is a literal
// "((". Placeholders in mapping keys are refused.
type template struct {
	docs []tnode
	// reads is what the placeholders read.
	reads Reads
}

// tnode is a compiled part of a template document.
type tnode interface {
	render(ev *cel.Evaluation) (any, error)
}

type tliteral struct{ v any }

type tmapping struct {
	keys []string
	vals []tnode
}

type tsequence struct{ items []tnode }

// tsplice is a scalar that is one placeholder.
type tsplice struct{ prog *cel.Program }

// tinterp is a scalar mixing text and placeholders; progs[i] is the
// program of parts[i] when it is a placeholder.
type tinterp struct {
	parts []string
	progs []*cel.Program
}

// compileTemplate parses a template; placeholders (when interpolate) are
// compiled with comp, so that they see the policy's variables.
func compileTemplate(comp *cel.Compiler, value string, interpolate bool) (*template, error) {
	tc := &templateCompiler{comp: comp, interpolate: interpolate, seen: map[*yaml.Node]bool{}, progs: map[string]*cel.Program{}}
	dec := yaml.NewDecoder(strings.NewReader(value))
	t := &template{}
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("failed to parse YAML: %v", err)
		}
		root := &doc
		if root.Kind == yaml.DocumentNode {
			if len(root.Content) == 0 {
				continue
			}
			root = root.Content[0]
		}
		if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
			continue
		}
		if err := acyclic(root, map[*yaml.Node]bool{}, map[*yaml.Node]bool{}, 0); err != nil {
			return nil, err
		}
		n, err := tc.node(root)
		if err != nil {
			return nil, err
		}
		switch x := n.(type) {
		case *tmapping, *tsplice:
		case *tliteral:
			if _, ok := x.v.(map[string]any); !ok {
				return nil, fmt.Errorf("line %d: a document must be a mapping (a resource)", root.Line)
			}
		default:
			return nil, fmt.Errorf("line %d: a document must be a mapping (a resource)", root.Line)
		}
		t.docs = append(t.docs, n)
	}
	for _, p := range tc.progs {
		t.reads.note(p)
	}
	if len(t.docs) == 0 {
		return nil, errors.New("the template has no document")
	}
	return t, nil
}

type templateCompiler struct {
	comp        *cel.Compiler
	interpolate bool
	// seen remembers hasPlaceholder's answers
	seen map[*yaml.Node]bool
	// nodes counts the nodes compiled
	nodes int
	// progs are the placeholders' programs by expression
	progs map[string]*cel.Program
}

func (tc *templateCompiler) node(n *yaml.Node) (tnode, error) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	// aliases expand: bound what a template may make its renderer build
	if tc.nodes++; tc.nodes > maxTemplateNodes {
		return nil, fmt.Errorf("line %d: the template expands to more than %d nodes", n.Line, maxTemplateNodes)
	}
	if !tc.interpolate || !tc.hasPlaceholder(n) {
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %v", n.Line, err)
		}
		return &tliteral{v: jsonLike(v)}, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := &tmapping{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch {
			case k.Kind != yaml.ScalarNode:
				return nil, fmt.Errorf("line %d: mapping keys must be scalars", k.Line)
			case strings.Contains(strings.ReplaceAll(k.Value, `\((`, ""), "(("):
				return nil, fmt.Errorf("line %d: placeholders are not supported in mapping keys; use a whole-value placeholder on the parent field", k.Line)
			case k.Value == "<<":
				return nil, fmt.Errorf("line %d: merge keys are not supported in parts with placeholders", k.Line)
			}
			vn, err := tc.node(v)
			if err != nil {
				return nil, err
			}
			m.keys, m.vals = append(m.keys, k.Value), append(m.vals, vn)
		}
		return m, nil
	case yaml.SequenceNode:
		s := &tsequence{}
		for _, item := range n.Content {
			in, err := tc.node(item)
			if err != nil {
				return nil, err
			}
			s.items = append(s.items, in)
		}
		return s, nil
	case yaml.ScalarNode:
		return tc.scalar(n)
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

func (tc *templateCompiler) scalar(n *yaml.Node) (tnode, error) {
	parts, exprs, err := splitPlaceholders(n.Value)
	if err != nil {
		return nil, fmt.Errorf("line %d: %v", n.Line, err)
	}
	progs := make([]*cel.Program, len(parts))
	count := 0
	for i, isExpr := range exprs {
		if !isExpr {
			continue
		}
		p, ok := tc.progs[parts[i]]
		if !ok {
			var err error
			if p, err = tc.comp.Compile(parts[i], cel.Variable); err != nil {
				return nil, fmt.Errorf("line %d: placeholder %q: %v", n.Line, parts[i], err)
			}
			tc.progs[parts[i]] = p
		}
		progs[i] = p
		count++
	}
	switch {
	case count == 0:
		return &tliteral{v: strings.Join(parts, "")}, nil
	case count == 1 && len(parts) == 1:
		return &tsplice{prog: progs[0]}, nil
	}
	return &tinterp{parts: parts, progs: progs}, nil
}

// Bounds of a template: the nesting of its documents, and the nodes its
// interpolated parts expand to (aliases included).
const (
	maxTemplateDepth = 1000
	maxTemplateNodes = 10000
)

// acyclic refuses an alias to a node that contains it (the document would
// be infinite) and documents nested deeper than maxTemplateDepth; active
// holds the nodes being walked, done those checked already (each node is
// walked once, however many aliases name it).
func acyclic(n *yaml.Node, active, done map[*yaml.Node]bool, depth int) error {
	if depth > maxTemplateDepth {
		return fmt.Errorf("line %d: the document is nested more than %d deep", n.Line, maxTemplateDepth)
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return fmt.Errorf("line %d: unknown alias", n.Line)
		}
		if active[n.Alias] {
			return fmt.Errorf("line %d: the alias %q refers to a node that contains it", n.Line, n.Value)
		}
		return acyclic(n.Alias, active, done, depth+1)
	}
	if done[n] {
		return nil
	}
	active[n] = true
	defer delete(active, n)
	for _, c := range n.Content {
		if err := acyclic(c, active, done, depth+1); err != nil {
			return err
		}
	}
	done[n] = true
	return nil
}

// hasPlaceholder reports whether a node holds a placeholder or an escaped
// one (each node is looked at once: an alias's answer is remembered).
func (tc *templateCompiler) hasPlaceholder(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if v, ok := tc.seen[n]; ok {
		return v
	}
	v := n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "((")
	for _, c := range n.Content {
		if v {
			break
		}
		v = tc.hasPlaceholder(c)
	}
	tc.seen[n] = v
	return v
}

// splitPlaceholders splits a scalar into text and placeholder parts
// (exprs[i] tells a placeholder, trimmed). Inside a placeholder,
// parentheses nest and CEL string literals are skipped, so that
// "(( f(x) ))" and "(( '))' ))" end where they should.
func splitPlaceholders(s string) (parts []string, exprs []bool, err error) {
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			parts, exprs = append(parts, text.String()), append(exprs, false)
			text.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], `\((`):
			text.WriteString("((")
			i += 3
		case strings.HasPrefix(s[i:], "(("):
			expr, next, err := placeholderAt(s, i)
			if err != nil {
				return nil, nil, err
			}
			flush()
			parts, exprs = append(parts, expr), append(exprs, true)
			i = next
		default:
			text.WriteByte(s[i])
			i++
		}
	}
	flush()
	return parts, exprs, nil
}

// placeholderAt reads the placeholder opening at s[start:]: its trimmed
// expression and the offset after its closing "))".
func placeholderAt(s string, start int) (string, int, error) {
	depth := 0
	var quote byte
	for i := start + 2; i < len(s); i++ {
		c := s[i]
		if quote != 0 {
			switch c {
			case '\\':
				i++
			case quote:
				quote = 0
			}
			continue
		}
		switch c {
		case '"', '\'':
			quote = c
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
				continue
			}
			if i+1 >= len(s) || s[i+1] != ')' {
				return "", 0, fmt.Errorf("unbalanced parenthesis in the placeholder at offset %d", start)
			}
			expr := strings.TrimSpace(s[start+2 : i])
			if expr == "" {
				return "", 0, fmt.Errorf("empty placeholder at offset %d", start)
			}
			return expr, i + 2, nil
		}
	}
	if quote != 0 {
		return "", 0, fmt.Errorf("unterminated string literal in the placeholder at offset %d", start)
	}
	return "", 0, fmt.Errorf("unterminated placeholder at offset %d: missing '))'", start)
}

// render renders every document of the template.
func (t *template) render(ev *cel.Evaluation) ([]map[string]any, error) {
	out := make([]map[string]any, 0, len(t.docs))
	for i, d := range t.docs {
		v, err := d.render(ev)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("document %d: a resource must be a mapping, got %s", i+1, typeName(v))
		}
		out = append(out, m)
	}
	return out, nil
}

func (n *tliteral) render(*cel.Evaluation) (any, error) { return copyJSON(n.v), nil }

func (n *tmapping) render(ev *cel.Evaluation) (any, error) {
	m := make(map[string]any, len(n.keys))
	for i, k := range n.keys {
		v, err := n.vals[i].render(ev)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		m[k] = v
	}
	return m, nil
}

func (n *tsequence) render(ev *cel.Evaluation) (any, error) {
	s := make([]any, 0, len(n.items))
	for i, item := range n.items {
		v, err := item.render(ev)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		s = append(s, v)
	}
	return s, nil
}

func (n *tsplice) render(ev *cel.Evaluation) (any, error) {
	return evalPlaceholder(ev, n.prog)
}

func (n *tinterp) render(ev *cel.Evaluation) (any, error) {
	var b strings.Builder
	for i, part := range n.parts {
		p := n.progs[i]
		if p == nil {
			b.WriteString(part)
			continue
		}
		v, err := evalPlaceholder(ev, p)
		if err != nil {
			return nil, err
		}
		switch x := v.(type) {
		case string:
			b.WriteString(x)
		case bool:
			b.WriteString(strconv.FormatBool(x))
		case int64:
			b.WriteString(strconv.FormatInt(x, 10))
		case float64:
			b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
		default:
			return nil, fmt.Errorf("placeholder %q in a string must give a scalar, got %s; use a whole-value placeholder for structured values", p.Expression(), typeName(v))
		}
	}
	return b.String(), nil
}

func evalPlaceholder(ev *cel.Evaluation, p *cel.Program) (any, error) {
	val, err := ev.Eval(p)
	if err != nil {
		return nil, fmt.Errorf("failed to evaluate placeholder %q: %w", p.Expression(), Cause(err))
	}
	v, err := NativeValue(val)
	if err != nil {
		return nil, fmt.Errorf("failed to convert the value of placeholder %q: %w", p.Expression(), err)
	}
	return v, nil
}

// NativeValue converts a CEL value to a JSON-like tree: maps with string
// keys, lists, strings, bools, int64 (ints and uints that fit), float64
// and nil.
func NativeValue(val ref.Val) (any, error) {
	switch v := val.(type) {
	case nil:
		return nil, nil
	case *types.Err:
		return nil, v
	case types.Null:
		return nil, nil
	case types.String:
		return string(v), nil
	case types.Bool:
		return bool(v), nil
	case types.Int:
		return int64(v), nil
	case types.Uint:
		if uint64(v) > 1<<63-1 {
			return nil, fmt.Errorf("uint %d overflows int64", uint64(v))
		}
		return int64(v), nil
	case types.Double:
		return float64(v), nil
	case types.Timestamp:
		return v.Time.UTC().Format(time.RFC3339Nano), nil
	case types.Duration:
		return v.Duration.String(), nil
	}
	switch {
	case val.Type() == types.MapType:
		m, ok := val.(traits.Mapper)
		if !ok {
			break
		}
		out := map[string]any{}
		for it := m.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("map key %v is not a string", k)
			}
			x, err := NativeValue(m.Get(k))
			if err != nil {
				return nil, err
			}
			out[string(ks)] = x
		}
		return out, nil
	case val.Type() == types.ListType:
		l, ok := val.(traits.Lister)
		if !ok {
			break
		}
		n, _ := l.Size().(types.Int)
		out := make([]any, 0, int(n))
		for it := l.Iterator(); it.HasNext() == types.True; {
			x, err := NativeValue(it.Next())
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported value of type %s", val.Type().TypeName())
}

// jsonLike turns the values YAML decodes into JSON-like ones (ints as
// int64, maps with string keys).
func jsonLike(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonLike(e)
		}
		return x
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = jsonLike(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = jsonLike(e)
		}
		return x
	case int:
		return int64(x)
	case uint64:
		if x <= 1<<63-1 {
			return int64(x)
		}
		return float64(x)
	}
	return v
}

// copyJSON deep-copies a JSON-like tree.
func copyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = copyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyJSON(e)
		}
		return out
	}
	return v
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "map"
	case []any:
		return "list"
	}
	return fmt.Sprintf("%T", v)
}
