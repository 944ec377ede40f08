//go:build !verifyimages

package main

import (
	"strings"
	"testing"
)

// TestApplyManifestsNotConfigured: the default build verifies no
// signatures: validate.manifests rules are "not configured" errors, and
// apply says how to build one that does.
func TestApplyManifestsNotConfigured(t *testing.T) {
	doc, stderr := applyManifests(t)
	const note = "gavel apply: note: this gavel is built without signature verification: verifyImages and validate.manifests rules and ImageValidatingPolicies' image functions give errors; build it with -tags verifyimages\n"
	if !strings.HasPrefix(stderr, note) {
		t.Errorf("stderr %q, want %q", stderr, note)
	}
	const want = "error occurred during manifest verification: no manifest verifier (an ImageVerifier that implements engine.ManifestVerifier): not configured"
	if len(doc.Results) != 2 || doc.Summary["error"] != 2 {
		t.Fatalf("summary %v results %+v", doc.Summary, doc.Results)
	}
	for _, r := range doc.Results {
		if r.Result != "error" || r.Message != want {
			t.Errorf("result %+v", r)
		}
	}
}
