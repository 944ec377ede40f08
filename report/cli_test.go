package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestBuildUpstreamCLI reproduces the expected-report.yaml files, printed by
// `kyverno apply policy.yaml --resource resources.yaml --policy-report`, of
// the reporting seed cases (copied under testdata/cli). Timestamps change
// on every upstream run and are ignored. The order of the results is
// ignored too: upstream's order is not stable (the same input gives
// rotated lists, see require-ns-labels and secrets-not-from-env-vars),
// while Build keeps the input order; our exact output is pinned by
// testdata/cli/<case>/report.golden.yaml.
func TestBuildUpstreamCLI(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "cli", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			reports := buildCase(t, dir, Options{Clock: fixedClock, Format: OpenReports})
			if len(reports) != 1 {
				t.Fatalf("want one merged report, got %d", len(reports))
			}
			got := toYAML(t, reports[0])
			golden(t, filepath.Join("cli", filepath.Base(dir), "report.golden.yaml"), got)

			want, err := os.ReadFile(filepath.Join(dir, "expected-report.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			g, w := normalizeReport(t, got), normalizeReport(t, want)
			sortGenericResults(t, g)
			sortGenericResults(t, w)
			if !reflect.DeepEqual(g, w) {
				gj, _ := json.MarshalIndent(g, "", "  ")
				wj, _ := json.MarshalIndent(w, "", "  ")
				t.Errorf("report differs from upstream\n--- got\n%s\n--- want\n%s", gj, wj)
			}
		})
	}
}

// buildCase evaluates policy.yaml on resources.yaml of a case folder like
// the CLI and builds the reports.
func buildCase(t *testing.T, dir string, opts Options) []any {
	t.Helper()
	ps := readFiles(t, filepath.Join(dir, "policy.yaml"))
	rs := readFiles(t, filepath.Join(dir, "resources.yaml"))
	eng := newEngine(t)
	set, err := eng.Compile(ps.Policies...)
	if err != nil {
		t.Fatal(err)
	}
	var objs []map[string]any
	for _, d := range rs.Resources {
		objs = append(objs, d.Object)
	}
	reports, err := build(applyAll(t, set, objs), opts)
	if err != nil {
		t.Fatal(err)
	}
	return reports
}

// normalizeReport decodes a YAML report and drops the result timestamps.
func normalizeReport(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	results, _ := m["results"].([]any)
	for _, r := range results {
		if rm, ok := r.(map[string]any); ok {
			delete(rm, "timestamp")
		}
	}
	return m
}

// sortGenericResults sorts the results of a decoded report by their JSON
// text.
func sortGenericResults(t *testing.T, m map[string]any) {
	t.Helper()
	results, _ := m["results"].([]any)
	keys := make([]string, len(results))
	for i, r := range results {
		b, _ := json.Marshal(r)
		keys[i] = string(b)
	}
	sort.Strings(keys)
	sorted := make([]any, len(keys))
	for i, k := range keys {
		var v any
		if err := json.Unmarshal([]byte(k), &v); err != nil {
			t.Fatal(err)
		}
		sorted[i] = v
	}
	m["results"] = sorted
}

// TestBuildWGPolicy pins the wgpolicyk8s.io output of the same cases.
func TestBuildWGPolicy(t *testing.T) {
	for _, name := range []string{"skip-and-error", "scored-false"} {
		t.Run(name, func(t *testing.T) {
			reports := buildCase(t, filepath.Join("testdata", "cli", name), Options{Clock: fixedClock})
			golden(t, filepath.Join("cli", name, "report.wgpolicy.golden.yaml"), reportsYAML(t, reports))
		})
	}
}

// TestBuildAuditWarn checks --audit-warn on the Audit policies of the cases:
// fail becomes warn, nothing else changes.
func TestBuildAuditWarn(t *testing.T) {
	dir := filepath.Join("testdata", "cli", "skip-and-error")
	plain := summaryOf(buildCase(t, dir, Options{Clock: fixedClock}))
	warned := summaryOf(buildCase(t, dir, Options{Clock: fixedClock, AuditWarn: true}))
	if plain.Fail == 0 || warned.Fail != 0 || warned.Warn != plain.Warn+plain.Fail {
		t.Errorf("audit-warn: plain %+v, warned %+v", plain, warned)
	}
	if warned.Pass != plain.Pass || warned.Skip != plain.Skip || warned.Error != plain.Error {
		t.Errorf("audit-warn changed other counts: plain %+v, warned %+v", plain, warned)
	}
}
