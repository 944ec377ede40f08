package report

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// TestWriteYAMLResultsMatchesBuild checks that streaming the reports gives
// the bytes and the summary of Build followed by WriteYAML, for every CLI
// case, in both formats and with and without AuditWarn, plus namespaced
// policies.
func TestWriteYAMLResultsMatchesBuild(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "cli", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	type runCase struct {
		name    string
		results []engine.PolicyResult
	}
	var runs []runCase
	for _, dir := range dirs {
		ps := readFiles(t, filepath.Join(dir, "policy.yaml"))
		rs := readFiles(t, filepath.Join(dir, "resources.yaml"))
		set, err := newEngine(t).Compile(ps.Policies...)
		if err != nil {
			t.Fatal(err)
		}
		var objs []map[string]any
		for _, d := range rs.Resources {
			objs = append(objs, d.Object)
		}
		runs = append(runs, runCase{dir, applyAll(t, set, objs)})
	}
	// namespaced policies next to a cluster one
	eng := newEngine(t)
	set := eng.NewPolicySet(compilePolicy(t, eng, namespacedPolicy), compilePolicy(t, eng, namespacedAuditPolicy), compilePolicy(t, eng, pssPolicy))
	pods := []map[string]any{
		object(t, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  namespace: payments\nspec:\n  hostNetwork: true\n  containers:\n  - name: c\n    image: nginx\n"),
		object(t, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: b\n  namespace: payments\n  labels:\n    team: x\nspec:\n  containers:\n  - name: c\n    image: nginx\n"),
	}
	runs = append(runs, runCase{"namespaced", applyAll(t, set, pods)})
	for _, run := range runs {
		dir, results := run.name, run.results
		for _, opts := range []Options{
			{Clock: fixedClock, Format: OpenReports},
			{Clock: fixedClock, Format: WGPolicy, AuditWarn: true},
		} {
			reports, err := build(results, opts)
			if err != nil {
				t.Fatal(err)
			}
			var want, got bytes.Buffer
			if err := writeYAML(&want, reports); err != nil {
				t.Fatal(err)
			}
			sum, err := writeYAMLResults(&got, results, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("%s (%s): streamed reports differ:\n%s\n--- want\n%s", dir, opts.Format, got.Bytes(), want.Bytes())
			}
			for _, sp := range streamSpills(t) {
				var streamed bytes.Buffer
				ssum := streamAll(t, &streamed, results, opts, sp.spill, sp.budget)
				if !bytes.Equal(streamed.Bytes(), want.Bytes()) {
					t.Errorf("%s (%s, %s): reports from a Stream differ:\n%s\n--- want\n%s", dir, opts.Format, sp.name, streamed.Bytes(), want.Bytes())
				}
				if ssum != summaryOf(reports) {
					t.Errorf("%s (%s): Stream summary %+v, want %+v", dir, sp.name, ssum, summaryOf(reports))
				}
			}
			var wantJSON bytes.Buffer
			if err := writeJSON(&wantJSON, reports); err != nil {
				t.Fatal(err)
			}
			for _, sp := range streamSpills(t) {
				var streamed bytes.Buffer
				ssum := streamAllWith(t, NewJSONStream, &streamed, results, opts, sp.spill, sp.budget)
				if !bytes.Equal(streamed.Bytes(), wantJSON.Bytes()) {
					t.Errorf("%s (%s, %s): JSON reports from a Stream differ:\n%s\n--- want\n%s", dir, opts.Format, sp.name, streamed.Bytes(), wantJSON.Bytes())
				}
				if ssum != summaryOf(reports) {
					t.Errorf("%s (%s, JSON): Stream summary %+v, want %+v", dir, sp.name, ssum, summaryOf(reports))
				}
			}
			if dir == "namespaced" && len(reports) != 3 {
				t.Errorf("namespaced case: %d reports, want the merged one and two namespaced ones", len(reports))
			}
			if sum != summaryOf(reports) {
				t.Errorf("%s: summary %+v, want %+v", dir, sum, summaryOf(reports))
			}
		}
	}
}

// TestWriteYAMLResultsParallel compares the chunked, parallel encoding of
// a large run with Build and WriteYAML.
func TestWriteYAMLResultsParallel(t *testing.T) {
	eng := newEngine(t)
	set := eng.NewPolicySet(compilePolicy(t, eng, namespacedPolicy), compilePolicy(t, eng, pssPolicy))
	var pods []map[string]any
	for i := 0; i < 700; i++ {
		host := "false"
		if i%3 == 0 {
			host = "true"
		}
		pods = append(pods, object(t, fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p%d\n  namespace: payments\nspec:\n  hostNetwork: %s\n  containers:\n  - name: c\n    image: nginx\n", i, host)))
	}
	results := applyAll(t, set, pods)
	opts := Options{Clock: fixedClock, Format: OpenReports}
	reports, err := build(results, opts)
	if err != nil {
		t.Fatal(err)
	}
	var want, got bytes.Buffer
	if err := writeYAML(&want, reports); err != nil {
		t.Fatal(err)
	}
	if _, err := writeYAMLResults(&got, results, opts); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("streamed reports differ (%d bytes, want %d)", got.Len(), want.Len())
	}
	// per resource, as the CLI streams them, spilled now and then
	var perResource bytes.Buffer
	streamAll(t, &perResource, results, opts, &memSpill{}, 4096)
	if !bytes.Equal(perResource.Bytes(), want.Bytes()) {
		t.Fatalf("reports streamed per resource differ (%d bytes, want %d)", perResource.Len(), want.Len())
	}
	var wantJSON, gotJSON bytes.Buffer
	if err := writeJSON(&wantJSON, reports); err != nil {
		t.Fatal(err)
	}
	streamAllWith(t, NewJSONStream, &gotJSON, results, opts, &memSpill{}, 4096)
	if !bytes.Equal(gotJSON.Bytes(), wantJSON.Bytes()) {
		t.Fatalf("JSON reports streamed per resource differ (%d bytes, want %d)", gotJSON.Len(), wantJSON.Len())
	}
}

// writeYAMLResults writes the reports Build makes of results as a Stream
// writes them, the entries rendered on all cores in chunks (as gavel
// apply's workers do) and added in order. It returns the summary of all
// the reports.
func writeYAMLResults(w io.Writer, results []engine.PolicyResult, opts Options) (api.PolicyReportSummary, error) {
	for i := range results {
		if len(results[i].Rules) > 0 && results[i].Policy == nil {
			return api.PolicyReportSummary{}, &inputError{Path: fmt.Sprintf("results[%d].policy", i), Msg: "no compiled policy"}
		}
	}
	st := NewStream(opts, nil, 0)
	if err := st.addAll(results); err != nil {
		return api.PolicyReportSummary{}, err
	}
	return st.WriteReports(w)
}

// addAll renders results in chunks on all cores and adds them in order.
func (s *Stream) addAll(results []engine.PolicyResult) error {
	const chunkSize = 256 // policy results per chunk
	n := (len(results) + chunkSize - 1) / chunkSize
	type chunk struct {
		rendered *Rendered
		err      error
		done     chan struct{}
	}
	chunks := make([]chunk, n)
	for i := range chunks {
		chunks[i].done = make(chan struct{})
	}
	var next atomic.Int64
	for range min(runtime.GOMAXPROCS(0), n) {
		go func() {
			r := s.NewRenderer()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				c := &chunks[i]
				c.rendered, c.err = r.Render(results[i*chunkSize : min(len(results), (i+1)*chunkSize)])
				close(c.done)
			}
		}()
	}
	var err error
	for i := range chunks {
		c := &chunks[i]
		<-c.done
		if err == nil {
			err = c.err
		}
		if err == nil {
			err = s.Add(c.rendered)
		}
	}
	return err
}
