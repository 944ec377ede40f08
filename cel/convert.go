package cel

import (
	"reflect"
	"unsafe"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// converter hands the trees of one Input to CEL: each object and array
// is wrapped once per Input, however many expressions of however many
// Compilers read it, and the wrappers convert their elements through the
// converter again. Scalars are converted as jsonAdapter converts them.
//
// Wrappers are found by the identity of the Go map or slice. A wrapper
// keeps its map or slice alive, so no other one can take its address
// while the converter holds it.
type converter struct {
	object, oldObject uintptr
	vals              map[convKey]ref.Val
}

type convKey struct {
	p unsafe.Pointer
	n int // the length of a slice; -1 for a map
}

func newConverter(in *Input) *converter {
	return &converter{object: mapID(in.Object), oldObject: mapID(in.OldObject), vals: make(map[convKey]ref.Val, 16)}
}

// holds tells whether the converter is of in's objects.
func (c *converter) holds(in *Input) bool {
	return c.object == mapID(in.Object) && c.oldObject == mapID(in.OldObject)
}

// value converts a tree's root, nil to null.
func (c *converter) value(m map[string]any) any {
	if m == nil {
		return nil
	}
	return c.NativeToValue(m)
}

func (c *converter) NativeToValue(v any) ref.Val {
	switch t := v.(type) {
	case map[string]any:
		k := convKey{p: reflect.ValueOf(t).UnsafePointer(), n: -1}
		if w, ok := c.vals[k]; ok {
			return w
		}
		w := types.NewStringInterfaceMap(c, t)
		c.vals[k] = w
		return w
	case []any:
		if len(t) == 0 {
			return types.NewDynamicList(c, v)
		}
		k := convKey{p: unsafe.Pointer(unsafe.SliceData(t)), n: len(t)}
		if w, ok := c.vals[k]; ok {
			return w
		}
		// v, not t: boxing the slice again would allocate
		w := types.NewDynamicList(c, v)
		c.vals[k] = w
		return w
	}
	if w := jsonScalar(v); w != nil {
		return w
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}
