package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// memSpill is a Spill in memory that counts its writes.
type memSpill struct {
	b      []byte
	writes int
}

func (m *memSpill) Write(p []byte) (int, error) {
	m.b = append(m.b, p...)
	m.writes++
	return len(p), nil
}

func (m *memSpill) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(m.b)) {
		return 0, io.EOF
	}
	n := copy(p, m.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

type streamSpill struct {
	name   string
	spill  Spill
	budget int
}

// streamSpills are the ways a Stream keeps its entries: in memory, spilled
// after every resource, spilled now and then, in a temporary file.
func streamSpills(t *testing.T) []streamSpill {
	f, err := os.CreateTemp(t.TempDir(), "spill")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return []streamSpill{
		{"memory", nil, 0},
		{"spill every resource", &memSpill{}, 0},
		{"spill past 2 KB", &memSpill{}, 2048},
		{"temporary file", f, 512},
	}
}

// perResource splits results into the runs of each resource, as an apply
// run hands them to a Stream.
func perResource(results []engine.PolicyResult) [][]engine.PolicyResult {
	var out [][]engine.PolicyResult
	start := 0
	for i := 1; i <= len(results); i++ {
		if i == len(results) || !sameObject(results[i].Resource, results[start].Resource) {
			out = append(out, results[start:i])
			start = i
		}
	}
	return out
}

// streamAll renders the results of each resource on its own goroutine and
// adds them in order, as the CLI does.
func streamAll(t *testing.T, w io.Writer, results []engine.PolicyResult, opts Options, spill Spill, budget int) api.PolicyReportSummary {
	t.Helper()
	return streamAllWith(t, NewStream, w, results, opts, spill, budget)
}

// streamAllWith is streamAll with a Stream of newStream (NewStream or
// NewJSONStream).
func streamAllWith(t *testing.T, newStream func(Options, Spill, int) *Stream, w io.Writer, results []engine.PolicyResult, opts Options, spill Spill, budget int) api.PolicyReportSummary {
	t.Helper()
	s := newStream(opts, spill, budget)
	runs := perResource(results)
	rendered := make([]*Rendered, len(runs))
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	const workers = 3
	for k := 0; k < workers; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := s.NewRenderer()
			for i := k; i < len(runs); i += workers {
				rendered[i], errs[i] = r.Render(runs[i])
			}
		}()
	}
	wg.Wait()
	for i := range runs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if err := s.Add(rendered[i]); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := s.WriteReports(w)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestStreamBoundsMemory streams a large run with a small budget: the
// bytes in memory never pass the budget plus one resource's entries, the
// spill holds the rest, and the output is the same as in memory.
func TestStreamBoundsMemory(t *testing.T) {
	eng := newEngine(t)
	set := eng.NewPolicySet(compilePolicy(t, eng, namespacedPolicy), compilePolicy(t, eng, pssPolicy))
	var pods []map[string]any
	for i := 0; i < 500; i++ {
		pods = append(pods, object(t, fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p%d\n  namespace: payments\nspec:\n  hostNetwork: %t\n  containers:\n  - name: c\n    image: nginx\n", i, i%3 == 0)))
	}
	results := applyAll(t, set, pods)
	opts := Options{Clock: fixedClock, Format: OpenReports}
	var want bytes.Buffer
	if _, err := writeYAMLResults(&want, results, opts); err != nil {
		t.Fatal(err)
	}
	const budget = 4096
	spill := &memSpill{}
	s := NewStream(opts, spill, budget)
	r := s.NewRenderer()
	most := 0
	for _, run := range perResource(results) {
		rendered, err := r.Render(run)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Add(rendered); err != nil {
			t.Fatal(err)
		}
		most = max(most, s.buffered)
	}
	if most > budget {
		t.Errorf("%d bytes held in memory, budget %d", most, budget)
	}
	if spill.writes == 0 || len(spill.b) < want.Len()/2 {
		t.Errorf("spill has %d bytes in %d writes; want most of the %d bytes", len(spill.b), spill.writes, want.Len())
	}
	var got bytes.Buffer
	if _, err := s.WriteReports(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("spilled reports differ (%d bytes, want %d)", got.Len(), want.Len())
	}
}

// failingSpill fails its writes or its reads.
type failingSpill struct {
	memSpill
	failWrite, failRead bool
}

var errDisk = errors.New("disk full")

func (f *failingSpill) Write(p []byte) (int, error) {
	if f.failWrite {
		return 0, errDisk
	}
	return f.memSpill.Write(p)
}

func (f *failingSpill) ReadAt(p []byte, off int64) (int, error) {
	if f.failRead {
		return 0, errDisk
	}
	return f.memSpill.ReadAt(p, off)
}

// TestStreamErrors: a failing spill, a missing clock and a result without
// policy are errors, never a report with entries missing.
func TestStreamErrors(t *testing.T) {
	for _, newStream := range []func(Options, Spill, int) *Stream{NewStream, NewJSONStream} {
		streamErrors(t, newStream)
	}
}

func streamErrors(t *testing.T, newStream func(Options, Spill, int) *Stream) {
	eng := newEngine(t)
	set := eng.NewPolicySet(compilePolicy(t, eng, pssPolicy))
	results := applyAll(t, set, []map[string]any{object(t, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  namespace: x\nspec:\n  containers:\n  - name: c\n    image: nginx\n")})
	opts := Options{Clock: fixedClock}
	for _, tc := range []struct {
		name  string
		spill *failingSpill
		want  string
	}{
		{"write", &failingSpill{failWrite: true}, "report: spilling entries: disk full"},
		{"read", &failingSpill{failRead: true}, "report: reading spilled entries: disk full"},
	} {
		s := newStream(opts, tc.spill, 0)
		rendered, err := s.NewRenderer().Render(results)
		if err != nil {
			t.Fatal(err)
		}
		addErr := s.Add(rendered)
		var out bytes.Buffer
		_, err = s.WriteReports(&out)
		if tc.spill.failWrite && (addErr == nil || addErr.Error() != tc.want) {
			t.Errorf("%s: Add: %v, want %q", tc.name, addErr, tc.want)
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: WriteReports: %v, want %q", tc.name, err, tc.want)
		}
	}
	s := newStream(opts, nil, 0)
	bad := append([]engine.PolicyResult(nil), results...)
	bad[0].Policy = nil
	if _, err := s.NewRenderer().Render(bad); err == nil || err.Error() != "report: results[0].policy: no compiled policy" {
		t.Errorf("Render without policy: %v", err)
	}
}

// TestStreamTempFile spills a run to a real temporary file.
func TestStreamTempFile(t *testing.T) {
	eng := newEngine(t)
	set := eng.NewPolicySet(compilePolicy(t, eng, namespacedPolicy), compilePolicy(t, eng, namespacedAuditPolicy), compilePolicy(t, eng, pssPolicy))
	var pods []map[string]any
	for i := 0; i < 50; i++ {
		pods = append(pods, object(t, fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p%d\n  namespace: payments\nspec:\n  hostPID: %t\n  containers:\n  - name: c\n    image: nginx\n", i, i%2 == 0)))
	}
	results := applyAll(t, set, pods)
	opts := Options{Clock: fixedClock, AuditWarn: true}
	var want bytes.Buffer
	if _, err := writeYAMLResults(&want, results, opts); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "spill"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got bytes.Buffer
	streamAll(t, &got, results, opts, f, 100)
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("reports through a file differ:\n%s\n--- want\n%s", got.Bytes(), want.Bytes())
	}
}

// TestStreamPropertiesCache: entries whose Pod Security checks differ only
// in how their images split get their own properties, and a cached entry
// renders as an uncached one.
func TestStreamPropertiesCache(t *testing.T) {
	eng := newEngine(t)
	set := eng.NewPolicySet(compilePolicy(t, eng, pssPolicy))
	base := applyAll(t, set, []map[string]any{object(t, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  namespace: x\nspec:\n  hostNetwork: true\n  containers:\n  - name: c\n    image: nginx\n")})
	var results []engine.PolicyResult
	for _, images := range [][]string{{"a\x00b"}, {"a", "b"}, nil, {}, {"ab", "c"}, {"a", "bc"}, {"a\x00b"}, {"a", "b"}} {
		for _, pr := range base {
			pr.Rules = slices.Clone(pr.Rules)
			for i := range pr.Rules {
				checks := slices.Clone(pr.Rules[i].PodSecurityChecks)
				for j := range checks {
					checks[j].Images = images
				}
				pr.Rules[i].PodSecurityChecks = checks
			}
			results = append(results, pr)
		}
	}
	found := false
	for _, pr := range results {
		for _, r := range pr.Rules {
			found = found || len(r.PodSecurityChecks) > 0
		}
	}
	if !found {
		t.Fatal("no Pod Security checks in the results")
	}
	opts := Options{Clock: fixedClock}
	reports, err := build(results, opts)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := writeYAML(&want, reports); err != nil {
		t.Fatal(err)
	}
	s := NewStream(opts, nil, 0)
	r := s.NewRenderer()
	for _, pr := range results {
		rendered, err := r.Render([]engine.PolicyResult{pr})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Add(rendered); err != nil {
			t.Fatal(err)
		}
	}
	var got bytes.Buffer
	if _, err := s.WriteReports(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("cached properties differ:\n%s\n--- want\n%s", got.Bytes(), want.Bytes())
	}
}

// TestCopySegment reads spilled segments back through a buffer smaller
// than they are, and reports a spill shorter than a segment.
func TestCopySegment(t *testing.T) {
	spill := bytes.NewReader([]byte("0123456789abcdef"))
	for _, tc := range []struct {
		name string
		seg  segment
		want string
		err  error
	}{
		{"whole", segment{off: 0, n: 16}, "0123456789abcdef", nil},
		{"middle, in chunks", segment{off: 3, n: 9}, "3456789ab", nil},
		{"to the end", segment{off: 10, n: 6}, "abcdef", nil},
		{"empty", segment{off: 5, n: 0}, "", nil},
		{"past the end", segment{off: 12, n: 8}, "cdef", io.ErrUnexpectedEOF},
	} {
		var out bytes.Buffer
		err := copySegment(&out, spill, tc.seg, make([]byte, 4))
		if out.String() != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%s: got %q, %v; want %q, %v", tc.name, out.String(), err, tc.want, tc.err)
		}
	}
}
