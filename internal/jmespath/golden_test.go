package jmespath

import (
	"bytes"
	"encoding/json"
	"flag"
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
