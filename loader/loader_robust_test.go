package loader_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/loader"
)

const policy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: good
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      pattern: {}
`

// write creates files under a temporary folder.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestLoadBadFiles: every bad file is reported with its path (and the
// document, object and field when known); good files of the same folder
// are still loaded, and nothing bad is loaded silently.
func TestLoadBadFiles(t *testing.T) {
	dir := write(t, map[string]string{
		"a-good.yaml":           policy,
		"b-malformed.yaml":      "apiVersion: v1\nkind: [\n",
		"c-unknown-field.yaml":  strings.Replace(policy, "pattern: {}", "patern: {}", 1),
		"d-wrong-type.json":     `{"apiVersion":"kyverno.io/v1","kind":"ClusterPolicy","metadata":{"name":"typed"},"spec":{"rules":[{"name":"r","match":{"any":[{"resources":{"kinds":"Pod"}}]},"validate":{"pattern":{}}}]}}`,
		"e-duplicate-key.yaml":  strings.Replace(policy, "spec:\n", "spec:\n  background: true\n  background: false\n", 1),
		"f-exception.yaml":      "apiVersion: kyverno.io/v2\nkind: PolicyException\nmetadata:\n  name: x\n  namespace: y\nspec:\n  exceptions:\n  - policyName: good\n    ruleNames: [r]\n  match: {}\n  typo: 1\n",
		"g-second-doc-bad.yaml": policy + "---\n" + strings.Replace(policy, "name: good", "name: second", 1) + "  extra: 1\n",
		"nested/h-good.yml":     strings.Replace(policy, "name: good", "name: nested", 1),
		"notes.txt":             "not: [a manifest",
	})
	set, err := loader.Load(dir)
	if err == nil {
		t.Fatal("no error for the bad files")
	}
	msg := err.Error()
	for _, want := range []string{
		filepath.Join(dir, "b-malformed.yaml") + "[0]",
		filepath.Join(dir, "c-unknown-field.yaml") + "[0] ClusterPolicy/good: spec.rules[0].validate.patern",
		filepath.Join(dir, "d-wrong-type.json") + "[0] ClusterPolicy/typed: spec.rules[0].match.any[0].resources.kinds",
		filepath.Join(dir, "e-duplicate-key.yaml") + "[0]",
		filepath.Join(dir, "f-exception.yaml") + "[0] PolicyException/x: spec.typo",
		filepath.Join(dir, "g-second-doc-bad.yaml") + "[1] ClusterPolicy/second: spec.extra",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not name %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "notes.txt") {
		t.Errorf("a non-manifest file was read")
	}
	var names []string
	for _, p := range set.Policies {
		names = append(names, p.GetName())
	}
	if strings.Join(names, ",") != "good,good,nested" {
		t.Errorf("loaded policies %v, want the valid ones only", names)
	}
	if len(set.Exceptions) != 0 {
		t.Errorf("a bad exception was loaded")
	}
}

// TestLoadMissingPath: a path that does not exist is an error naming it.
func TestLoadMissingPath(t *testing.T) {
	_, err := loader.Load(filepath.Join(t.TempDir(), "missing.yaml"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("got %v", err)
	}
}

// TestLoadSymlinkLoop: a folder that links to itself does not make Load
// loop forever.
func TestLoadSymlinkLoop(t *testing.T) {
	dir := write(t, map[string]string{"p.yaml": policy})
	if err := os.Symlink(dir, filepath.Join(dir, "loop")); err != nil {
		t.Skip(err)
	}
	set, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Policies) != 1 {
		t.Errorf("%d policies", len(set.Policies))
	}
}

// TestReadKeepsResources: documents that are neither policies nor
// exceptions are kept as resources, and look-alike kinds from other
// groups are not taken for policies.
func TestReadKeepsResources(t *testing.T) {
	s := &loader.Set{}
	src := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n---\napiVersion: example.com/v1\nkind: ClusterPolicy\nmetadata:\n  name: fake\n---\napiVersion: kyverno.io.evil/v1\nkind: ClusterPolicy\nmetadata:\n  name: fake2\n"
	if err := s.Read(strings.NewReader(src), "mixed.yaml"); err != nil {
		t.Fatal(err)
	}
	if len(s.Policies) != 0 || len(s.Resources) != 3 {
		t.Errorf("%d policies, %d resources", len(s.Policies), len(s.Resources))
	}
	for _, d := range s.Resources {
		if d.Source != "mixed.yaml" {
			t.Errorf("resource %s without its source", d)
		}
	}
	var _ api.Document = s.Resources[0]
}
