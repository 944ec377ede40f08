package variables

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/cases")

// caseFile is one data-driven case under testdata/cases. The expected
// document (want) or error (wantError) is written by hand from the seed
// case's expected output; the golden file records the full outcome,
// including the expressions the evaluator was asked, and is rewritten with
// -update.
type caseFile struct {
	BasePath   string         `json:"basePath"`
	References bool           `json:"references"`
	Delete     bool           `json:"delete"`
	Strict     bool           `json:"strict"`
	Context    map[string]any `json:"context"`
	Exact      map[string]any `json:"exact"`
	Doc        any            `json:"doc"`
	Want       any            `json:"want"`
	WantError  string         `json:"wantError"`
}

type caseOutcome struct {
	Result any      `json:"result,omitempty"`
	Error  string   `json:"error,omitempty"`
	Asked  []string `json:"asked"`
}

func TestCases(t *testing.T) {
	files, err := filepath.Glob("testdata/cases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var c caseFile
			if err := yaml.Unmarshal(raw, &c); err != nil {
				t.Fatal(err)
			}
			out := runCase(t, c)
			if c.WantError != "" {
				if out.Error != c.WantError {
					t.Errorf("error = %q\nwant    %q", out.Error, c.WantError)
				}
			} else if out.Error != "" {
				t.Errorf("error: %s", out.Error)
			} else if !reflect.DeepEqual(out.Result, c.Want) {
				t.Errorf("got  %s\nwant %s", toJSON(out.Result), toJSON(c.Want))
			}
			golden := strings.TrimSuffix(file, ".yaml") + ".golden.json"
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(out); err != nil {
				t.Fatal(err)
			}
			got := buf.Bytes()
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if string(want) != string(got) {
				t.Errorf("golden mismatch for %s:\n%s", golden, got)
			}
		})
	}
}

func runCase(t *testing.T, c caseFile) caseOutcome {
	t.Helper()
	doc := c.Doc
	if c.References {
		var err error
		if doc, err = ResolveReferences(doc); err != nil {
			return caseOutcome{Error: err.Error()}
		}
	}
	tree, err := Compile(doc, WithBasePath(c.BasePath))
	if err != nil {
		return caseOutcome{Error: err.Error()}
	}
	f := newFake(c.Context)
	f.exact = c.Exact
	f.strict = c.Strict
	res, err := tree.Substitute(f, WithDeleteRequest(c.Delete))
	out := caseOutcome{Result: res, Asked: f.questions()}
	if out.Asked == nil {
		out.Asked = []string{}
	}
	if err != nil {
		out.Result, out.Error = nil, err.Error()
	}
	return out
}
