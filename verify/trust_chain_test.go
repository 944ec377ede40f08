package verify_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"

	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/gavelpolicy/gavel/verify"
)

// intermediate returns a CA that the CA certifies.
func (ca *testCA) intermediate(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "gavel test intermediate"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pem, _ := cryptoutils.MarshalCertificateToPEM(cert)
	return &testCA{cert: cert, key: key, pem: string(pem)}
}

// TestTrustedRootCarriedIntermediates: an attestor whose roots are its
// own and whose log key comes from the trusted root verifies signatures
// and attestations whose certificates chain to those roots through
// intermediates the signatures carry (as cosign's legacy verification
// takes them), and no others.
func TestTrustedRootCarriedIntermediates(t *testing.T) {
	reg := newRegistry(t)
	ca, otherCA, log := newCA(t), newCA(t), newLog(t)
	inter := ca.intermediate(t)
	rekor := newRekor(t, log)
	signer, leaf := inter.issue(t, "dev@example.com", "https://issuer.test")
	chain := []byte(inter.pem + ca.pem)
	signed, sd := reg.push(t, "app:signed")
	signOnline(t, sd, signer, string(leaf), rekor, static.WithCertChain(leaf, chain))
	const review = "https://example.com/CodeReview/v1"
	attested, ad := reg.push(t, "app:attested")
	attestOnline(t, ad, signer, string(leaf), rekor, true, review, map[string]any{"branch": "main"}, static.WithCertChain(leaf, chain))

	url := "\n            rekor:\n              url: " + rekor.srv.URL + "\n            ctlog:\n              ignoreSCT: true\n"
	keyless := func(roots string) string {
		return "      attestors:\n      - entries:\n        - keyless:\n            subject: dev@example.com\n            issuer: https://issuer.test\n            roots: |-\n" + indent(roots, "              ") + url
	}
	certificates := func(roots string) string {
		return "      attestors:\n      - entries:\n        - certificates:\n            certChain: |-\n" + indent(roots, "              ") + url
	}
	attestation := "      attestations:\n      - predicateType: " + review + "\n        attestors:\n        - entries:\n          - keyless:\n              subject: dev@example.com\n              issuer: https://issuer.test\n              roots: |-\n" +
		indent(ca.pem, "                ") + "\n              rekor:\n                url: " + rekor.srv.URL + "\n              ctlog:\n                ignoreSCT: true\n"
	v := verify.New(verify.WithTrustedRoot(loadTrustedRoot(t, trustedRootJSON(t, otherCA, log))))
	prefix := "fail: failed to verify image " + signed + ": .attestors[0].entries[0]."
	tests := []struct{ name, entry, image, want string }{
		{"keyless, root only", keyless(ca.pem), signed, "pass: verified image signatures for " + signed},
		{"keyless, root and intermediate", keyless(inter.pem + ca.pem), signed, "pass: verified image signatures for " + signed},
		{"keyless, another root", keyless(otherCA.pem), signed, prefix + "keyless: no matching signatures: leaf certificate verification failed"},
		{"certificates, root only", certificates(ca.pem), signed, "pass: verified image signatures for " + signed},
		{"certificates, another root", certificates(otherCA.pem), signed, prefix + "certificates: no matching signatures: leaf certificate verification failed"},
		{"attestation, root only", attestation, attested, "pass: verified image attestations for " + attested},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, v, policy("", tt.entry))
			if _, got := run(t, set, pod(tt.image)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
