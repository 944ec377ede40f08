package report

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

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
			reports, err := Build(results, opts)
			if err != nil {
				t.Fatal(err)
			}
			var want, got bytes.Buffer
			if err := WriteYAML(&want, reports); err != nil {
				t.Fatal(err)
			}
			sum, err := WriteYAMLResults(&got, results, opts)
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
				if ssum != Summary(reports) {
					t.Errorf("%s (%s): Stream summary %+v, want %+v", dir, sp.name, ssum, Summary(reports))
				}
			}
			var wantJSON bytes.Buffer
			if err := WriteJSON(&wantJSON, reports); err != nil {
				t.Fatal(err)
			}
			for _, sp := range streamSpills(t) {
				var streamed bytes.Buffer
				ssum := streamAllWith(t, NewJSONStream, &streamed, results, opts, sp.spill, sp.budget)
				if !bytes.Equal(streamed.Bytes(), wantJSON.Bytes()) {
					t.Errorf("%s (%s, %s): JSON reports from a Stream differ:\n%s\n--- want\n%s", dir, opts.Format, sp.name, streamed.Bytes(), wantJSON.Bytes())
				}
				if ssum != Summary(reports) {
					t.Errorf("%s (%s, JSON): Stream summary %+v, want %+v", dir, sp.name, ssum, Summary(reports))
				}
			}
			if dir == "namespaced" && len(reports) != 3 {
				t.Errorf("namespaced case: %d reports, want the merged one and two namespaced ones", len(reports))
			}
			if sum != Summary(reports) {
				t.Errorf("%s: summary %+v, want %+v", dir, sum, Summary(reports))
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
	reports, err := Build(results, opts)
	if err != nil {
		t.Fatal(err)
	}
	var want, got bytes.Buffer
	if err := WriteYAML(&want, reports); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteYAMLResults(&got, results, opts); err != nil {
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
	if err := WriteJSON(&wantJSON, reports); err != nil {
		t.Fatal(err)
	}
	streamAllWith(t, NewJSONStream, &gotJSON, results, opts, &memSpill{}, 4096)
	if !bytes.Equal(gotJSON.Bytes(), wantJSON.Bytes()) {
		t.Fatalf("JSON reports streamed per resource differ (%d bytes, want %d)", gotJSON.Len(), wantJSON.Len())
	}
}
