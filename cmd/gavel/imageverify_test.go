//go:build verifyimages

package main

import (
	"strings"
	"testing"
)

// TestApplyManifests: built with -tags verifyimages, gavel apply verifies
// signed manifests.
func TestApplyManifests(t *testing.T) {
	doc, stderr := applyManifests(t)
	if strings.Contains(stderr, "built without signature verification") {
		t.Errorf("stderr: %s", stderr)
	}
	if len(doc.Results) != 2 {
		t.Fatalf("results %+v", doc.Results)
	}
	want := []string{"pass: verified manifest signatures; manifest verification succeeded; verifiedCount 1; requiredCount 1; message singed by a valid signer: ",
		`fail: manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: failed to verify signature. diff found; {"items":[{"key":"spec.replicas","values":{"after":3,"before":2}}]}`}
	for i, r := range doc.Results {
		if got := r.Result + ": " + r.Message; got != want[i] {
			t.Errorf("result %d:\n%s\nwant\n%s", i, got, want[i])
		}
	}
}
