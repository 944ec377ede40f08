package verify_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/cosign/v2/pkg/oci/static"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/verify"
)

// ivpolicy is an ImageValidatingPolicy on Pods with the given attestors,
// attestations (YAML at the indentation of spec's fields) and validations.
func ivpolicy(name, attestors, attestations string, validations ...string) string {
	s := `apiVersion: policies.kyverno.io/v1
kind: ImageValidatingPolicy
metadata:
  name: ` + name + `
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  attestors:
` + attestors + attestations + "  validations:\n"
	for _, v := range validations {
		s += "  - expression: >-\n      " + v + "\n    message: failed\n"
	}
	return s
}

// ivKey is a cosign key attestor without a transparency log.
func ivKey(name, pem string) string {
	return "  - name: " + name + "\n    cosign:\n      ctlog: {insecureIgnoreTlog: true, insecureIgnoreSCT: true}\n      key:\n        data: |\n" + indent(pem, "          ") + "\n"
}

// ivValidate validates the pod with the set and renders its results as
// "status: message".
func ivValidate(t *testing.T, set *engine.PolicySet, obj map[string]any) string {
	t.Helper()
	resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range resp.Policies {
		for _, r := range p.Rules {
			out = append(out, fmt.Sprintf("%s: %s", r.Status, r.Message))
		}
	}
	return strings.Join(out, "\n")
}

// TestImageValidatingPolicyCosign verifies images signed and attested at
// test time in an in-process registry, through the engine: keys, keyless
// identities with the test's roots, in-toto attestations and their
// payloads, Sigstore trusted roots per attestor.
func TestImageValidatingPolicyCosign(t *testing.T) {
	reg := newRegistry(t)
	key, other := newKey(t), newKey(t)
	_, d := reg.push(t, "app:v1")
	sign(t, d, key.signer, nil)
	attest(t, d, key.signer, "https://slsa.dev/provenance/v1", map[string]any{"builder": map[string]any{"id": "https://github.com/acme"}})
	_, unsigned := reg.push(t, "app:unsigned")
	ca := newCA(t)
	_, kd := reg.push(t, "app:keyless")
	leafSigner, leaf := ca.issue(t, "ci@acme.io", "https://issuer.acme.io")
	sign(t, kd, leafSigner, nil, static.WithCertChain(leaf, []byte(ca.pem)))
	const sigs = "images.containers.all(i, verifyImageSignatures(i, [attestors.a]) > 0)"
	keyless := func(issuer, subject string) string {
		return "  - name: a\n    cosign:\n      ctlog: {insecureIgnoreTlog: true, insecureIgnoreSCT: true}\n      keyless:\n        roots: |\n" + indent(ca.pem, "          ") +
			"\n        identities:\n        - {issuer: 'https://accounts.example', subject: nobody}\n        - {issuer: '" + issuer + "', subject: '" + subject + "'}\n"
	}
	prov := "  attestations:\n  - name: prov\n    intoto: {type: 'https://slsa.dev/provenance/v1'}\n"
	v := verify.New()
	tests := []struct {
		name, policy string
		image        string
		want         string
	}{
		{"key", ivpolicy("p", ivKey("a", key.pem), "", sigs), d.String(), "pass: success"},
		{"another key", ivpolicy("p", ivKey("a", other.pem), "", sigs), d.String(), "fail: failed"},
		{"unsigned", ivpolicy("p", ivKey("a", key.pem), "", sigs), unsigned.String(), "fail: failed"},
		{"two attestors, one signed", ivpolicy("p", ivKey("a", key.pem)+ivKey("b", other.pem), "",
			"images.containers.all(i, verifyImageSignatures(i, [attestors.a, attestors.b]) == 1)"), d.String(), "pass: success"},
		{"attestation and payload", ivpolicy("p", ivKey("a", key.pem), prov,
			"images.containers.all(i, verifyAttestationSignatures(i, attestations.prov, [attestors.a]) > 0)",
			"images.containers.all(i, extractPayload(i, attestations.prov).predicate.builder.id == 'https://github.com/acme')"), d.String(), "pass: success"},
		{"attestation by another key", ivpolicy("p", ivKey("a", other.pem), prov,
			"images.containers.all(i, verifyAttestationSignatures(i, attestations.prov, [attestors.a]) > 0)"), d.String(), "fail: failed"},
		{"keyless, second identity", ivpolicy("p", keyless("https://issuer.acme.io", "ci@acme.io"), "", sigs), kd.String(), "pass: success"},
		{"keyless, other subject", ivpolicy("p", keyless("https://issuer.acme.io", "eve@acme.io"), "", sigs), kd.String(), "fail: failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, v, tt.policy)
			if got := ivValidate(t, set, pod(tt.image)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestImageValidatingPolicyNotary verifies Notary signatures and an SBOM
// referrer signed at test time, and reads the SBOM with extractPayload.
func TestImageValidatingPolicyNotary(t *testing.T) {
	reg := newRegistry(t)
	ca, other := newCA(t), newCA(t)
	const sbom = "application/vnd.cyclonedx+json"
	_, d := reg.push(t, "app:notary")
	notarySign(t, ca, d)
	notarySign(t, ca, pushReferrer(t, d, sbom, []byte(`{"bomFormat":"CycloneDX","components":[{"name":"log4j","version":"2.17.1"}]}`)))
	_, ud := reg.push(t, "app:unsigned")
	notary := func(roots, tsa string) string {
		s := "  - name: a\n    notary:\n      certs:\n        value: |\n" + indent(roots, "          ") + "\n"
		if tsa != "" {
			s += "      tsaCerts:\n        value: |\n" + indent(tsa, "          ") + "\n"
		}
		return s
	}
	att := "  attestations:\n  - name: sbom\n    referrer: {type: " + sbom + "}\n"
	const sigs = "images.containers.all(i, verifyImageSignatures(i, [attestors.a]) > 0)"
	v := verify.New()
	tests := []struct {
		name, policy string
		image        name.Digest
		want         string
	}{
		{"signed", ivpolicy("p", notary(ca.pem, ""), "", sigs), d, "pass: success"},
		// with TSA certificates, notation requires a timestamp, as upstream
		{"signed without a timestamp, TSA certificates given", ivpolicy("p", notary(ca.pem, other.pem), "", sigs), d, "fail: failed"},
		{"another root", ivpolicy("p", notary(other.pem, ""), "", sigs), d, "fail: failed"},
		{"unsigned", ivpolicy("p", notary(ca.pem, ""), "", sigs), ud, "fail: failed"},
		{"SBOM", ivpolicy("p", notary(ca.pem, ""), att,
			"images.containers.all(i, verifyAttestationSignatures(i, attestations.sbom, [attestors.a]) > 0)",
			"images.containers.all(i, extractPayload(i, attestations.sbom).components.exists(c, c.name == 'log4j'))"), d, "pass: success"},
		{"SBOM of another root", ivpolicy("p", notary(other.pem, ""), att,
			"images.containers.all(i, verifyAttestationSignatures(i, attestations.sbom, [attestors.a]) > 0)"), d, "fail: failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, v, tt.policy)
			if got := ivValidate(t, set, pod(tt.image.String())); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestImageValidatingPolicyDigests pins digests at Mutate with the
// registry's answers, then validates the pinned Pod.
func TestImageValidatingPolicyDigests(t *testing.T) {
	reg := newRegistry(t)
	key := newKey(t)
	tag, d := reg.push(t, "app:v2")
	sign(t, d, key.signer, nil)
	v := verify.New()
	set := compile(t, v, ivpolicy("p", ivKey("a", key.pem), "", "images.containers.all(i, verifyImageSignatures(i, [attestors.a]) > 0)"))
	obj := pod(tag)
	resp, err := set.Mutate(context.Background(), &engine.Request{Operation: api.Create, Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	pinned := resp.Resource["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"]
	if want := tag + "@" + d.DigestStr(); pinned != want {
		t.Fatalf("pinned %v, want %s", pinned, want)
	}
	if got := ivValidate(t, set, obj); got != "fail: image "+tag+" does not have a digest" {
		t.Errorf("before the pin: %s", got)
	}
	if got := ivValidate(t, set, resp.Resource); got != "pass: success" {
		t.Errorf("after the pin: %s", got)
	}
}

// TestVerifyImagePolicyRequests asks the Verifier directly: an attestor's
// own trusted root (keyless without roots), the TSA store of a Notary
// attestor, and the fields gavel's verifier refuses (with
// engine.ErrNotConfigured).
func TestVerifyImagePolicyRequests(t *testing.T) {
	reg := newRegistry(t)
	ca, otherCA := newCA(t), newCA(t)
	log := newLog(t)
	signer, leaf := ca.issue(t, "dev@example.com", "https://issuer.test")
	_, d := reg.push(t, "app:keyless")
	sign(t, d, signer, nil, static.WithCertChain(leaf, []byte(ca.pem)))
	_, nd := reg.push(t, "app:notary")
	notarySign(t, ca, nd)
	keyless := func(root []byte) policiesv1alpha1.Attestor {
		a := attestorJSON(t, `{"name":"a","cosign":{"keyless":{"identities":[{"issuer":"https://issuer.test","subject":"dev@example.com"}]},
			"ctlog":{"insecureIgnoreTlog":true,"insecureIgnoreSCT":true}}}`)
		if root != nil {
			raw, _ := json.Marshal(string(root))
			a = attestorJSON(t, `{"name":"a","cosign":{"keyless":{"identities":[{"issuer":"https://issuer.test","subject":"dev@example.com"}]},
				"ctlog":{"insecureIgnoreTlog":true,"insecureIgnoreSCT":true},"trustedRoot":{"value":`+string(raw)+`}}}`)
		}
		return a
	}
	key := newKey(t)
	keyPEM, _ := json.Marshal(key.pem)
	keyAttestor := func(extra string) policiesv1alpha1.Attestor {
		return attestorJSON(t, `{"name":"k","cosign":{"key":{"data":`+string(keyPEM)+`},`+extra+`}}`)
	}
	caPEM, _ := json.Marshal(ca.pem)
	otherPEM, _ := json.Marshal(otherCA.pem)
	notary := attestorJSON(t, `{"name":"n","notary":{"certs":{"value":`+string(caPEM)+`},"tsaCerts":{"value":`+string(otherPEM)+`}}}`)
	v := verify.New()
	tests := []struct {
		name     string
		image    name.Digest
		attestor policiesv1alpha1.Attestor
		// want is "" for verified, else a part of the error
		want          string
		notConfigured bool
	}{
		{"attestor's trusted root", d, keyless(trustedRootJSON(t, ca, log)), "", false},
		{"another trusted root", d, keyless(trustedRootJSON(t, otherCA, log)), "leaf certificate verification failed", false},
		{"no trusted root", d, keyless(nil), "needs Sigstore's trusted root", true},
		{"malformed trusted root", d, keyless([]byte("{")), "parsing inline trustedRoot JSON", false},
		{"notary: a timestamp is required with TSA certificates", nd, notary, "no timestamp countersignature", false},
		{"tagPrefix", d, keyAttestor(`"source":{"tagPrefix":"v"}`), "tagPrefix is not supported", true},
		{"tuf root path", d, keyAttestor(`"tuf":{"root":{"path":"/etc/root.json"}}`), "root.path is not supported", true},
		{"hash algorithm", d, attestorJSON(t, `{"name":"k","cosign":{"key":{"data":`+string(keyPEM)+`,"hashAlgorithm":"sha384"}}}`), "hashAlgorithm sha384 is not supported", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.VerifyImagePolicySignature(context.Background(), engine.ImagePolicyRequest{Image: tt.image.String(), Attestor: tt.attestor})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("not verified: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error with %q", err, tt.want)
			case err != nil && errors.Is(err, engine.ErrNotConfigured) != tt.notConfigured:
				t.Errorf("%v: ErrNotConfigured %v, want %v", err, errors.Is(err, engine.ErrNotConfigured), tt.notConfigured)
			}
		})
	}
}

// attestorJSON decodes an attestor of an ImageValidatingPolicy.
func attestorJSON(t testing.TB, s string) policiesv1alpha1.Attestor {
	t.Helper()
	var a policiesv1alpha1.Attestor
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		t.Fatal(err)
	}
	return a
}
