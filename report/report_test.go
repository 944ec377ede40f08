package report

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/loader"
)

// TestObjectRoundTrip: each of the four kinds converts to its Report and
// back to the same object.
func TestObjectRoundTrip(t *testing.T) {
	results := []api.PolicyReportResult{{Policy: "p", Rule: "r", Result: api.ResultFail}}
	labels := map[string]string{"a": "b"}
	for _, r := range []Report{
		{Format: WGPolicy, Name: "merged", Summary: api.PolicyReportSummary{Fail: 1}, Results: results},
		{Format: WGPolicy, Name: "pol", Namespace: "ns", Labels: labels, Results: results},
		{Format: OpenReports, Name: "merged", Results: results},
		{Format: OpenReports, Name: "pol", Namespace: "ns", Labels: labels, Summary: api.PolicyReportSummary{Pass: 2}},
	} {
		back := fromObjects([]any{r.Object()})
		if len(back) != 1 || !reflect.DeepEqual(back[0], r) {
			t.Errorf("%+v came back as %+v", r, back)
		}
	}
	kinds := map[string]bool{}
	for _, r := range []Report{{}, {Namespace: "n"}, {Format: OpenReports}, {Format: OpenReports, Namespace: "n"}} {
		switch o := r.Object().(type) {
		case *api.ClusterPolicyReport:
			kinds[o.APIVersion+" "+o.Kind] = true
		case *api.PolicyReport:
			kinds[o.APIVersion+" "+o.Kind] = true
		case *api.OpenClusterReport:
			kinds[o.APIVersion+" "+o.Kind] = true
		case *api.OpenReport:
			kinds[o.APIVersion+" "+o.Kind] = true
		}
	}
	if len(kinds) != 4 {
		t.Errorf("kinds %v", kinds)
	}
}

// TestZeroOptions: a zero Options builds reports stamped with the current
// time, in the wgpolicyk8s.io format.
func TestZeroOptions(t *testing.T) {
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	p := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: p
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      pattern:
        metadata:
          name: "?*"
`
	s := &loader.Set{}
	if err := s.Read(strings.NewReader(p), "p.yaml"); err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(s.Policies...)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := set.Scan(context.Background(), &engine.Request{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "a", "uid": "u"}}})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Unix()
	for _, build := range []func() []Report{
		func() []Report {
			r, err := Build(resp.Policies, Options{})
			if err != nil {
				t.Fatal(err)
			}
			return r
		},
		func() []Report {
			s := NewStore(Options{})
			if err := s.Update("u", resp.Policies, true); err != nil {
				t.Fatal(err)
			}
			return s.Reports()
		},
	} {
		reports := build()
		if len(reports) != 1 || len(reports[0].Results) != 1 {
			t.Fatalf("reports %+v", reports)
		}
		if _, ok := reports[0].Object().(*api.ClusterPolicyReport); !ok && reports[0].Namespace == "" {
			t.Errorf("format %v", reports[0].Format)
		}
		if ts := reports[0].Results[0].Timestamp.Seconds; ts < before || ts > time.Now().Unix() {
			t.Errorf("timestamp %d, not now", ts)
		}
	}
}
