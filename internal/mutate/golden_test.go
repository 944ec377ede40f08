package mutate

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata and zz_schema_table.go")

// goldenSections are the table tests, one per section of the mutate
// documentation (plus the merge semantics borrowed from kyaml and the
// upstream quirks this package reproduces). Each case is a directory
// testdata/<section>/<case> with resource.yaml, patch.yaml (or patch.json
// for JSON text) and the golden outputs expected.yaml and outcome.yaml, or
// error.txt when applying fails.
var goldenSections = []struct {
	dir       string
	jsonPatch bool
}{
	{"jsonpatch", true},        // RFC 6902 JSONPatch
	{"strategic-merge", false}, // Strategic Merge Patch
	{"anchors", false},         // Conditional logic using anchors
	{"processing-flow", false}, // Processing flow and combinations
	{"merge-semantics", false}, // kyaml merge2 semantics (directives, lists, nulls)
	{"upstream-quirks", false}, // upstream behaviours kept on purpose
}

func TestGolden(t *testing.T) {
	for _, sec := range goldenSections {
		t.Run(sec.dir, func(t *testing.T) {
			dirs, err := filepath.Glob(filepath.Join("testdata", sec.dir, "*"))
			if err != nil || len(dirs) == 0 {
				t.Fatalf("no cases in %s (%v)", sec.dir, err)
			}
			for _, dir := range dirs {
				t.Run(filepath.Base(dir), func(t *testing.T) {
					runGoldenCase(t, dir, sec.jsonPatch)
				})
			}
		})
	}
}

type outcome struct {
	Skipped   bool   `json:"skipped"`
	Message   string `json:"message"`
	Condition string `json:"condition,omitempty"`
}

func runGoldenCase(t *testing.T, dir string, isJSON bool) {
	resource := readYAMLMap(t, filepath.Join(dir, "resource.yaml"))
	before := deepCopyValue(resource)
	var patcher Patcher
	var err error
	if isJSON {
		raw, rerr := os.ReadFile(filepath.Join(dir, "patch.yaml"))
		if os.IsNotExist(rerr) {
			raw, rerr = os.ReadFile(filepath.Join(dir, "patch.json"))
		}
		if rerr != nil {
			t.Fatal(rerr)
		}
		patcher, err = CompileJSONPatch(string(raw))
	} else {
		var patch any
		raw, rerr := os.ReadFile(filepath.Join(dir, "patch.yaml"))
		if rerr != nil {
			t.Fatal(rerr)
		}
		if err := yaml.Unmarshal(raw, &patch); err != nil {
			t.Fatal(err)
		}
		patcher, err = CompileStrategicMerge(patch)
	}
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	res, err := patcher.Mutate(resource)
	if !reflect.DeepEqual(before, resource) {
		t.Fatalf("the input resource was modified")
	}
	if err != nil {
		checkGolden(t, filepath.Join(dir, "error.txt"), []byte(err.Error()+"\n"))
		for _, f := range []string{"expected.yaml", "outcome.yaml"} {
			if _, serr := os.Stat(filepath.Join(dir, f)); serr == nil {
				if *update {
					_ = os.Remove(filepath.Join(dir, f))
				} else {
					t.Errorf("%s exists but applying failed: %v", f, err)
				}
			}
		}
		return
	}
	got, merr := yaml.Marshal(res.Object)
	if merr != nil {
		t.Fatal(merr)
	}
	checkGolden(t, filepath.Join(dir, "expected.yaml"), got)
	o := outcome{Skipped: res.Skipped, Message: res.Message}
	if res.Condition != nil {
		o.Condition = res.Condition.Error()
	}
	ob, _ := yaml.Marshal(o)
	checkGolden(t, filepath.Join(dir, "outcome.yaml"), ob)
	if *update {
		_ = os.Remove(filepath.Join(dir, "error.txt"))
	}

	// The diff of the mutation, applied by an RFC 6902 implementation,
	// must give the patched resource back.
	checkDiffRoundTrip(t, resource, res.Object)
}

func checkDiffRoundTrip(t *testing.T, original, modified map[string]any) {
	t.Helper()
	patch, err := DiffJSON(original, modified)
	if err != nil {
		t.Fatalf("diff: %v", err)
	}
	decoded, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatalf("decode diff %s: %v", patch, err)
	}
	doc, _ := json.Marshal(original)
	out, err := decoded.Apply(doc)
	if err != nil {
		t.Fatalf("apply diff %s: %v", patch, err)
	}
	var got, want any
	_ = json.Unmarshal(out, &got)
	wb, _ := json.Marshal(modified)
	_ = json.Unmarshal(wb, &want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("diff %s does not rebuild the patched resource:\n got %s\nwant %s", patch, out, wb)
	}
}

func checkGolden(t *testing.T, file string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("missing golden file (run go test -update): %v", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs:\n--- got\n%s--- want\n%s", file, got, want)
	}
}

func readYAMLMap(t *testing.T, file string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func deepCopyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopyValue(e)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = deepCopyValue(e)
		}
		return l
	}
	return v
}
