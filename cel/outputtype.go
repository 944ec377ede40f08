package cel

import "github.com/google/cel-go/cel"

// OutputType returns the type the expression was checked to have (dyn
// when the checker could not tell), for callers that require more than
// its Kind does: a list of strings, for instance.
func (p *Program) OutputType() *cel.Type { return p.out }
