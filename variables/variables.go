// Package variables substitutes Kyverno's `{{ }}` variables and resolves
// its `$(./../path)` references in JSON-like documents, with upstream's
// syntax and messages, for tools that render a policy fragment, a message
// or a patch without a whole policy (a gitops renderer, a test helper).
// The engine substitutes rules with the same machinery.
//
// A document is compiled once and substituted many times:
//
//	d, err := variables.Compile(doc, nil)   // references resolved, expressions checked
//	out, err := d.Substitute(data)          // each {{ }} a JMESPath query on data
//
// # Variables
//
// `{{ expr }}` is a JMESPath expression with Kyverno's functions, checked
// when the document is compiled (syntax, function names, argument counts).
// Substitute evaluates it on a JSON-like map, SubstituteFunc hands it to a
// lookup function. A string that is exactly one variable takes the value
// with its JSON type; otherwise values are rendered as text (strings as
// they are, anything else as compact JSON).
// `{{ a.{{ b }} }}` nests: the inner value is spliced into the outer
// expression. `\{{ ... }}` is literal text. Map keys may hold variables.
//
// A value brought in by a variable is data, never evaluated again: a
// resource whose field holds `{{ ... }}` cannot make the document run an
// expression (upstream re-evaluates such text; gavel does not).
//
// # References
//
// `$(./../path)` is replaced by the value at that path of the document
// itself, relative to the string that holds it (absolute when it starts
// with "/"), as upstream resolves them in validate patterns; an operator
// may precede the path (`$(<=./../max)` gives "<=" and the value).
// `\$(...)` is literal text. References depend only on the document, so
// Compile resolves them.
//
// Compiled documents are immutable and safe for concurrent use. The input
// is never modified; a substituted document shares the unchanged parts of
// the compiled one, so treat it as read-only.
package variables

import (
	"fmt"

	ivariables "github.com/gavelpolicy/gavel/internal/variables"
	"github.com/gavelpolicy/gavel/jmespath"
)

// ErrNotFound is what the error of an unresolved variable is (errors.Is):
// Substitute and SubstituteFunc fail with it, naming the variable and the
// path of its string, when an expression refers to nothing. A lookup
// function may return an error wrapping it to say the same.
var ErrNotFound = ivariables.ErrNotFound

// Document is a compiled document. It is immutable and safe for
// concurrent use.
type Document struct {
	t      *ivariables.Tree
	interp *jmespath.Interpreter
}

// Variable is a variable of a document: the path of the string that holds
// it (for a map key, the path of the map), keys joined by "/" as upstream
// writes paths, and its expression.
type Variable struct {
	Path       string
	Expression string
}

// Compile compiles a JSON-like document: map[string]any, []any (or
// []map[string]any), string, bool, nil and numbers (float64, int, int64,
// the other Go number types, json.Number); a string alone is a document.
// It resolves the `$(...)` references, then finds the `{{ }}` variables of
// every string and map key, and compiles each expression with interp (a
// nested expression is known only when evaluated), which Substitute then
// evaluates them with: its clock, randomness and cache of compiled
// queries. A nil interp is a new interpreter with the default options
// (time.Now, crypto/rand); pass one to share it.
//
// The error names the path of a reference that does not resolve, of an
// expression that does not compile, of a template nested too deeply (64
// levels) or of a value that is not JSON-like. doc is not modified.
func Compile(doc any, interp *jmespath.Interpreter) (*Document, error) {
	if interp == nil {
		var err error
		if interp, err = jmespath.New(); err != nil {
			return nil, err
		}
	}
	resolved, err := ivariables.ResolveReferences(doc)
	if err != nil {
		return nil, err
	}
	t, err := ivariables.Compile(resolved)
	if err != nil {
		return nil, err
	}
	for _, v := range t.Variables() {
		if v.Nested || v.Expression == "@" {
			continue
		}
		if _, err := interp.Compile(v.Expression); err != nil {
			return nil, fmt.Errorf("variables: %s at path %s: %w", v.Source, v.Path, err)
		}
	}
	return &Document{t: t, interp: interp}, nil
}

// Substitute evaluates every variable as a JMESPath query on data and
// returns the document with their values; a query whose result is null is
// not found. A document without variables is returned as compiled. The
// first failure is returned, naming the variable and the path of its
// string: an unresolved variable (errors.Is ErrNotFound), an evaluation
// error, a map key whose value is not a string.
func (d *Document) Substitute(data map[string]any) (any, error) {
	return d.t.Substitute(ivariables.EvaluatorFunc(func(expr string) (any, error) {
		return d.interp.Search(expr, data)
	}))
}

// SubstituteFunc is Substitute with the variables evaluated by lookup: the
// value of an expression (the text between the braces, trimmed), whether
// it was found, or an error.
func (d *Document) SubstituteFunc(lookup func(expr string) (value any, found bool, err error)) (any, error) {
	if lookup == nil {
		return d.t.Substitute(nil)
	}
	return d.t.Substitute(lookupFunc(lookup))
}

type lookupFunc func(string) (any, bool, error)

func (f lookupFunc) Lookup(expr string) (any, bool, error) { return f(expr) }

// Variables lists the variables of the document, in the order Substitute
// evaluates them (map keys sorted).
func (d *Document) Variables() []Variable {
	vars := d.t.Variables()
	out := make([]Variable, len(vars))
	for i, v := range vars {
		out[i] = Variable{Path: v.Path, Expression: v.Expression}
	}
	return out
}
