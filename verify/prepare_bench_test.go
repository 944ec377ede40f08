package verify

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// benchCert issues a certificate of key by parent (self-signed when
// parent is nil) and returns its PEM.
func benchCert(b testing.TB, key *ecdsa.PrivateKey, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, ca bool) (*x509.Certificate, string) {
	b.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "bench"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: ca, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		EmailAddresses: []string{"dev@example.com"}}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		b.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		b.Fatal(err)
	}
	pem, err := cryptoutils.MarshalCertificateToPEM(cert)
	if err != nil {
		b.Fatal(err)
	}
	return cert, string(pem)
}

// BenchmarkAttestorOptions measures what the Verifier does with an
// attestor's key material on each call before any registry read: cosign's
// options from the policy's keys, certificates, chains, roots and log
// keys.
func BenchmarkAttestorOptions(b *testing.B) {
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		return k
	}
	rootKey, interKey, leafKey, logKey := newKey(), newKey(), newKey(), newKey()
	root, rootPEM := benchCert(b, rootKey, nil, nil, true)
	inter, interPEM := benchCert(b, interKey, root, rootKey, true)
	_, leafPEM := benchCert(b, leafKey, inter, interKey, false)
	pubPEM, err := cryptoutils.MarshalPublicKeyToPEM(&leafKey.PublicKey)
	if err != nil {
		b.Fatal(err)
	}
	logPEM, err := cryptoutils.MarshalPublicKeyToPEM(&logKey.PublicKey)
	if err != nil {
		b.Fatal(err)
	}
	chain := interPEM + rootPEM
	noLog := &api.Rekor{IgnoreTlog: true}
	noSCT := &api.CTLog{IgnoreSCT: true}
	cases := []struct {
		name     string
		attestor api.Attestor
	}{
		{"keys", api.Attestor{Keys: &api.StaticKeyAttestor{PublicKeys: string(pubPEM)}}},
		{"keys+rekor+ctlog", api.Attestor{Keys: &api.StaticKeyAttestor{PublicKeys: string(pubPEM), Rekor: &api.Rekor{PubKey: string(logPEM)}, CTLog: &api.CTLog{PubKey: string(logPEM)}}}},
		{"certificates-chain", api.Attestor{Certificates: &api.CertificateAttestor{Certificate: leafPEM, CertificateChain: chain, Rekor: noLog, CTLog: noSCT}}},
		{"keyless-roots", api.Attestor{Keyless: &api.KeylessAttestor{Subject: "dev@example.com", Issuer: "https://issuer.test", Roots: chain, Rekor: noLog, CTLog: noSCT}}},
		{"keyless-roots+tsa", api.Attestor{Keyless: &api.KeylessAttestor{Subject: "dev@example.com", Issuer: "https://issuer.test", Roots: chain, Rekor: noLog, CTLog: &api.CTLog{IgnoreSCT: true, TSACertChain: leafPEM + chain}}}},
	}
	v := New()
	ctx := context.Background()
	for _, c := range cases {
		req := engine.ImageVerifyRequest{Type: "Cosign", Image: "registry.test/app@sha256:0000000000000000000000000000000000000000000000000000000000000000", Attestor: c.attestor}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, err := v.checkOpts(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
