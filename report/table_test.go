package report

import (
	"bytes"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
)

func TestWriteTable(t *testing.T) {
	meta := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	tests := []struct {
		name    string
		reports []any
		want    string
	}{{
		name:    "empty",
		reports: nil,
		want:    "NAME   PASS   FAIL   WARN   ERROR   SKIP\n",
	}, {
		name: "cluster only",
		reports: []any{
			&api.ClusterPolicyReport{ObjectMeta: meta("", "cpol-require-ns-labels"), Summary: api.PolicyReportSummary{Fail: 5}},
		},
		want: "NAME                     PASS   FAIL   WARN   ERROR   SKIP\n" +
			"cpol-require-ns-labels   0      5      0      0       0\n",
	}, {
		name: "namespaced, every type",
		reports: []any{
			&api.OpenClusterReport{ObjectMeta: meta("", "merged"), Summary: api.PolicyReportSummary{Pass: 3, Skip: 1}},
			&api.PolicyReport{ObjectMeta: meta("kube-system", "cpol-disallow-privileged-containers"), Summary: api.PolicyReportSummary{Pass: 14}},
			api.PolicyReport{ObjectMeta: meta("kyverno", "cpol-disallow-privileged-containers"), Summary: api.PolicyReportSummary{Pass: 2}},
			&api.OpenReport{ObjectMeta: meta("default", "cpol-disallow-privileged-containers"), Summary: api.PolicyReportSummary{Fail: 1, Warn: 2, Error: 3}},
		},
		want: "NAMESPACE     NAME                                  PASS   FAIL   WARN   ERROR   SKIP\n" +
			"              merged                                3      0      0      0       1\n" +
			"kube-system   cpol-disallow-privileged-containers   14     0      0      0       0\n" +
			"kyverno       cpol-disallow-privileged-containers   2      0      0      0       0\n" +
			"default       cpol-disallow-privileged-containers   0      1      2      3       0\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := writeTable(&b, tt.reports); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tt.want)
			}
		})
	}
}

func TestWriteTableErrors(t *testing.T) {
	for _, bad := range []any{"report", (*api.PolicyReport)(nil), nil, 3} {
		var b bytes.Buffer
		err := writeTable(&b, []any{&api.PolicyReport{}, bad})
		var ie *inputError
		if !errors.As(err, &ie) || ie.Path != "reports[1]" {
			t.Errorf("%#v: got %v", bad, err)
		}
		if b.Len() != 0 {
			t.Errorf("%#v: wrote %q", bad, b.String())
		}
	}
}

func TestSummary(t *testing.T) {
	got := summaryOf([]any{
		&api.ClusterPolicyReport{Summary: api.PolicyReportSummary{Pass: 1, Fail: 2}},
		api.OpenReport{Summary: api.PolicyReportSummary{Warn: 3, Error: 4, Skip: 5}},
		(*api.PolicyReport)(nil), "ignored",
	})
	if got != (api.PolicyReportSummary{Pass: 1, Fail: 2, Warn: 3, Error: 4, Skip: 5}) {
		t.Errorf("got %+v", got)
	}
}
