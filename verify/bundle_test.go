package verify_test

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	sgsign "github.com/sigstore/sigstore-go/pkg/sign"

	"github.com/gavelpolicy/gavel/verify"
)

// caProvider issues the keypair's certificate from a test CA, as Fulcio
// does for keyless signing.
type caProvider struct {
	ca    *testCA
	email string
}

func (p caProvider) GetCertificate(_ context.Context, kp sgsign.Keypair, _ *sgsign.CertificateProviderOptions) ([]byte, error) {
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(30 * time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}, EmailAddresses: []string{p.email},
		ExtraExtensions: fulcioIssuer("https://issuer.test")}
	return x509.CreateCertificate(rand.Reader, tmpl, p.ca.cert, kp.GetPublicKey(), p.ca.key)
}

// bundleSign attaches to the image a Sigstore bundle (v0.3, as a
// referrer) signing its manifest digest, or, with a statement, a DSSE
// attestation; logs are the transparency logs the signature is entered
// in.
func bundleSign(t *testing.T, d name.Digest, kp sgsign.Keypair, provider sgsign.CertificateProvider, statement []byte, logs ...sgsign.Transparency) {
	t.Helper()
	var content sgsign.Content
	if statement == nil {
		desc, err := remote.Get(d)
		if err != nil {
			t.Fatal(err)
		}
		content = &sgsign.PlainData{Data: desc.Manifest}
	} else {
		content = &sgsign.DSSEData{Data: statement, PayloadType: "application/vnd.in-toto+json"}
	}
	pb, err := sgsign.Bundle(content, kp, sgsign.BundleOptions{CertificateProvider: provider, TransparencyLogs: logs})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := (&sgbundle.Bundle{Bundle: pb}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	mt, _ := sgbundle.MediaTypeString("0.3")
	if err := ociremote.WriteReferrer(d, mt, []v1.Layer{static.NewLayer(raw, types.MediaType(mt))}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestSigstoreBundles(t *testing.T) {
	reg := newRegistry(t)
	kp, err := sgsign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.GetPublicKeyPem()
	other, _ := sgsign.NewEphemeralKeypair(nil)
	otherPub, _ := other.GetPublicKeyPem()
	ca := newCA(t)

	signed, sd := reg.push(t, "app:bundle")
	bundleSign(t, sd, kp, nil, nil)
	unsigned, _ := reg.push(t, "app:none")
	keyless, kd := reg.push(t, "app:keyless")
	ephemeral, _ := sgsign.NewEphemeralKeypair(nil)
	bundleSign(t, kd, ephemeral, caProvider{ca, "dev@example.com"}, nil)
	attested, ad := reg.push(t, "app:attested")
	h, _ := v1.NewHash(ad.DigestStr())
	statement, _ := json.Marshal(map[string]any{"_type": "https://in-toto.io/Statement/v1", "predicateType": "https://slsa.dev/provenance/v1",
		"subject":   []any{map[string]any{"name": ad.Repository.Name(), "digest": map[string]any{h.Algorithm: h.Hex}}},
		"predicate": map[string]any{"buildDefinition": map[string]any{"buildType": "https://actions.github.io/buildtypes/workflow/v1"}}})
	bundleSign(t, ad, kp, nil, statement)

	keys := func(pem string) string {
		return "      type: SigstoreBundle\n      attestors:\n      - entries:\n        - keys:\n            publicKeys: |-\n" + indent(pem, "              ") + "\n"
	}
	keylessEntry := func(subject string) string {
		return "      type: SigstoreBundle\n      attestors:\n      - entries:\n        - keyless:\n            subject: " + subject + "\n            issuer: https://issuer.test\n" +
			"            rekor:\n              ignoreTlog: true\n            ctlog:\n              ignoreSCT: true\n            roots: |-\n" + indent(ca.pem, "              ") + "\n"
	}
	attestation := func(pem, buildType string) string {
		return "      type: SigstoreBundle\n      attestations:\n      - type: https://slsa.dev/provenance/v1\n        attestors:\n        - entries:\n          - keys:\n              publicKeys: |-\n" + indent(pem, "                ") +
			"\n        conditions:\n        - all:\n          - key: '{{ buildDefinition.buildType }}'\n            operator: Equals\n            value: " + buildType + "\n"
	}
	v := verify.New()
	tests := []struct{ name, entry, image, want string }{
		{"signed", keys(pub), signed, "pass: verified image signatures for " + signed},
		{"wrong key", keys(otherPub), signed, "fail: failed to verify image " + signed + ": .attestors[0].entries[0].keys: no matching signatures: "},
		{"unsigned", keys(pub), unsigned, "fail: failed to verify image " + unsigned + ": .attestors[0].entries[0].keys: "},
		{"keyless", keylessEntry("dev@example.com"), keyless, "pass: verified image signatures for " + keyless},
		{"keyless, other subject", keylessEntry("ops@example.com"), keyless, "fail: failed to verify image " + keyless + ": .attestors[0].entries[0].keyless: no matching signatures: "},
		{"attestation holds", attestation(pub, "https://actions.github.io/buildtypes/workflow/v1"), attested, "pass: verified image attestations for " + attested},
		{"attestation fails", attestation(pub, "other"), attested, "fail: image attestations verification failed, verifiedCount: 0, requiredCount: 1, error: .attestations[0].attestors[0].entries[0].keys: attestation checks failed"},
		{"attestation, wrong key", attestation(otherPub, "https://actions.github.io/buildtypes/workflow/v1"), attested, "fail: image attestations verification failed, verifiedCount: 0, requiredCount: 1, error: .attestations[0].attestors[0].entries[0].keys: no matching attestations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, v, policy("", tt.entry))
			_, got := run(t, set, pod(tt.image))
			if !strings.HasPrefix(got, tt.want) || strings.HasPrefix(tt.want, "pass") && got != tt.want {
				t.Errorf("got\n%s\nwant prefix\n%s", got, tt.want)
			}
		})
	}
}
