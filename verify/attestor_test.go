package verify

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"strings"
	"sync"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// TestPreparedOnce: equal attestors share one preparation, however many
// verifications and goroutines use them; each distinct one is prepared
// once; a malformed one gives its parser's error every time.
func TestPreparedOnce(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := cryptoutils.MarshalPublicKeyToPEM(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	_, rootPEM := benchCert(t, key, nil, nil, true)
	noLog, noSCT := &api.Rekor{IgnoreTlog: true}, &api.CTLog{IgnoreSCT: true}
	attestors := []api.Attestor{
		{Keys: &api.StaticKeyAttestor{PublicKeys: string(pub)}},
		{Keys: &api.StaticKeyAttestor{PublicKeys: string(pub), SignatureAlgorithm: "sha512"}},
		{Certificates: &api.CertificateAttestor{CertificateChain: rootPEM, Rekor: noLog, CTLog: noSCT}},
		{Keyless: &api.KeylessAttestor{Roots: rootPEM, Subject: "a@example.com", Issuer: "https://issuer.test", Rekor: noLog, CTLog: noSCT}},
	}
	v := New()
	first := make([]*attestor, len(attestors))
	for i, a := range attestors {
		first[i] = v.prepared(a)
		if first[i].err != nil {
			t.Fatalf("attestor %d: %v", i, first[i].err)
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				for i, a := range attestors {
					// a copy of the attestor: equal by value, not by address
					c := a
					if c.Keys != nil {
						k := *c.Keys
						c.Keys = &k
					}
					if p := v.prepared(c); p != first[i] {
						t.Errorf("attestor %d prepared again", i)
					}
					req := engine.ImageVerifyRequest{Image: "registry.test/app@sha256:" + strings.Repeat("0", 64), Attestor: c}
					if _, co, _, err := v.checkOpts(context.Background(), req); err != nil || (co.SigVerifier == nil && co.RootCerts == nil) {
						t.Errorf("attestor %d: %v", i, err)
					}
				}
			}
		})
	}
	wg.Wait()
	if n := v.attestors.Len(); n != len(attestors) {
		t.Errorf("%d prepared attestors, want %d", n, len(attestors))
	}
	bad := []struct {
		attestor api.Attestor
		want     string
	}{
		{api.Attestor{Keys: &api.StaticKeyAttestor{PublicKeys: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"}}, "failed to load public key: "},
		{api.Attestor{Certificates: &api.CertificateAttestor{CertificateChain: "not PEM", CTLog: noSCT}}, "failed to load certificate chain: "},
		{api.Attestor{Keyless: &api.KeylessAttestor{Roots: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----", Rekor: noLog, CTLog: noSCT}}, "failed to load keyless roots: "},
		{api.Attestor{Keys: &api.StaticKeyAttestor{PublicKeys: string(pub), Rekor: &api.Rekor{PubKey: "nope"}}}, "failed to load rekor public key: "},
		{api.Attestor{Keys: &api.StaticKeyAttestor{PublicKeys: string(pub), Rekor: &api.Rekor{PubKey: string(pub), URL: "ftp://log"}}}, `invalid rekor.url "ftp://log"`},
		{api.Attestor{Certificates: &api.CertificateAttestor{CertificateChain: rootPEM}}, "checking certificate transparency needs ctlog.pubkey"},
	}
	for _, b := range bad {
		for range 2 {
			req := engine.ImageVerifyRequest{Image: "registry.test/app@sha256:" + strings.Repeat("0", 64), Attestor: b.attestor}
			_, _, _, err := v.checkOpts(context.Background(), req)
			if err == nil || !strings.HasPrefix(err.Error(), b.want) {
				t.Errorf("got %v, want %q...", err, b.want)
			}
		}
	}
}
