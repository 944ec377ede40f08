package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
)

// trickyResults exercise the YAML scalar styles: long lines that fold,
// quotes, newlines, values that look like other types, unicode.
func trickyResults() []api.PolicyReportResult {
	messages := []string{
		"",
		"validation rule 'x' passed.",
		"validation error: " + strings.Repeat("very long message ", 12) + "rule x failed at path /spec/containers/0/image/",
		"line one\nline two\n",
		"  leading and trailing spaces  ",
		"true", "123", "1.5", "null", "~", "yes", "0x1F", "-", "- item", "key: value", "#comment", "@at", "`tick`",
		`double "quoted" and 'single'`, "tab\there", "unicode é 世界 \u2028", "ends with colon:",
		strings.Repeat("x", 200),
	}
	var out []api.PolicyReportResult
	for i, m := range messages {
		r := api.PolicyReportResult{
			Source: "kyverno", Policy: fmt.Sprintf("ns/policy-%d", i), Rule: "rule " + m, Message: m,
			Result: api.ResultFail, Scored: i%2 == 0, Timestamp: metav1.Timestamp{Seconds: int64(1666096247 + i), Nanos: int32(i)},
			Resources: []api.ObjectReference{{APIVersion: "v1", Kind: "Pod", Name: "p" + m, Namespace: "default", UID: "u", ResourceVersion: "12", FieldPath: m}},
		}
		if i%3 == 0 {
			r.Category, r.Severity = "Pod Security Standards (Baseline)", "medium"
			r.Properties = map[string]string{"process": "background scan", "controls": "a,b", "controlsJSON": `[{"ID":"a"}]`, "10": m, "9": "", "Zeta": "1", "a10": "x", "a9": "y"}
		}
		if i%5 == 0 {
			r.ResourceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": m}}
			r.Resources = nil
		}
		if i == 1 {
			r.Properties = map[string]string{}
		}
		if i == 2 {
			r.Resources = append(r.Resources, api.ObjectReference{}, api.ObjectReference{Kind: "Namespace", Name: m})
			r.Properties = map[string]string{"key: with colon": "multi\nline", "": "empty key"}
		}
		out = append(out, r)
	}
	return out
}

func encodeCases(t *testing.T) map[string][]any {
	t.Helper()
	results := trickyResults()
	n := 1543
	many := make([]api.PolicyReportResult, n)
	for i := range many {
		many[i] = results[i%len(results)]
	}
	meta := metav1.ObjectMeta{Name: "cpol-x", Namespace: "default", Labels: map[string]string{LabelManagedBy: ManagedByKyverno}}
	cases := map[string][]any{
		"empty": nil,
		"all types": {
			&api.ClusterPolicyReport{TypeMeta: metav1.TypeMeta{APIVersion: api.ReportGroupVersion, Kind: api.KindClusterPolicyReport}, ObjectMeta: metav1.ObjectMeta{Name: "merged"}, Results: results, Summary: summarize(results)},
			&api.PolicyReport{ObjectMeta: meta, Results: results, Scope: &api.ObjectReference{Kind: "Pod", Name: "p"}},
			&api.OpenClusterReport{ObjectMeta: metav1.ObjectMeta{Name: "merged"}, Results: results},
			&api.OpenReport{ObjectMeta: meta, Source: "kyverno", Results: results, ScopeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}},
			api.PolicyReport{ObjectMeta: meta, Results: results},
			api.OpenClusterReport{Results: results},
			api.ClusterPolicyReport{},
			api.OpenReport{Results: []api.PolicyReportResult{}},
		},
		"chunks": {&api.OpenClusterReport{ObjectMeta: metav1.ObjectMeta{Name: "merged"}, Results: many, Summary: summarize(many)}},
	}
	for _, name := range []string{"skip-and-error", "require-ns-labels"} {
		cases["cli "+name] = buildCase(t, filepath.Join("testdata", "cli", name), Options{Clock: fixedClock, Format: OpenReports})
	}
	return cases
}

// TestWriteYAMLMatchesMarshal checks that WriteYAML prints every report
// exactly as sigs.k8s.io/yaml.Marshal does.
func TestWriteYAMLMatchesMarshal(t *testing.T) {
	for name, reports := range encodeCases(t) {
		t.Run(name, func(t *testing.T) {
			var want bytes.Buffer
			for i, r := range reports {
				if i > 0 {
					want.WriteString("---\n")
				}
				b, err := yaml.Marshal(r)
				if err != nil {
					t.Fatal(err)
				}
				want.Write(b)
			}
			var got bytes.Buffer
			if err := writeYAML(&got, reports); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				g, w := strings.Split(got.String(), "\n"), strings.Split(want.String(), "\n")
				for i := range min(len(g), len(w)) {
					if g[i] != w[i] {
						t.Fatalf("line %d differs:\n got %q\nwant %q", i+1, g[i], w[i])
					}
				}
				t.Fatalf("lengths differ: got %d lines, want %d", len(g), len(w))
			}
		})
	}
}

func TestWriteJSON(t *testing.T) {
	reports := encodeCases(t)["all types"]
	var got bytes.Buffer
	if err := writeJSON(&got, reports); err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(got.String(), "---\n")
	if len(docs) != len(reports) {
		t.Fatalf("%d documents, want %d", len(docs), len(reports))
	}
	for i, d := range docs {
		want, _ := json.Marshal(reports[i])
		if strings.TrimSuffix(d, "\n") != string(want) {
			t.Errorf("document %d differs", i)
		}
	}
}

func TestWriteErrors(t *testing.T) {
	for _, write := range []func(*bytes.Buffer, []any) error{
		func(b *bytes.Buffer, r []any) error { return writeYAML(b, r) },
		func(b *bytes.Buffer, r []any) error { return writeJSON(b, r) },
	} {
		for _, bad := range []any{"x", (*api.OpenReport)(nil), nil} {
			var b bytes.Buffer
			err := write(&b, []any{&api.PolicyReport{}, bad})
			var ie *inputError
			if !errors.As(err, &ie) || ie.Path != "reports[1]" {
				t.Errorf("%#v: got %v", bad, err)
			}
		}
	}
}

// BenchmarkWriteYAML and BenchmarkMarshalYAML compare WriteYAML with
// sigs.k8s.io/yaml.Marshal on a report of 10,000 results.
func BenchmarkWriteYAML(b *testing.B) {
	r := benchReport(10000)
	b.ReportAllocs()
	for b.Loop() {
		if err := writeYAML(io.Discard, []any{r}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshalYAML(b *testing.B) {
	r := benchReport(10000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := yaml.Marshal(r); err != nil {
			b.Fatal(err)
		}
	}
}

func benchReport(n int) *api.OpenClusterReport {
	results := make([]api.PolicyReportResult, n)
	for i := range results {
		results[i] = api.PolicyReportResult{
			Source: "kyverno", Policy: "disallow-privileged-containers", Rule: "privileged-containers",
			Category: "Pod Security Standards (Baseline)", Severity: "medium", Result: api.ResultFail, Scored: true,
			Timestamp:  metav1.Timestamp{Seconds: 1666096247},
			Message:    "validation error: Privileged mode is disallowed. The fields spec.containers[*].securityContext.privileged must be unset or set to `false`. rule privileged-containers failed at path /spec/containers/0/securityContext/privileged/",
			Resources:  []api.ObjectReference{{APIVersion: "v1", Kind: "Pod", Name: fmt.Sprintf("pod-%d", i), Namespace: "default"}},
			Properties: map[string]string{"process": "background scan"},
		}
	}
	return &api.OpenClusterReport{ObjectMeta: metav1.ObjectMeta{Name: "merged"}, Results: results, Summary: summarize(results)}
}

// TestPlainSafe checks the fast path of the encoder against yaml.v2.
func TestPlainSafe(t *testing.T) {
	words := []string{"a", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "on", "On", "ON", "off", "Off",
		"true", "True", "TRUE", "false", "False", "null", "Null", "NULL", "nULL", "yEs", "NaN", "nan", "inf", "Inf",
		"e1", "E5", "x1", "v1", "apps/v1", "pod-1", "a.b_c/d-e", "abc-", "a--b", "a..b", "a/", "z9", "nginx", "Pod",
		"kube-system", "0dd94825-cc6e", "1abc", "-a", ".a", "_a", "/a", "a b", "a:b", "a#b", "a,b", "é"}
	for c := 0; c < 128; c++ {
		words = append(words, "a"+string(rune(c)), string(rune(c))+"a")
	}
	for _, w := range words {
		if !plainSafe(w) {
			continue
		}
		for _, nested := range []bool{false, true} {
			var want []byte
			var err error
			if nested {
				want, err = renderInRef("name", w)
			} else {
				want, err = renderInItem(map[string]any{"name": w}, false)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := "name: " + w + "\n"; got != string(want) {
				t.Errorf("plainSafe(%q) but yaml.v2 writes %q", w, want)
			}
		}
	}
}
