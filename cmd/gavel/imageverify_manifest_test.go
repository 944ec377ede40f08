package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// signedManifestFiles writes a policy with a validate.manifests rule and
// two Deployments signed as kubectl sigstore sign signs them (keys made by
// the test, the signature by the standard library: cmd/gavel's default
// build links no signing stack), the second changed after signing.
func signedManifestFiles(t *testing.T) (policy, resources string) {
	t.Helper()
	const manifest = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n"
	var blob bytes.Buffer
	zw := gzip.NewWriter(&blob)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: "web.yaml", Mode: 0o644, Size: int64(len(manifest)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte(manifest))
	tw.Close()
	zw.Close()
	var message bytes.Buffer
	mz := gzip.NewWriter(&message)
	mz.Write(blob.Bytes())
	mz.Close()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(blob.Bytes())
	sig, err := ecdsa.SignASN1(rand.Reader, key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	pub := strings.TrimSpace(string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))
	dir := t.TempDir()
	policy = filepath.Join(dir, "policy.yaml")
	os.WriteFile(policy, []byte(`apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: signed-deployments
spec:
  rules:
  - name: manifest
    match:
      any:
      - resources:
          kinds: [Deployment]
    validate:
      manifests:
        attestors:
        - entries:
          - keys:
              publicKeys: |-
                `+strings.ReplaceAll(pub, "\n", "\n                ")+"\n"), 0o644)
	annotations := "  annotations:\n    cosign.sigstore.dev/message: " + base64.StdEncoding.EncodeToString(message.Bytes()) +
		"\n    cosign.sigstore.dev/signature: " + base64.StdEncoding.EncodeToString(sig) + "\n"
	resources = filepath.Join(dir, "resources.yaml")
	os.WriteFile(resources, []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: prod\n"+annotations+"spec:\n  replicas: 2\n---\n"+
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: test\n"+annotations+"spec:\n  replicas: 3\n"), 0o644)
	return policy, resources
}

func applyManifests(t *testing.T) (applyDocument, string) {
	t.Helper()
	policy, resources := signedManifestFiles(t)
	var out, errOut bytes.Buffer
	run([]string{"apply", policy, "--resource", resources, "--output-format", "json"}, nil, &out, &errOut)
	var doc applyDocument
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("json output: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	return doc, errOut.String()
}
