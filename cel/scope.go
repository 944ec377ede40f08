package cel

import (
	"reflect"

	"github.com/google/cel-go/common/types/ref"
)

// Scope is the state the Evaluations of one request share, whatever their
// Compiler and Env: the CEL values of the trees they read (each object and
// array wrapped once, however many expressions read it) and the values of
// the variables that read nothing but object and oldObject (policies often
// define the same variable, all the containers of a Pod say, and
// evaluating it once per request is enough).
//
// The caller makes one per request (the zero Scope is ready to use) and
// passes it to each NewEvaluation of the request; an Evaluation without a
// Scope shares nothing. A Scope is not safe for concurrent use, and the
// trees its Evaluations read must not be modified while it is in use (a
// mutation hands a new tree, see Evaluation.SetObject). The Inputs do not
// hold it: they stay plain data, which may be shared, reused and changed.
type Scope struct {
	conv converter
	vars []sharedVar
}

// sharedVar is the value of a shared variable: its expression in env, on
// the object and oldObject trees (kept, so that their identities stay
// theirs), with its cost.
type sharedVar struct {
	env               *Env
	expr              string
	object, oldObject map[string]any
	val               ref.Val
	cost              uint64
}

// find returns the value of p on the trees, or nil.
func (s *Scope) find(p *Program, object, oldObject map[string]any) *sharedVar {
	for i := range s.vars {
		if v := &s.vars[i]; v.env == p.env && v.expr == p.expr && sameMap(v.object, object) && sameMap(v.oldObject, oldObject) {
			return v
		}
	}
	return nil
}

func (s *Scope) add(p *Program, object, oldObject map[string]any, v ref.Val, cost uint64) {
	s.vars = append(s.vars, sharedVar{env: p.env, expr: p.expr, object: object, oldObject: oldObject, val: v, cost: cost})
}

// sameMap tells whether a and b are the same map (or both nil).
func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// readsOnlyObjects tells whether the variable p reads no variable but
// object, oldObject and the libraries' constant ones: its value is then
// the same for any Evaluation on the same trees.
func (e *Env) readsOnlyObjects(p *Program) bool {
	for _, name := range p.reads {
		if name != ObjectVar && name != OldObjectVar && !e.constantVar(name) {
			return false
		}
	}
	return true
}

// constantVar tells whether name is a variable of the Env's libraries
// whose value is the same in every Evaluation.
func (e *Env) constantVar(name string) bool {
	for _, c := range constantVars {
		if c.name == name && e.cfg.libs&c.lib != 0 {
			return true
		}
	}
	return false
}
