package typeconv

import (
	"bytes"
	"compress/gzip"
	"io"

	"sigs.k8s.io/structured-merge-diff/v6/schema"
)

// Schema returns the converter's schema.
func (c *Converter) Schema() *schema.Schema { return &c.parser.Schema }

// BuiltinTableJSON returns the table, decompressed.
func BuiltinTableJSON() []byte {
	zr, err := gzip.NewReader(bytes.NewReader(builtinTable))
	if err != nil {
		panic(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		panic(err)
	}
	return raw
}
