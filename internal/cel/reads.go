package cel

import (
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"

	apiservercel "k8s.io/apiserver/pkg/cel"
)

// reads are the top-level variables a checked expression reads, found on
// its checked AST: the identifiers the type checker resolved to variables
// of the environment, leaving out comprehension variables (which shadow
// them), type names and constants. Names in string literals and fields
// that happen to have a variable's name are not identifiers, so they are
// not reads.
type reads struct {
	// names are the variables read, each once; authorizer.requestResource
	// counts as the authorizer.
	names []string
	// vars are the fields of the variables object read by name
	// (variables.x, has(variables.x), variables.?x); allVars is set
	// when the object is read otherwise (as a whole, dyn(variables)[k]),
	// as if each of its fields were.
	vars    []string
	allVars bool
}

// has tells whether name is among the variables read.
func (r *reads) has(name string) bool { return slices.Contains(r.names, name) }

func (r *reads) add(name string) {
	if !r.has(name) {
		r.names = append(r.names, name)
	}
}

func (r *reads) addVar(name string) {
	r.add(VariablesVar)
	if !slices.Contains(r.vars, name) {
		r.vars = append(r.vars, name)
	}
}

// readsOf walks a checked expression.
func readsOf(a *cel.Ast) reads {
	w := readWalker{ast: a.NativeRep()}
	w.walk(w.ast.Expr())
	return w.r
}

type readWalker struct {
	ast *celast.AST
	// locals are the comprehension variables in scope, innermost last.
	locals []string
	r      reads
}

func (w *readWalker) walk(e celast.Expr) {
	switch e.Kind() {
	case celast.IdentKind:
		if name, ok := w.global(e); ok {
			if name == VariablesVar {
				w.r.allVars = true
			}
			w.r.add(name)
		}
	case celast.SelectKind:
		s := e.AsSelect()
		if w.isVariables(s.Operand()) {
			w.r.addVar(fieldName(s.FieldName()))
			return
		}
		w.walk(s.Operand())
	case celast.CallKind:
		w.call(e.AsCall())
	case celast.ComprehensionKind:
		w.comprehension(e.AsComprehension())
	case celast.ListKind:
		for _, x := range e.AsList().Elements() {
			w.walk(x)
		}
	case celast.MapKind:
		for _, x := range e.AsMap().Entries() {
			me := x.AsMapEntry()
			w.walk(me.Key())
			w.walk(me.Value())
		}
	case celast.StructKind:
		for _, x := range e.AsStruct().Fields() {
			w.walk(x.AsStructField().Value())
		}
	}
}

// call walks a call; an optional field of the variables object
// (variables.?x) reads that field.
func (w *readWalker) call(c celast.CallExpr) {
	args := c.Args()
	if c.FunctionName() == operators.OptSelect && len(args) == 2 && w.isVariables(args[0]) && args[1].Kind() == celast.LiteralKind {
		if f, ok := args[1].AsLiteral().(types.String); ok {
			w.r.addVar(fieldName(string(f)))
			return
		}
	}
	if c.IsMemberFunction() {
		w.walk(c.Target())
	}
	for _, x := range args {
		w.walk(x)
	}
}

// comprehension walks a comprehension (a macro's expansion, cel.bind
// included): the range and the accumulator's initial value in the outer
// scope, the loop with the iteration variables and the accumulator, the
// result with the accumulator.
func (w *readWalker) comprehension(c celast.ComprehensionExpr) {
	w.walk(c.IterRange())
	w.walk(c.AccuInit())
	n := len(w.locals)
	w.locals = append(w.locals, c.AccuVar())
	w.walk(c.Result())
	w.locals = append(w.locals, c.IterVar())
	if c.HasIterVar2() {
		w.locals = append(w.locals, c.IterVar2())
	}
	w.walk(c.LoopCondition())
	w.walk(c.LoopStep())
	w.locals = w.locals[:n]
}

// global returns the variable an identifier reads: not a comprehension
// variable, a type name or a constant. The checker writes a global the
// expression names with a leading dot (".object", to get past a
// comprehension variable) as such, and a qualified variable it resolved
// (authorizer.requestResource) as one identifier.
func (w *readWalker) global(e celast.Expr) (string, bool) {
	name := e.AsIdent()
	if strings.HasPrefix(name, ".") {
		name = name[1:]
	} else if slices.Contains(w.locals, name) {
		return "", false
	}
	if w.ast.GetType(e.ID()).Kind() == types.TypeKind {
		return "", false
	}
	if r, ok := w.ast.ReferenceMap()[e.ID()]; ok && r.Value != nil {
		return "", false
	}
	if name == requestResourceVar {
		name = AuthorizerVar
	}
	return name, true
}

// isVariables tells whether e is the variables object.
func (w *readWalker) isVariables(e celast.Expr) bool {
	if e.Kind() != celast.IdentKind {
		return false
	}
	name, ok := w.global(e)
	return ok && name == VariablesVar
}

// fieldName is the variable name of a field of the variables object,
// unescaped as the object unescapes it (see variables.index).
func fieldName(f string) string {
	if strings.Contains(f, "__") {
		if n, ok := apiservercel.Unescape(f); ok {
			return n
		}
	}
	return f
}
