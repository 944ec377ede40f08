package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApplyManifests: gavel apply verifies signed manifests (inline keys,
// no network), as the upstream CLI does.
func TestApplyManifests(t *testing.T) {
	doc, stderr := applyManifests(t)
	if strings.Contains(stderr, "not configured") {
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

// TestTestManifests: gavel test verifies signed manifests with inline
// keys, offline, as the upstream CLI's test command does.
func TestTestManifests(t *testing.T) {
	policy, resources := signedManifestFiles(t)
	dir := filepath.Dir(policy)
	test := `apiVersion: cli.kyverno.io/v1alpha1
kind: Test
metadata:
  name: signed-manifests
policies: [` + filepath.Base(policy) + `]
resources: [` + filepath.Base(resources) + `]
results:
- policy: signed-deployments
  rule: manifest
  kind: Deployment
  resources: [prod/web]
  result: pass
- policy: signed-deployments
  rule: manifest
  kind: Deployment
  resources: [test/web]
  result: fail
`
	if err := os.WriteFile(filepath.Join(dir, "kyverno-test.yaml"), []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run([]string{"test", "--strict", "--fail-only=false", dir}, nil, &out, &errOut)
	if code != 0 || !strings.HasSuffix(out.String(), "2 passed, 0 failed\n") {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
}
