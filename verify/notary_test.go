package verify_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	ggcrmutate "github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/notaryproject/notation-go"
	notationreg "github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/signer"
	orasremote "oras.land/oras-go/v2/registry/remote"

	"github.com/gavelpolicy/gavel/verify"
)

// notarySign signs the image with a new leaf of the CA, as notation sign
// does (JWS envelope, OCI referrer).
func notarySign(t *testing.T, ca *testCA, d name.Digest) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "gavel test signer", Organization: []string{"gavel"}, Country: []string{"US"}},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(30 * time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	s, err := signer.NewGenericSigner(key, []*x509.Certificate{leaf, ca.cert})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := orasremote.NewRepository(d.Repository.Name())
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	if _, err := notation.Sign(context.Background(), s, notationreg.NewRepository(repo), notation.SignOptions{
		ArtifactReference: d.String(),
		SignerSignOptions: notation.SignerSignOptions{SignatureMediaType: "application/jose+json"},
	}); err != nil {
		t.Fatal(err)
	}
}

func TestNotary(t *testing.T) {
	reg := newRegistry(t)
	ca, other := newCA(t), newCA(t)
	img, d := reg.push(t, "app:notary")
	notarySign(t, ca, d)
	unsigned, _ := reg.push(t, "app:unsigned")
	entry := func(roots string) string {
		return "      type: Notary\n      attestors:\n      - entries:\n        - certificates:\n            certChain: |-\n" + indent(roots, "              ") + "\n"
	}
	v := verify.New()
	tests := []struct{ name, entry, image, want, cause string }{
		{"signed", entry(ca.pem), img, "pass: verified image signatures for " + img, ""},
		{"other root", entry(other.pem), img, "fail: failed to verify image " + img + ": .attestors[0].entries[0].certificates: ", "does not contain any trusted certificate"},
		{"unsigned", entry(ca.pem), unsigned, "fail: failed to verify image " + unsigned + ": .attestors[0].entries[0].certificates: ", "no signature is associated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, v, policy("", tt.entry))
			_, got := run(t, set, pod(tt.image))
			if !strings.HasPrefix(got, tt.want) || !strings.Contains(got, tt.cause) {
				t.Errorf("got\n%s\nwant prefix\n%s", got, tt.want)
			}
		})
	}
}

// pushReferrer attaches to the image an artifact of the type whose single
// layer is the JSON document, as `notation`'s users attach SBOMs (oras
// attach); it returns the artifact's digest reference.
func pushReferrer(t *testing.T, d name.Digest, artifactType string, doc []byte) name.Digest {
	t.Helper()
	subject, err := remote.Head(d)
	if err != nil {
		t.Fatal(err)
	}
	layer := static.NewLayer(doc, types.MediaType(artifactType))
	img, err := ggcrmutate.AppendLayers(ggcrmutate.ConfigMediaType(empty.Image, types.MediaType(artifactType)), layer)
	if err != nil {
		t.Fatal(err)
	}
	withSubject := ggcrmutate.Subject(img, *subject).(v1.Image)
	dig, err := withSubject.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ad := d.Context().Digest(dig.String())
	if err := remote.Write(ad, withSubject); err != nil {
		t.Fatal(err)
	}
	return ad
}

func TestNotaryAttestations(t *testing.T) {
	reg := newRegistry(t)
	ca, other := newCA(t), newCA(t)
	const sbom = "application/vnd.cyclonedx+json"
	img, d := reg.push(t, "app:sbom")
	notarySign(t, ca, d)
	notarySign(t, ca, pushReferrer(t, d, sbom, []byte(`{"bomFormat":"CycloneDX","specVersion":"1.4","components":[{"name":"log4j","version":"2.17.1"}]}`)))
	unsigned, ud := reg.push(t, "app:unsigned-sbom")
	notarySign(t, ca, ud)
	pushReferrer(t, ud, sbom, []byte(`{"bomFormat":"CycloneDX"}`))
	entry := func(roots, value string) string {
		return "      type: Notary\n      attestations:\n      - type: " + sbom + "\n        attestors:\n        - entries:\n          - certificates:\n              certChain: |-\n" + indent(roots, "                ") +
			"\n        conditions:\n        - all:\n          - key: '{{ bomFormat }}'\n            operator: Equals\n            value: " + value + "\n"
	}
	v := verify.New()
	tests := []struct{ name, entry, image, want, cause string }{
		{"signed, conditions hold", entry(ca.pem, "CycloneDX"), img, "pass: verified image attestations for " + img, ""},
		{"signed, conditions fail", entry(ca.pem, "SPDX"), img, "fail: image attestations verification failed, verifiedCount: 0, requiredCount: 1, error: .attestations[0].attestors[0].entries[0].certificates: attestation checks failed for " + img, ""},
		{"another root", entry(other.pem, "CycloneDX"), img, "fail: image attestations verification failed, verifiedCount: 0, requiredCount: 1, error: .attestations[0].attestors[0].entries[0].certificates: no matching attestations: ", "does not contain any trusted certificate"},
		{"unsigned attestation", entry(ca.pem, "CycloneDX"), unsigned, "fail: image attestations verification failed, verifiedCount: 0, requiredCount: 1, error: .attestations[0].attestors[0].entries[0].certificates: no matching attestations: ", "no signature is associated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, v, policy("", tt.entry))
			_, got := run(t, set, pod(tt.image))
			if !strings.HasPrefix(got, tt.want) || !strings.Contains(got, tt.cause) {
				t.Errorf("got\n%s\nwant prefix\n%s\n(and %q)", got, tt.want, tt.cause)
			}
		})
	}
}
