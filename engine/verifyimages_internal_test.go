package engine

import (
	"encoding/json"
	"testing"
)

// TestAnnotationJSON: the annotation's text is encoding/json's, written
// directly or not.
func TestAnnotationJSON(t *testing.T) {
	for _, data := range []map[string]string{
		{},
		{"ghcr.io/a/b@sha256:00": "pass"},
		{"z.io/x:1": "fail", "a.io/y@sha256:11": "skip", "m.io/p:2": "pass"},
		{`odd"key`: "pass", "b<c>&d": "fail", "é": "skip", "tab\t": "pass"},
	} {
		want, _ := json.Marshal(data)
		if got := annotationJSON(data); got != string(want) {
			t.Errorf("annotationJSON(%v) = %s, want %s", data, got, want)
		}
	}
}
