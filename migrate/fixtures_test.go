package migrate

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
)

// TestFixtures converts the policies of each folder of
// testdata/fixtures: the YAML is compared with expected.yaml, the outcome
// of each rule and the verification on resources.yaml with outcome.txt
// (go test -run TestFixtures -update rewrites them). The fixtures whose
// conversions the engine evaluates must verify equal.
func TestFixtures(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "fixtures", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no fixtures")
	}
	// what each fixture must show beside its golden files
	want := map[string]string{
		"pattern-anchors":     "equal",
		"deny-conditions":     "equal",
		"foreach-containers":  "equal",
		"configmap-context":   "equal",
		"multi-rule":          "equal",
		"exception":           "equal",
		"mutate-labels":       "converted",
		"foreach-json-parent": "equal",
		"cleanup":             "converted",
		"not-convertible":     "problem",
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			convs := fixtureConversions(t, filepath.Join(dir, "policy.yaml"))
			var y bytes.Buffer
			for i, c := range convs {
				if i > 0 && len(c.Outputs) > 0 {
					y.WriteString("---\n")
				}
				if err := c.WriteYAML(&y); err != nil {
					t.Fatal(err)
				}
			}
			var out strings.Builder
			problems := 0
			for _, c := range convs {
				for _, r := range c.Rules {
					if r.Converted() {
						fmt.Fprintf(&out, "%s %s: %s %s: converted -> %s\n", c.Kind, c.Name, r.Type, r.Rule, r.Policy)
						continue
					}
					problems++
					for _, p := range r.Problems {
						fmt.Fprintf(&out, "%s %s: %s %s: not converted: %s\n", c.Kind, c.Name, r.Type, r.Rule, p)
					}
				}
			}
			equal := true
			if resources := fixtureResources(t, filepath.Join(dir, "resources.yaml")); len(resources) > 0 {
				cluster := inmem.New(resources...)
				v, err := Verify(context.Background(), convs, resources, WithEngineOptions(engine.WithClient(cluster),
					engine.WithConfigMapResolver(cluster), engine.WithAPIClient(cluster)))
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range v.Policies {
					fmt.Fprintf(&out, "verify %s: %d evaluations of %s, %d differences\n", p.Policy, p.Evaluations, strings.Join(p.Compared, ", "), len(p.Differences))
					for _, d := range p.Differences {
						fmt.Fprintf(&out, "  %s\n", d)
					}
					for _, u := range p.Unverified {
						fmt.Fprintf(&out, "  not verified: %s\n", u)
					}
					if len(p.Differences) > 0 || len(p.Compared) == 0 {
						equal = false
					}
				}
			}
			goldenFile(t, filepath.Join(dir, "expected.yaml"), y.String())
			goldenFile(t, filepath.Join(dir, "outcome.txt"), out.String())
			switch want[name] {
			case "equal":
				if problems > 0 || !equal {
					t.Errorf("want every rule converted and verified equal:\n%s", out.String())
				}
			case "converted":
				if problems > 0 {
					t.Errorf("want every rule converted:\n%s", out.String())
				}
			case "problem":
				if problems == 0 {
					t.Errorf("want a rule that is not converted:\n%s", out.String())
				}
			default:
				t.Errorf("fixture %s: no expectation", name)
			}
		})
	}
}

// fixtureConversions converts the documents of a file: policies and
// cleanup policies, then exceptions.
func fixtureConversions(t *testing.T, file string) []*Conversion {
	t.Helper()
	var convs, exceptions []*Conversion
	var xdocs []api.Document
	for _, d := range readDocs(t, file) {
		if d.Kind() == api.KindPolicyException {
			xdocs = append(xdocs, d)
			continue
		}
		c, err := Convert(d)
		if err != nil {
			t.Fatal(err)
		}
		convs = append(convs, c)
	}
	for _, d := range xdocs {
		c, err := Convert(d, WithPolicies(convs...))
		if err != nil {
			t.Fatal(err)
		}
		exceptions = append(exceptions, c)
	}
	if len(convs)+len(exceptions) == 0 {
		t.Fatalf("%s: nothing to convert", file)
	}
	return append(convs, exceptions...)
}

// fixtureResources reads the resources of a fixture (none when the file
// is missing).
func fixtureResources(t *testing.T, file string) []map[string]any {
	t.Helper()
	if _, err := os.Stat(file); err != nil {
		return nil
	}
	var out []map[string]any
	for _, d := range readDocs(t, file) {
		out = append(out, d.Object)
	}
	return out
}

// goldenFile compares got with the file at path, or writes it with
// -update.
func goldenFile(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if string(want) != got {
		t.Errorf("%s differs (go test -run TestFixtures -update rewrites it):\n%s", path, firstDiff(string(want), got))
	}
}
