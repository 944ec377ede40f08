package engine_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// goldenDirs runs run on every case directory glob matches, one subtest
// each, and compares its result, through YAML, with the directory's
// expected.yaml (-update rewrites it).
func goldenDirs[T any](t *testing.T, glob string, run func(t *testing.T, dir string) T) {
	t.Helper()
	dirs, err := filepath.Glob(glob)
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			file := filepath.Join(dir, "expected.yaml")
			gotRaw, err := yaml.Marshal(run(t, dir))
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.WriteFile(file, gotRaw, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var want, got T
			if err := yaml.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(gotRaw, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("results differ from %s\n--- got\n%s", file, gotRaw)
			}
		})
	}
}
