package patterns

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/internal/testshared"
)

// This file pins the outcome of Match (nil, or the Error's status, path,
// message and cause type) for every pattern of the shared policy corpora
// (the conformance corpus, the bench policies and testdata/realworld) against
// many resources: the 1,000 bench Pods (with JSON and with integer numbers),
// their containers, and every resource of the conformance corpus. The golden
// file holds one digest per pattern, so that an optimisation of the matcher
// that changes any outcome on real inputs fails here.

// corpusGolden names the corpus files as they were named when the corpus
// was read beside the repository ("../../shared/..."): the names stay
// whatever GAVEL_SHARED is.
const corpusGolden = "testdata/corpus.golden"

// corpusPattern is a pattern found in a policy file.
type corpusPattern struct {
	name    string // file and location of the pattern
	pattern any
}

// collectPatterns returns the validate patterns (pattern, anyPattern and
// those of foreach, nested or not) found anywhere in doc.
func collectPatterns(name string, doc any, out *[]corpusPattern) {
	var walk func(at string, x any)
	var validate func(at string, v map[string]any)
	validate = func(at string, v map[string]any) {
		if p, ok := v["pattern"]; ok && p != nil {
			*out = append(*out, corpusPattern{name: name + at + ".pattern", pattern: p})
		}
		if ap, ok := v["anyPattern"].([]any); ok {
			for i, p := range ap {
				*out = append(*out, corpusPattern{name: fmt.Sprintf("%s%s.anyPattern[%d]", name, at, i), pattern: p})
			}
		}
		if fe, ok := v["foreach"].([]any); ok {
			for i, f := range fe {
				if fm, ok := f.(map[string]any); ok {
					validate(fmt.Sprintf("%s.foreach[%d]", at, i), fm)
				}
			}
		}
	}
	walk = func(at string, x any) {
		switch t := x.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if k == "validate" {
					if v, ok := t[k].(map[string]any); ok {
						validate(at+".validate", v)
					}
					continue
				}
				walk(at+"."+k, t[k])
			}
		case []any:
			for i, e := range t {
				walk(fmt.Sprintf("%s[%d]", at, i), e)
			}
		}
	}
	walk("", doc)
}

// yamlFiles lists the YAML files under dir, sorted.
func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// integers returns a copy of x with integral float64 numbers as int64, the
// way Kubernetes unstructured objects hold them.
func integers(x any) any {
	switch t := x.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, v := range t {
			m[k] = integers(v)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, v := range t {
			l[i] = integers(v)
		}
		return l
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int64(t)
		}
	}
	return x
}

// outcomeOf renders everything Match reports.
func outcomeOf(err error) string {
	if err == nil {
		return "ok"
	}
	e, ok := err.(*Error)
	if !ok {
		return fmt.Sprintf("not an *Error: %T %v", err, err)
	}
	return fmt.Sprintf("%s skip=%v path=%q cause=%T msg=%q", e.Status(), e.Skip, e.Path, e.Err, e.Error())
}

// corpusInputs returns the patterns of the corpora and the resources they
// are matched with. It needs the shared corpus (GAVEL_SHARED).
func corpusInputs(t *testing.T) ([]corpusPattern, []any) {
	t.Helper()
	sharedBench := testshared.Dir(t, "bench")
	sharedConformSet := testshared.Dir(t, "conformance")
	root := filepath.Dir(sharedConformSet)
	name := func(f string) string {
		if rel, err := filepath.Rel(root, f); err == nil && !strings.HasPrefix(rel, "..") {
			return "../../shared/" + filepath.ToSlash(rel)
		}
		return strings.TrimPrefix(f, "../")
	}
	var pats []corpusPattern
	var resources []any
	// The corpora are named one by one: a corpus added to shared/ later
	// (the CEL policies, whose rules have no patterns) must not change the
	// pinned outcomes.
	var dirs []string
	for _, c := range []string{"gavel-cases", "kyverno-policies", "seed-cases"} {
		dirs = append(dirs, filepath.Join(sharedConformSet, c))
	}
	dirs = append(dirs, filepath.Join(sharedBench, "policies"), "testdata/realworld")
	for _, dir := range dirs {
		for _, f := range yamlFiles(t, dir) {
			for i, doc := range readDocs(t, f) {
				// Named as from the package's former place, patterns/, so that
				// the golden file keeps its bytes.
				collectPatterns(fmt.Sprintf("%s#%d", name(f), i), doc, &pats)
				if dir != filepath.Join(sharedBench, "policies") {
					resources = append(resources, doc)
				}
			}
		}
	}
	pods := readDocs(t, filepath.Join(sharedBench, "pods-1000.yaml"))
	for i, pod := range pods {
		resources = append(resources, pod)
		if i%4 == 0 {
			resources = append(resources, integers(pod))
		}
		if i%10 == 0 {
			spec, _ := pod["spec"].(map[string]any)
			for _, c := range []string{"containers", "initContainers"} {
				if l, ok := spec[c].([]any); ok {
					resources = append(resources, l...)
				}
			}
		}
	}
	if len(pats) < 100 || len(resources) < 2000 {
		t.Fatalf("found %d patterns and %d resources", len(pats), len(resources))
	}
	return pats, resources
}

func TestCorpusOutcomes(t *testing.T) {
	pats, resources := corpusInputs(t)
	if testing.Short() {
		resources = resources[:len(resources)/8]
	}
	var report strings.Builder
	counts := map[string]int{}
	for _, cp := range pats {
		p, err := Compile(cp.pattern)
		if err != nil {
			fmt.Fprintf(&report, "%s compile error %v\n", cp.name, err)
			continue
		}
		h := sha256.New()
		var pass, fail, skip, errs int
		for _, r := range resources {
			err := p.Match(r)
			o := outcomeOf(err)
			h.Write([]byte(o))
			h.Write([]byte{0})
			switch {
			case err == nil:
				pass++
			case err.(*Error).Status() == StatusFail:
				fail++
			case err.(*Error).Status() == StatusSkip:
				skip++
			default:
				errs++
			}
		}
		counts["pass"] += pass
		counts["fail"] += fail
		counts["skip"] += skip
		counts["error"] += errs
		fmt.Fprintf(&report, "%s %x pass=%d fail=%d skip=%d error=%d\n", cp.name, h.Sum(nil)[:12], pass, fail, skip, errs)
	}
	t.Logf("%d patterns x %d resources: %v", len(pats), len(resources), counts)
	if testing.Short() {
		return
	}
	checkGolden(t, corpusGolden, []byte(report.String()))
}

// clearPaths empties the paths written at compile time in the pattern tree
// under n, so that Match renders every path from its stack, as it did
// before they were written.
func clearPaths(n *node) {
	n.path = ""
	for i := range n.entries {
		clearPaths(n.entries[i].value)
	}
	for _, e := range n.elems {
		clearPaths(e)
	}
}

// TestStaticPaths compares Match with the paths written at compile time
// and Match rendering every path from its stack, on the corpora (a third of
// the resources: TestCorpusOutcomes pins the outcomes on all of them).
func TestStaticPaths(t *testing.T) {
	pats, all := corpusInputs(t)
	step := 3
	if testing.Short() {
		step = 24
	}
	var resources []any
	for i := 0; i < len(all); i += step {
		resources = append(resources, all[i])
	}
	withPath := 0
	for _, cp := range pats {
		p, err := Compile(cp.pattern)
		if err != nil {
			continue
		}
		rendered, _ := Compile(cp.pattern)
		clearPaths(rendered.root)
		for _, r := range resources {
			got, want := outcomeOf(p.Match(r)), outcomeOf(rendered.Match(r))
			if got != want {
				t.Fatalf("%s: %s, rendered: %s", cp.name, got, want)
			}
			if strings.Contains(got, "path=\"/") {
				withPath++
			}
		}
	}
	if withPath == 0 {
		t.Fatal("no failure with a path")
	}
}

// TestHeldFailures checks, on the corpora, that errFailure (which stands for
// a failure held by the matcher) never leaves Match, and that the cause Match
// allocates with its Error is the cause the matcher held: a mismatch at the
// Error's path, or a value that is not a map.
func TestHeldFailures(t *testing.T) {
	pats, all := corpusInputs(t)
	step := 8
	if testing.Short() {
		step = 64
	}
	causes := map[string]int{}
	for _, cp := range pats {
		p, err := Compile(cp.pattern)
		if err != nil {
			continue
		}
		for i := 0; i < len(all); i += step {
			err := p.Match(all[i])
			if err == nil {
				continue
			}
			if errors.Is(err, errFailure) {
				t.Fatalf("%s: errFailure escaped: %v", cp.name, err)
			}
			e := err.(*Error)
			switch c := e.Err.(type) {
			case *MismatchError:
				if e.Path != "" && c.Path != e.Path {
					t.Fatalf("%s: mismatch at %q reported at %q", cp.name, c.Path, e.Path)
				}
				if e.Error() != c.Error() {
					t.Fatalf("%s: message %q, cause %q", cp.name, e.Error(), c.Error())
				}
			case *structureError:
				if e.Path != "" && c.path != e.Path {
					t.Fatalf("%s: structure error at %q reported at %q", cp.name, c.path, e.Path)
				}
			}
			causes[fmt.Sprintf("%T/%s", e.Err, e.Status())]++
		}
	}
	for _, c := range []string{"*patterns.MismatchError/fail", "*patterns.structureError/fail", "*patterns.AnchorError/skip"} {
		if causes[c] == 0 {
			t.Errorf("no %s among %v", c, causes)
		}
	}
}
