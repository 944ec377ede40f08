package cel

import (
	"reflect"
	"unsafe"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// converter hands trees to CEL: each object and array is wrapped once,
// however many expressions of however many Compilers read it (a Scope's
// converter serves all the Evaluations of a request), and the wrappers
// convert their elements through the converter again. Scalars are
// converted as jsonAdapter converts them. The zero converter is ready to
// use.
//
// Wrappers are found by the identity of the Go map or slice. A wrapper
// keeps its map or slice alive, so no other one can take its address
// while the converter holds it; and it reads its map or slice when it is
// read, so it is never stale.
type converter struct {
	vals map[convKey]ref.Val
}

type convKey struct {
	p unsafe.Pointer
	n int // the length of a slice; -1 for a map
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
		if c.vals == nil {
			c.vals = make(map[convKey]ref.Val, 16)
		}
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
		if c.vals == nil {
			c.vals = make(map[convKey]ref.Val, 16)
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
