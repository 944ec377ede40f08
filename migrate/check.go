package migrate

import (
	"fmt"
	"sync"

	celgo "github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
)

// celEnv is the environment of the CEL policy types' expressions (the
// ValidatingPolicy's: the API server's libraries, Kyverno's libraries, the
// request with its objects), built once: it is immutable.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(append(celpolicy.EnvOptions(), cel.WithLibraries(cel.ValidatingPolicyLibraries))...)
})

// checkError is an expression of an output that does not compile: the
// path of the expression in the output and the compiler's message.
type checkError struct {
	path string
	err  error
}

// exprSet is what an output's expressions are checked as: matchConditions
// (without variables), variables in order, then the expressions that see
// them.
type exprSet struct {
	namespace  string
	conditions []admissionregistrationv1.MatchCondition
	condPath   string
	variables  []admissionregistrationv1.Variable
	varPath    string
	// exprs are the other expressions with their paths and kinds
	exprs []checkedExpr
}

type checkedExpr struct {
	path string
	expr string
	kind cel.Kind
	// want, when set, is the exact type the expression must have (a
	// target expression's map(string, any))
	want *celgo.Type
}

// check compiles every expression of an output and returns those that do
// not compile.
func (s *exprSet) check() ([]checkError, error) { return s.checkOn(celEnv) }

// checkOn is check on the environment env gives.
func (s *exprSet) checkOn(envOf func() (*cel.Env, error)) ([]checkError, error) {
	env, err := envOf()
	if err != nil {
		return nil, err
	}
	var opts []cel.CompilerOption
	if s.namespace != "" {
		opts = append(opts, cel.InNamespace(s.namespace))
	}
	var out []checkError
	conds := env.NewCompiler(false, opts...).Lazy()
	for i, c := range s.conditions {
		if _, err := conds.Compile(c.Expression, cel.MatchCondition); err != nil {
			out = append(out, checkError{path: fmt.Sprintf("%s[%d]", s.condPath, i), err: err})
		}
	}
	comp := env.NewCompiler(false, opts...).Lazy()
	for i, v := range s.variables {
		if _, err := comp.AddVariable(v.Name, v.Expression); err != nil {
			out = append(out, checkError{path: fmt.Sprintf("%s[%d]", s.varPath, i), err: err})
		}
	}
	for _, x := range s.exprs {
		p, err := comp.Compile(x.expr, x.kind)
		switch {
		case err != nil:
			out = append(out, checkError{path: x.path, err: err})
		case x.want != nil && !p.OutputType().IsExactType(x.want):
			out = append(out, checkError{path: x.path, err: fmt.Errorf("its type is %s, not %s", p.OutputType(), x.want)})
		}
	}
	return out, nil
}

// validatingExprs are the expressions of a ValidatingPolicy spec.
func validatingExprs(namespace string, conds []admissionregistrationv1.MatchCondition, vars []admissionregistrationv1.Variable, vals []admissionregistrationv1.Validation) *exprSet {
	s := &exprSet{namespace: namespace, conditions: conds, condPath: "spec.matchConditions", variables: vars, varPath: "spec.variables"}
	for i, v := range vals {
		s.exprs = append(s.exprs, checkedExpr{path: fmt.Sprintf("spec.validations[%d]", i), expr: v.Expression, kind: cel.Validation})
		if v.MessageExpression != "" {
			s.exprs = append(s.exprs, checkedExpr{path: fmt.Sprintf("spec.validations[%d]", i), expr: v.MessageExpression, kind: cel.MessageExpression})
		}
	}
	return s
}
