package typeconv_test

import (
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"os"
	"testing"

	"github.com/gavelpolicy/gavel/internal/typeconv"
	"github.com/gavelpolicy/gavel/internal/typeconv/internal/gen"
)

var update = flag.Bool("update", false, "write zz_builtin.json.gz")

// TestBuiltinTable checks the table against client-go's schema and the
// kinds of k8s.io/api: after an upgrade of either it fails until the table
// is generated again, with -update (go generate ./internal/typeconv).
func TestBuiltinTable(t *testing.T) {
	s, kinds, err := gen.Build()
	if err != nil {
		t.Skipf("cannot build the table here: %v", err)
	}
	want, err := typeconv.Encode(s, kinds)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write(want)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("zz_builtin.json.gz", b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open("zz_builtin.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("zz_builtin.json.gz differs from client-go's schema and k8s.io/api's kinds: run go generate ./internal/typeconv")
	}
	// the decoded table is the schema it was written from
	c, err := typeconv.Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	// (schema.Schema.Equals compares element relationships by pointer)
	again, err := typeconv.Encode(c.Schema(), kinds)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, want) {
		t.Fatal("the decoded table differs from the schema")
	}
	if c.Kinds() != len(kinds) {
		t.Fatalf("%d kinds decoded, %d written", c.Kinds(), len(kinds))
	}
}
