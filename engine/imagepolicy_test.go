package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

const (
	ivDigestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	ivDigestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func TestImageValidatingPolicySignatures(t *testing.T) {
	keyA, keyB := testPublicKey(t), testPublicKey(t)
	f := newIVFake()
	f.digests["ghcr.io/acme/app:v1"] = ivDigestA
	f.digests["ghcr.io/acme/other:v1"] = ivDigestB
	f.sign("ghcr.io/acme/app@"+ivDigestA, keyA)
	f.sign("ghcr.io/acme/other@"+ivDigestB, keyB)
	verify := func(config string) string {
		return `  validationConfigurations:
` + config + `
  matchImageReferences:
  - glob: ghcr.io/acme/*
  attestors:
` + keyAttestor("cosign", keyA) + `  validations:
  - expression: images.containers.map(i, verifyImageSignatures(i, [attestors.cosign])).all(n, n > 0)
    message: failed the image signature verification
`
	}
	tests := []struct {
		name, config string
		images       []string
		want         string
	}{
		{"signed by digest", "", []string{"ghcr.io/acme/app@" + ivDigestA}, "p p pass: success"},
		{"signed, tag needs a digest", "", []string{"ghcr.io/acme/app:v1"}, "p p fail: image ghcr.io/acme/app:v1 does not have a digest"},
		{"signed by tag, verifyDigest off", "    verifyDigest: false", []string{"ghcr.io/acme/app:v1"}, "p p pass: success"},
		{"signed by another key", "    verifyDigest: false", []string{"ghcr.io/acme/other:v1"}, "p p fail: failed the image signature verification"},
		{"image not selected", "", []string{"docker.io/nginx:latest"}, "p p pass: success"},
		{"one of two unsigned", "    verifyDigest: false", []string{"ghcr.io/acme/app:v1", "ghcr.io/acme/other:v1"}, "p p fail: failed the image signature verification"},
		{"unknown tag", "    verifyDigest: false", []string{"ghcr.io/acme/missing:v1"},
			"p evaluation error: failed to evaluate policy: failed to get imagedata: ghcr.io/acme/missing:v1: MANIFEST_UNKNOWN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compileIV(t, f, ivpol("p", verify(tt.config)))
			resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod(tt.images...)})
			if err != nil {
				t.Fatal(err)
			}
			if got := results(resp); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestImageValidatingPolicyCompileErrors(t *testing.T) {
	tests := []struct{ name, fields, want string }{
		{"bad key", "  attestors:\n  - name: a\n    cosign:\n      key:\n        data: nope\n  validations:\n  - expression: 'true'\n",
			"spec.attestors[0].cosign.key.data: Invalid value: \"\": no PEM public key found"},
		{"two kinds", "  attestors:\n  - name: a\n    cosign:\n      key:\n        kms: k\n    notary:\n      certs:\n        expression: 'x'\n  validations:\n  - expression: 'true'\n",
			"spec.attestors[0]: Invalid value: \"\": only one of cosign and notary may be set"},
		{"unknown function", "  validations:\n  - expression: verifyImageSignature('x', [])\n",
			"undeclared reference to 'verifyImageSignature'"},
		{"wrong arity", "  validations:\n  - expression: verifyImageSignatures('x') > 0\n",
			"found no matching overload for 'verifyImageSignatures'"},
		{"bad glob", "  matchImageReferences:\n  - glob: 'ghcr.io/[a'\n  validations:\n  - expression: 'true'\n",
			"spec.matchImageReferences[0].glob: Invalid value: \"ghcr.io/[a\": unclosed '['"},
		{"attestation without type", "  attestations:\n  - name: sbom\n    referrer: {type: ''}\n  validations:\n  - expression: 'true'\n",
			"spec.attestations[0].referrer.type: Required value"},
	}
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := eng.Compile(decode(ivpol("p", tt.fields)).Policies...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}
