package cel

import (
	"reflect"
	"unsafe"

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
// the trees of trees, with its cost.
type sharedVar struct {
	env   *Env
	trees trees
	expr  string
	val   ref.Val
	cost  uint64
}

// trees are the object and oldObject trees of an Evaluation, by identity;
// the maps are kept, so that no other map takes their addresses while the
// Scope holds them.
type trees struct {
	object, oldObject       unsafe.Pointer
	objectMap, oldObjectMap map[string]any
}

func treesOf(object, oldObject map[string]any) trees {
	return trees{object: mapPointer(object), oldObject: mapPointer(oldObject), objectMap: object, oldObjectMap: oldObject}
}

// mapPointer is the identity of a map (nil for nil).
func mapPointer(m map[string]any) unsafe.Pointer { return reflect.ValueOf(m).UnsafePointer() }

// find returns the value of p on t, or nil.
func (s *Scope) find(p *Program, t *trees) *sharedVar {
	for i := range s.vars {
		v := &s.vars[i]
		if v.env == p.env && v.trees.object == t.object && v.trees.oldObject == t.oldObject && v.expr == p.expr {
			return v
		}
	}
	return nil
}

func (s *Scope) add(p *Program, t *trees, v ref.Val, cost uint64) {
	s.vars = append(s.vars, sharedVar{env: p.env, trees: *t, expr: p.expr, val: v, cost: cost})
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
