package variables

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"
)

// preparedFake is fakeEvaluator answering prepared expressions: it checks
// that the prepared value is the one made for the same text, then answers
// as Lookup does, so that both ways give the same outcome.
type preparedFake struct {
	*fakeEvaluator
	t        *testing.T
	mu       sync.Mutex
	prepared []string // expressions answered through LookupPrepared
}

type preparedExpr struct{ expr string }

func prepareText(expr string) any { return &preparedExpr{expr: expr} }

func (p *preparedFake) LookupPrepared(expr string, prepared any) (any, bool, error) {
	if pe, ok := prepared.(*preparedExpr); !ok || pe.expr != expr {
		p.t.Errorf("LookupPrepared(%q, %#v): prepared for another text", expr, prepared)
	}
	p.mu.Lock()
	p.prepared = append(p.prepared, expr)
	p.mu.Unlock()
	return p.Lookup(expr)
}

// TestPreparedMatchesText: every data-driven case gives the same result,
// error and questions with the expressions prepared at compile time as
// with their text alone; prepared expressions are used, except those a
// DELETE request rewrites and `{{ @ }}`.
func TestPreparedMatchesText(t *testing.T) {
	files, err := filepath.Glob("testdata/cases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	used := 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var c caseFile
		if err := yaml.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		for _, del := range []bool{c.Delete, !c.Delete} {
			c.Delete = del
			want := runCase(t, c)
			got, prepared := runPreparedCase(t, c)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s (delete %v): prepared %+v\ntext %+v", file, del, got, want)
			}
			for _, expr := range prepared {
				if expr == "@" || (del && strings.Contains(expr, "request.object")) {
					t.Errorf("%s (delete %v): %q answered as prepared", file, del, expr)
				}
			}
			used += len(prepared)
		}
	}
	if used == 0 {
		t.Fatal("no expression answered as prepared")
	}
}

func runPreparedCase(t *testing.T, c caseFile) (caseOutcome, []string) {
	doc := c.Doc
	if c.References {
		var err error
		if doc, err = ResolveReferences(doc); err != nil {
			return caseOutcome{Error: err.Error()}, nil
		}
	}
	tree, err := Compile(doc, WithBasePath(c.BasePath), WithPrepare(prepareText))
	if err != nil {
		return caseOutcome{Error: err.Error()}, nil
	}
	f := newFake(c.Context)
	f.exact = c.Exact
	f.strict = c.Strict
	p := &preparedFake{fakeEvaluator: f, t: t}
	res, err := tree.Substitute(p, WithDeleteRequest(c.Delete))
	out := caseOutcome{Result: res, Asked: f.questions()}
	if out.Asked == nil {
		out.Asked = []string{}
	}
	if err != nil {
		out.Result, out.Error = nil, err.Error()
	}
	return out, p.prepared
}

// TestPrepareWhatIsKnownAtCompileTime: only expressions without inner
// ones are prepared, `{{ @ }}` is not, a DELETE request evaluates the
// rewritten text, and a plain LookupEvaluator is asked the text.
func TestPrepareWhatIsKnownAtCompileTime(t *testing.T) {
	var seen []string
	tmpl, err := Parse("{{ a.{{ b }} }}-{{ @ }}-{{- request.object.x }}-{{ c }}",
		WithBasePath("/validate/pattern/spec/x"), WithPrepare(func(expr string) any {
			seen = append(seen, expr)
			if expr == "c" {
				return nil // not prepared
			}
			return prepareText(expr)
		}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"b", "request.object.x", "c"}; !reflect.DeepEqual(seen, want) {
		t.Fatalf("prepared %q, want %q", seen, want)
	}
	data := map[string]any{
		"a":       map[string]any{"k": "A"},
		"b":       "k",
		"c":       "C",
		"request": map[string]any{"object": map[string]any{"x": "new", "spec": map[string]any{"x": "cur"}}, "oldObject": map[string]any{"x": "old", "spec": map[string]any{"x": "oldcur"}}},
	}
	for del, want := range map[bool]string{false: "A-cur-new-C", true: "A-oldcur-old-C"} {
		p := &preparedFake{fakeEvaluator: newFake(data), t: t}
		got, err := tmpl.Render(p, WithDeleteRequest(del))
		if err != nil || got != want {
			t.Fatalf("delete %v: %v, %v, want %q", del, got, err, want)
		}
		wantPrepared := []string{"b", "request.object.x"}
		if del {
			wantPrepared = []string{"b"}
		}
		if !reflect.DeepEqual(p.prepared, wantPrepared) {
			t.Errorf("delete %v: answered as prepared %q, want %q", del, p.prepared, wantPrepared)
		}
		// without LookupPrepared, the text
		plain := newFake(data)
		if got, err := tmpl.Render(plain, WithDeleteRequest(del)); err != nil || got != want {
			t.Fatalf("delete %v, plain evaluator: %v, %v, want %q", del, got, err, want)
		}
	}
	if _, err := Parse("x", WithPrepare(nil)); err == nil {
		t.Error("WithPrepare(nil) accepted")
	}
}
