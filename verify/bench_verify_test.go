package verify_test

import (
	"context"
	"testing"

	"github.com/sigstore/cosign/v2/pkg/cosign/bundle"
	"github.com/sigstore/cosign/v2/pkg/oci/static"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/verify"
)

// BenchmarkVerifySignature measures one call of Verifier.VerifySignature
// (the engine's cache is not involved) per kind of attestor, against an
// in-process registry: the attestor's key material, the signature
// manifest and payload, the cryptographic checks. The attestors' PEM
// texts are what a policy gives; what the Verifier does with them per
// call (parse, check self-signatures, build pools) is what differs
// between the cases.
func BenchmarkVerifySignature(b *testing.B) {
	reg := newRegistry(b)
	key, log := newKey(b), newLog(b)
	ca := newCA(b)
	inter := ca.intermediate(b)
	signer, leaf := inter.issue(b, "dev@example.com", "https://issuer.test")
	chain := inter.pem + ca.pem

	_, keyed := reg.push(b, "app:keys")
	sign(b, keyed, key.signer, nil)
	_, logged := reg.push(b, "app:logged")
	p, b64sig := signPayload(b, logged, key.signer)
	rp, set := logEntry(b, log, p, b64sig, key.pem, 1)
	sig, err := static.NewSignature(p, b64sig, static.WithBundle(&bundle.RekorBundle{SignedEntryTimestamp: set, Payload: rp}))
	if err != nil {
		b.Fatal(err)
	}
	attach(b, logged, sig, false)
	_, chained := reg.push(b, "app:chained")
	sign(b, chained, signer, nil, static.WithCertChain(leaf, []byte(chain)))

	noLog := &api.Rekor{IgnoreTlog: true}
	noSCT := &api.CTLog{IgnoreSCT: true}
	cases := []struct {
		name     string
		image    string
		attestor api.Attestor
	}{
		{"keys", keyed.String(), api.Attestor{Keys: &api.StaticKeyAttestor{PublicKeys: key.pem}}},
		{"keys+rekor-bundle", logged.String(), api.Attestor{Keys: &api.StaticKeyAttestor{PublicKeys: key.pem, Rekor: &api.Rekor{PubKey: log.pem}}}},
		{"certificates-chain", chained.String(), api.Attestor{Certificates: &api.CertificateAttestor{Certificate: string(leaf), CertificateChain: chain, Rekor: noLog, CTLog: noSCT}}},
		{"certchain-only", chained.String(), api.Attestor{Certificates: &api.CertificateAttestor{CertificateChain: chain, Rekor: noLog, CTLog: noSCT}}},
		{"keyless-roots", chained.String(), api.Attestor{Keyless: &api.KeylessAttestor{Subject: "dev@example.com", Issuer: "https://issuer.test", Roots: chain, Rekor: noLog, CTLog: noSCT}}},
	}
	v := verify.New()
	ctx := context.Background()
	for _, c := range cases {
		req := engine.ImageVerifyRequest{Type: "Cosign", Image: c.image, Attestor: c.attestor}
		if err := v.VerifySignature(ctx, req); err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := v.VerifySignature(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
