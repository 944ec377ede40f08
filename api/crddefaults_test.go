package api_test

import (
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
)

// A policy read from a cluster carries every field upstream's CRD schema
// defaults (admission, background, emitWarning, validationFailureAction,
// skipBackgroundRequests, allowExistingViolations, cel.generate, apiCall
// method, signatureAlgorithm on attestors and keys, mutateDigest,
// required, useCache, verifyDigest): strict decoding accepts them.
func TestDecodeWithCRDDefaults(t *testing.T) {
	src := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: p}
spec:
  admission: true
  background: true
  emitWarning: false
  validationFailureAction: Audit
  rules:
  - name: r
    skipBackgroundRequests: true
    match: {any: [{resources: {kinds: [Pod]}}]}
    context:
    - name: c
      apiCall: {method: GET, urlPath: /api/v1/namespaces}
    validate:
      allowExistingViolations: true
      cel:
        generate: false
        expressions: [{expression: "true"}]
  - name: m
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      manifests:
        attestors:
        - entries:
          - signatureAlgorithm: sha256
            keys: {publicKeys: "x", signatureAlgorithm: sha256}
  - name: v
    match: {any: [{resources: {kinds: [Pod]}}]}
    verifyImages:
    - imageReferences: ["*"]
      mutateDigest: true
      required: true
      useCache: true
      verifyDigest: true
      attestors:
      - entries:
        - signatureAlgorithm: sha256
          keys: {publicKeys: "x", signatureAlgorithm: sha256}
      attestations:
      - predicateType: x
        attestors:
        - entries:
          - signatureAlgorithm: sha256
            keys: {publicKeys: "x", signatureAlgorithm: sha256}
`
	docs, err := api.ReadDocuments(strings.NewReader(src), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.DecodePolicy(docs[0]); err != nil {
		t.Fatal(err)
	}
}
