package cel

import (
	"reflect"
	"strings"

	"github.com/google/cel-go/common/types/ref"
)

// memo keeps, for the Evaluations of one Input, the values of the
// variables that read nothing but object and oldObject, by environment
// and expression: policies often define the same variable (all the
// containers of a Pod, say), and evaluating it once per request is
// enough.
type memo struct {
	object, oldObject uintptr
	entries           []memoEntry
}

type memoEntry struct {
	env  *Env
	expr string
	val  ref.Val
	cost uint64
}

func newMemo(in *Input) *memo {
	return &memo{object: mapID(in.Object), oldObject: mapID(in.OldObject)}
}

// mapID is the identity of a map.
func mapID(m map[string]any) uintptr { return reflect.ValueOf(m).Pointer() }

// holds tells whether the memo is of in's trees.
func (m *memo) holds(in *Input) bool {
	return m.object == mapID(in.Object) && m.oldObject == mapID(in.OldObject)
}

func (m *memo) find(p *Program) *memoEntry {
	for i := range m.entries {
		if e := &m.entries[i]; e.env == p.env && e.expr == p.expr {
			return e
		}
	}
	return nil
}

func (m *memo) add(p *Program, v ref.Val, cost uint64) {
	m.entries = append(m.entries, memoEntry{env: p.env, expr: p.expr, val: v, cost: cost})
}

// readsOnlyObjects tells whether expr can read no variable but object and
// oldObject (it does not mention the others; some that do are left out).
func (e *Env) readsOnlyObjects(expr string) bool {
	for _, name := range [...]string{VariablesVar, ParamsVar, AuthorizerVar, RequestVar, NamespaceVar} {
		if strings.Contains(expr, name) {
			return false
		}
	}
	for _, dv := range e.cfg.vars {
		if strings.Contains(expr, dv.name) {
			return false
		}
	}
	return true
}
