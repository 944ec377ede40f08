package report

import (
	"encoding/json"
	"math/rand"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAppendJSONString compares the quoting with encoding/json on every
// byte, the runes it escapes and random strings of bytes and runes.
func TestAppendJSONString(t *testing.T) {
	var cases []string
	for c := 0; c < 256; c++ {
		cases = append(cases, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"b")
	}
	cases = append(cases, "", "plain", "é ü 日本", "\u2028\u2029", "<script>&amp;</script>", "\"quoted\" \\ back",
		"\xed\xa0\x80", "\xf4\x90\x80\x80", "abc\xffdef", "\U0001F600")
	r := rand.New(rand.NewSource(9))
	pieces := []string{"a", "\x00", "\x1f", "\"", "\\", "<", ">", "&", "\u2028", "é", "\xff", "\xc3", "\n", "\t", "日"}
	for i := 0; i < 2000; i++ {
		var sb strings.Builder
		for j := r.Intn(12); j >= 0; j-- {
			sb.WriteString(pieces[r.Intn(len(pieces))])
		}
		cases = append(cases, sb.String())
	}
	for _, s := range cases {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("%q: %s, want %s", s, got, want)
		}
	}
}

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
