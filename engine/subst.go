package engine

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/internal/patterns"
	"github.com/gavelpolicy/gavel/internal/variables"
)

// template is a compiled string that may hold {{ }} expressions.
type template = variables.Template

// tree is a compiled document that may hold {{ }} expressions.
type tree = variables.Tree

func (e *Engine) compileTemplate(s string) (*template, error) {
	return variables.Parse(s)
}

func (e *Engine) compileTree(doc any, basePath string) (*tree, error) {
	return variables.Compile(doc, variables.WithBasePath(basePath))
}

// render evaluates a template: a string, or the value of a template that
// is one variable.
func (s *scope) render(t *template) (any, error) {
	if text, ok := t.Literal(); ok {
		return text, nil
	}
	return t.Render(s, s.evalOpts()...)
}

// renderString evaluates a template to a string (non-string results are
// an error, as upstream's "didn't resolve to a string").
func (s *scope) renderString(t *template) (string, error) {
	if t == nil {
		return "", nil
	}
	v, err := s.render(t)
	if err != nil {
		return "", err
	}
	str, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("expected a string, got %T", v)
	}
	return str, nil
}

func (s *scope) substitute(t *tree) (any, error) {
	return t.Substitute(s, s.evalOpts()...)
}

func (s *scope) evalOpts() []variables.Option {
	if s.deleteRequest {
		return []variables.Option{variables.WithDeleteRequest(true)}
	}
	return nil
}

// patternSpec is a validate pattern, compiled once when it has no
// variables, otherwise compiled after substitution.
type patternSpec struct {
	tree     *tree
	compiled *patterns.Pattern
}

func (e *Engine) compilePattern(p any, basePath string) (*patternSpec, error) {
	resolved, err := variables.ResolveReferences(p)
	if err != nil {
		return nil, err
	}
	t, err := e.compileTree(resolved, basePath)
	if err != nil {
		return nil, err
	}
	ps := &patternSpec{tree: t}
	if !t.HasVariables() {
		if ps.compiled, err = patterns.Compile(resolved); err != nil {
			return nil, err
		}
	}
	return ps, nil
}

// get returns the compiled pattern for this evaluation.
func (ps *patternSpec) get(s *scope) (*patterns.Pattern, error) {
	if ps.compiled != nil {
		return ps.compiled, nil
	}
	v, err := s.substitute(ps.tree)
	if err != nil {
		return nil, err
	}
	return patterns.Compile(v)
}

// listExpr is a foreach list expression.
type listExpr struct {
	expr string
	tmpl *template
}

func (e *Engine) compileList(expr string) (*listExpr, error) {
	if expr == "" {
		return nil, fmt.Errorf("foreach list is required")
	}
	t, err := e.compileTemplate(expr)
	if err != nil {
		return nil, err
	}
	l := &listExpr{expr: expr}
	if t.HasVariables() {
		l.tmpl = t
	}
	return l, nil
}

// evaluate returns the list's elements as upstream's EvaluateList: a
// non-list result is a one-element list.
func (l *listExpr) evaluate(s *scope) ([]any, error) {
	expr := l.expr
	if l.tmpl != nil {
		str, err := s.renderString(l.tmpl)
		if err != nil {
			return nil, err
		}
		expr = str
	}
	v, err := s.query(expr)
	if err != nil {
		return nil, err
	}
	if list, ok := v.([]any); ok {
		return list, nil
	}
	if v == nil {
		// a list of one null, which every foreach skips: no element
		return nil, nil
	}
	return []any{v}, nil
}

// checkSubstitutionDepth reports every string of a rule (keys included)
// whose {{ }} expressions nest deeper than Limits.MaxSubstitutionDepth,
// with the path of the field that holds it.
func (e *Engine) checkSubstitutionDepth(doc map[string]any, path *field.Path) field.ErrorList {
	max := e.cfg.limits.MaxSubstitutionDepth
	var errs field.ErrorList
	// steps is the path below path, turned into a field.Path only for an
	// error: most strings have no {{ }} at all
	type step struct {
		key   string
		index int
	}
	var steps []step
	at := func() *field.Path {
		p := path
		for _, st := range steps {
			if st.index >= 0 {
				p = p.Index(st.index)
			} else {
				p = p.Child(st.key)
			}
		}
		return p
	}
	check := func(s string) {
		if !strings.Contains(s, "{{") {
			return
		}
		if _, err := variables.Parse(s, variables.WithMaxNesting(max)); err != nil {
			errs = append(errs, field.Invalid(at(), s, fmt.Sprintf("{{ }} nested deeper than %d levels", max)))
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case string:
			check(t)
		case []any:
			for i, x := range t {
				steps = append(steps, step{index: i})
				walk(x)
				steps = steps[:len(steps)-1]
			}
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				steps = append(steps, step{key: k, index: -1})
				check(k)
				walk(t[k])
				steps = steps[:len(steps)-1]
			}
		}
	}
	walk(doc)
	return errs
}
