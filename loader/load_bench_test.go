package loader_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gavelpolicy/gavel/loader"
)

// BenchmarkLoad loads a directory of 64 files (a policy and a resource
// each), which Load reads and decodes in parallel.
func BenchmarkLoad(b *testing.B) {
	dir := b.TempDir()
	for i := range 64 {
		doc := fmt.Sprintf("%s---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, namespace: default}\ndata: {key: value}\n", policy, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.yaml", i)), []byte(doc), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		set, err := loader.Load(dir)
		if err != nil || len(set.Policies) != 64 || len(set.Resources) != 64 {
			b.Fatalf("%v", err)
		}
	}
}
