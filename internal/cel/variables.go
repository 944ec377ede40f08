package cel

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	apiservercel "k8s.io/apiserver/pkg/cel"
)

// variablesType is the runtime type of every variables object, as the API
// server's lazy map (k8s.io/apiserver/pkg/cel/lazy) makes it.
var variablesType = types.NewTypeValue(variablesTypeName, traits.IndexerType|traits.FieldTesterType|traits.IterableType)

// variables is the variables object of an Evaluation. It behaves as the
// API server's lazy map: each variable is evaluated on its first access,
// at most once, in the Evaluation; an error is kept as the variable's
// value. Unlike the lazy map it unescapes a field name only when the name
// holds an escape sequence, and it lives inside its Evaluation.
type variables struct {
	ev    *Evaluation
	progs []*Program
	// vals are the values evaluated so far, by position in progs.
	vals []ref.Val
}

// noVariables is the variables object of units without variables: it has
// no field to evaluate, so one value serves every Evaluation.
var noVariables = &variables{}

// index returns the position of the field named key, escaped as the API
// server escapes field names, or -1.
func (m *variables) index(key string) int {
	name := key
	if strings.Contains(key, "__") {
		var ok bool
		if name, ok = apiservercel.Unescape(key); !ok {
			return -1
		}
	}
	for i, p := range m.progs {
		if p.name == name {
			return i
		}
	}
	return -1
}

// value evaluates the i-th variable once.
func (m *variables) value(i int) ref.Val {
	if v := m.vals[i]; v != nil {
		return v
	}
	v := m.ev.variable(m.progs[i])
	m.vals[i] = v
	return v
}

// Find returns the field named key.
func (m *variables) Find(key ref.Val) (ref.Val, bool) {
	n, ok := key.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(n), true
	}
	i := m.index(string(n))
	if i < 0 {
		return nil, false
	}
	return m.value(i), true
}

// Get returns the field named key, or a "no such key" error.
func (m *variables) Get(key ref.Val) ref.Val {
	if v, found := m.Find(key); found {
		return v
	}
	return types.ValOrErr(key, "no such key: %v", key)
}

// Contains tells whether key names a field.
func (m *variables) Contains(key ref.Val) ref.Val {
	v, found := m.Find(key)
	if v != nil && types.IsUnknownOrError(v) {
		return v
	}
	return types.Bool(found)
}

// Size returns the number of fields.
func (m *variables) Size() ref.Val { return types.Int(len(m.progs)) }

// Iterator returns an iterator over the values of the fields, in order.
func (m *variables) Iterator() traits.Iterator { return &variablesIterator{parent: m} }

// ConvertToNative is disallowed.
func (m *variables) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nil, fmt.Errorf("disallowed conversion from %q to %q", variablesType.TypeName(), typeDesc.Name())
}

// ConvertToType converts to the object's own type and to "type" only.
func (m *variables) ConvertToType(typeVal ref.Type) ref.Val {
	switch typeVal {
	case variablesType:
		return m
	case types.TypeType:
		return variablesType
	}
	return types.NewErr("disallowed conversion from %q to %q", variablesType.TypeName(), typeVal.TypeName())
}

// Equal is identity.
func (m *variables) Equal(other ref.Val) ref.Val {
	o, ok := other.(*variables)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(m == o)
}

// Type returns the object's type.
func (m *variables) Type() ref.Type { return variablesType }

// Value is not allowed.
func (m *variables) Value() any { return types.NoSuchOverloadErr() }

type variablesIterator struct {
	parent *variables
	index  int
}

func (i *variablesIterator) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nil, fmt.Errorf("disallowed conversion to %q", typeDesc.Name())
}

func (i *variablesIterator) ConvertToType(typeValue ref.Type) ref.Val {
	return types.NewErr("disallowed conversion o %q", typeValue.TypeName())
}

func (i *variablesIterator) Equal(other ref.Val) ref.Val {
	o, ok := other.(*variablesIterator)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(o == i)
}

func (i *variablesIterator) Type() ref.Type { return types.IteratorType }

func (i *variablesIterator) Value() any { return nil }

func (i *variablesIterator) HasNext() ref.Val { return types.Bool(i.index < len(i.parent.progs)) }

func (i *variablesIterator) Next() ref.Val {
	v := i.parent.Get(types.String(i.parent.progs[i.index].name))
	i.index++
	return v
}
