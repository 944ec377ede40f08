package report

import (
	"encoding/json"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAppendEntryJSON compares whole entries with encoding/json: fields
// set and omitted, several resources, properties, and the resource
// selector left to encoding/json.
func TestAppendEntryJSON(t *testing.T) {
	full := api.PolicyReportResult{
		Source: "kyverno", Policy: "ns/p<1>", Rule: "r&", Category: "Pod Security", Severity: "high",
		Timestamp: metav1.Timestamp{Seconds: 1700000000, Nanos: 12}, Result: "fail", Scored: true,
		Resources: []api.ObjectReference{
			{Kind: "Pod", Namespace: "default", Name: "web-0", UID: "u", APIVersion: "v1"},
			{Kind: "Pod", ResourceVersion: "7", FieldPath: "spec"},
			{},
		},
		Message:    "validation error: \"quoted\"\n<b>",
		Properties: map[string]string{"z": "1", "a": "\u2028", "process": "background scan", "controls": `[{"id":"x"}]`},
	}
	for _, e := range []api.PolicyReportResult{
		full,
		{},
		{Source: "s", Policy: "p", Timestamp: metav1.Timestamp{Seconds: -1}},
		{Policy: "p", Resources: []api.ObjectReference{}, Properties: map[string]string{}},
	} {
		want, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendEntryJSON([]byte("prefix"), &e)
		if !ok || string(got) != "prefix"+string(want) {
			t.Fatalf("%+v:\n%s\nwant\nprefix%s", e, got, want)
		}
	}
	withSelector := full
	withSelector.ResourceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
	if got, ok := appendEntryJSON([]byte("x"), &withSelector); ok || string(got) != "x" {
		t.Fatalf("resource selector: %s, %v", got, ok)
	}
}
