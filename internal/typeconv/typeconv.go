// Package typeconv converts objects of Kubernetes' built-in kinds to the
// typed values of structured-merge-diff and back, on the schemas the API
// server gives those kinds: what a MutatingAdmissionPolicy's (and a
// MutatingPolicy's) ApplyConfiguration is merged with.
//
// The schemas are a table generated at development time from the
// structured-merge-diff schema client-go's apply configurations embed (the
// API server's OpenAPI of the built-in kinds, with list types and map
// keys) and the kinds k8s.io/api registers, restricted to the types those
// kinds reach (zz_builtin.json.gz, written by TestBuiltinTable -update,
// which go generate runs). Binaries therefore link neither client-go's
// apply configurations nor the OpenAPI machinery; the table is decoded on
// first use (about 30 ms) and shared, immutable, afterwards.
package typeconv

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"sync"

	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

//go:generate go test -run ^TestBuiltinTable$ -update

//go:embed zz_builtin.json.gz
var builtinTable []byte

// Converter types the objects of the kinds it has a schema for. It is
// immutable and safe for concurrent use.
type Converter struct {
	parser *typed.Parser
	// kinds maps "group/version/Kind" ("v1/Pod" for the core group) to
	// the name of the kind's type in the schema
	kinds map[string]string
}

var builtin = sync.OnceValues(func() (*Converter, error) {
	zr, err := gzip.NewReader(bytes.NewReader(builtinTable))
	if err != nil {
		return nil, fmt.Errorf("typeconv: built-in schemas: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("typeconv: built-in schemas: %w", err)
	}
	return Decode(raw)
})

// Builtin returns the converter of the built-in kinds, decoded on the
// first call.
func Builtin() (*Converter, error) { return builtin() }

// Has reports whether the converter has a schema for a kind.
func (c *Converter) Has(apiVersion, kind string) bool {
	_, ok := c.kinds[apiVersion+"/"+kind]
	return ok
}

// Kinds returns the number of kinds the converter knows.
func (c *Converter) Kinds() int { return len(c.kinds) }

// ToTyped types obj (a JSON-like tree, which it does not modify) by the
// schema of its apiVersion and kind. An object of a kind without a schema
// (a custom resource) is typed by its content, as structured-merge-diff
// deduces types: objects are merged field by field, lists and scalars
// replaced (a custom resource's lists are atomic unless its schema gives
// them a list type; the guard of Apply, which follows a schema's fields,
// sees none here). An object that does not conform to its schema is the error
// structured-merge-diff gives.
func (c *Converter) ToTyped(obj map[string]any, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	name, ok := c.kinds[av+"/"+kind]
	if !ok {
		return typed.DeducedParseableType.FromUnstructured(obj, opts...)
	}
	return c.parser.Type(name).FromUnstructured(obj, opts...)
}

// FromTyped returns the JSON-like tree of a typed object.
func FromTyped(v *typed.TypedValue) (map[string]any, error) {
	switch o := v.AsValue().Unstructured().(type) {
	case map[string]any:
		return o, nil
	default:
		return nil, fmt.Errorf("typeconv: a typed object is a %T, not an object", o)
	}
}
