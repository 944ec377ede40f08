package report

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/loader"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fixedClock is the clock of every test: 2022-10-18T12:30:47Z, the time of
// the seed's examples.
func fixedClock() time.Time { return time.Unix(1666096247, 0).UTC() }

// clockAt returns a clock stuck at the given Unix second.
func clockAt(sec int64) func() time.Time {
	return func() time.Time { return time.Unix(sec, 0) }
}

func newEngine(t testing.TB, opts ...engine.Option) *engine.Engine {
	t.Helper()
	eng, err := engine.New(append([]engine.Option{engine.WithClock(fixedClock)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// readSet reads policies and resources from YAML text.
func readSet(t testing.TB, text string) *loader.Set {
	t.Helper()
	s := &loader.Set{}
	if err := s.Read(strings.NewReader(text), "test"); err != nil {
		t.Fatal(err)
	}
	return s
}

// readFiles reads policies and resources from files.
func readFiles(t testing.TB, paths ...string) *loader.Set {
	t.Helper()
	s, err := loader.Load(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// compilePolicy compiles the single policy of a YAML text.
func compilePolicy(t testing.TB, eng *engine.Engine, text string) *engine.Policy {
	t.Helper()
	s := readSet(t, text)
	if len(s.Policies) != 1 {
		t.Fatalf("want one policy, got %d", len(s.Policies))
	}
	p, err := eng.CompilePolicy(s.Policies[0])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// object decodes one YAML resource.
func object(t testing.TB, text string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// applyAll evaluates the resources as the CLI does (mutate, then validate
// the mutated resource) and returns every policy result in order.
func applyAll(t testing.TB, set *engine.PolicySet, objs []map[string]any) []engine.PolicyResult {
	t.Helper()
	ctx := context.Background()
	var out []engine.PolicyResult
	for _, obj := range objs {
		m, err := set.Mutate(ctx, &engine.Request{Operation: api.Create, Object: obj})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m.Policies...)
		v, err := set.Validate(ctx, &engine.Request{Operation: api.Create, Object: m.Resource})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v.Policies...)
	}
	return out
}

// validate runs the validate rules of the set on one request.
func validate(t testing.TB, set *engine.PolicySet, obj map[string]any, background bool) []engine.PolicyResult {
	t.Helper()
	resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: obj, Background: background})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Policies
}

func toYAML(t testing.TB, v any) []byte {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reportsYAML prints reports as the CLI does: YAML documents separated by
// "---".
func reportsYAML(t testing.TB, reports []any) []byte {
	t.Helper()
	var buf bytes.Buffer
	for i, r := range reports {
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(toYAML(t, r))
	}
	return buf.Bytes()
}

// golden compares got with testdata/<name>, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// result is the report entry of one rule result, as Build makes it.
func result(pr engine.PolicyResult, rr engine.RuleResult, opts Options) api.PolicyReportResult {
	return convert(&pr, &rr, opts.source(), opts.now(), opts.AuditWarn, resourceRef(pr.Resource))
}

// reportObjects are the store's reports as API objects.
func (s *Store) reportObjects() []any { return objects(s.Reports()) }
