//go:build !verifyimages

package main

import "testing"

// TestApplyManifestsNotConfigured: the default build verifies no
// signatures: validate.manifests rules are "not configured" errors.
func TestApplyManifestsNotConfigured(t *testing.T) {
	doc := applyManifests(t)
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
