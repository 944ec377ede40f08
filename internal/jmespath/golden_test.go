package jmespath

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// TestX509DecodeGolden pins the full JSON shape x509_decode returns for a
// certificate and a certificate request. Regenerate with
// `go test ./jmespath -run Golden -update` after a Go upgrade changes the
// fields of crypto/x509's types.
func TestX509DecodeGolden(t *testing.T) {
	intr := mustNew(t)
	for _, name := range []string{"cert", "csr"} {
		t.Run(name, func(t *testing.T) {
			got, err := intr.Search("x509_decode(@)", readTestdata(t, name+".pem"))
			if err != nil {
				t.Fatal(err)
			}
			out, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, '\n')
			path := filepath.Join("testdata", "x509-"+name+".golden.json")
			if *update {
				if err := os.WriteFile(path, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("reading golden file (run with -update to create it): %v", err)
			}
			if !bytes.Equal(out, want) {
				t.Fatalf("x509_decode(%s) differs from %s:\n%s", name, path, out)
			}
		})
	}
}

// TestQuantityArithmeticGolden pins multiply and divide of a quantity by a
// number over a grid of signs, scales and suffixes: the results were
// written by upstream's algorithm (inf.Dec's QuoRound, rounding toward
// zero at the larger scale of the two operands).
func TestQuantityArithmeticGolden(t *testing.T) {
	quantities := []string{"12Ki", "500m", "1", "7", "-7", "1e3", "1.5", "3Gi", "100n", "2.5e-3", "-1.25Mi", "999999999999999999999", "0", "1E", "12345678901234567890m"}
	scalars := []string{"3", "-3", "0.7", "7", "1.5", "0.001", "2.5e-7", "1e20", "-0.3", "1e-300", "123456789.125", "6"}
	var b bytes.Buffer
	intr := mustNew(t)
	for _, fn := range []string{"multiply", "divide"} {
		for _, q := range quantities {
			for _, s := range scalars {
				expr := fmt.Sprintf("%s('%s', `%s`)", fn, q, s)
				got, err := intr.Search(expr, nil)
				if err != nil {
					fmt.Fprintf(&b, "%s\terror: %v\n", expr, err)
					continue
				}
				fmt.Fprintf(&b, "%s\t%v\n", expr, got)
			}
		}
	}
	path := filepath.Join("testdata", "quantity-arithmetic.golden")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Fatalf("quantity arithmetic differs from %s:\n%s", path, b.Bytes())
	}
}
