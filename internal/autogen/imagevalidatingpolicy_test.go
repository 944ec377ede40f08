package autogen

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gavelpolicy/gavel/api"
)

// TestImageValidatingPolicyGolden compares the variants of the
// ImageValidatingPolicies of testdata/ivpol with expected-variants.json
// (-update rewrites them).
func TestImageValidatingPolicyGolden(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/ivpol/*")
	if len(dirs) == 0 {
		t.Fatal("no cases")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			f, err := os.Open(filepath.Join(dir, "policy.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			docs, err := api.ReadDocuments(f, "policy.yaml")
			if err != nil {
				t.Fatal(err)
			}
			p, err := api.DecodePolicy(docs[0])
			if err != nil {
				t.Fatal(err)
			}
			spec := &p.(*api.ImageValidatingPolicy).Spec
			before, _ := json.Marshal(spec)
			variants, err := ImageValidatingPolicy(spec)
			if err != nil {
				t.Fatal(err)
			}
			if after, _ := json.Marshal(spec); string(after) != string(before) {
				t.Error("the policy's spec was modified")
			}
			got, err := json.MarshalIndent(variants, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "expected-variants.json")
			if *update {
				if err := os.WriteFile(file, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if string(want) != string(got)+"\n" {
				t.Errorf("variants differ from %s:\n%s", file, got)
			}
		})
	}
}
