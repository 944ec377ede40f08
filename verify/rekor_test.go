package verify_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/cosign/v2/pkg/cosign/bundle"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/gavelpolicy/gavel/verify"
)

// testLog stands for a Rekor log: its key signs the entry timestamps
// (SETs) of the bundles attached to signatures.
type testLog struct {
	key *ecdsa.PrivateKey
	pem string
	id  string
}

func newLog(t testing.TB) *testLog {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pem, _ := cryptoutils.MarshalPublicKeyToPEM(&key.PublicKey)
	id := sha256.Sum256(der)
	return &testLog{key: key, pem: string(pem), id: hex.EncodeToString(id[:])}
}

// signLogged signs the image and attaches the Rekor bundle of a
// hashedrekord entry of the signature, as cosign sign does with a log.
func signLogged(t *testing.T, d name.Digest, key *testKey, log *testLog) {
	t.Helper()
	signLoggedWith(t, d, key.signer, key.pem, log)
}

// signLoggedWith signs with signer, whose public key or certificate is
// pubPEM, and attaches the Rekor bundle; opts add a certificate chain.
func signLoggedWith(t *testing.T, d name.Digest, signer signature.Signer, pubPEM string, log *testLog, opts ...static.Option) {
	t.Helper()
	p, err := (&payload.Cosign{Image: d}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := signer.SignMessage(bytes.NewReader(p))
	if err != nil {
		t.Fatal(err)
	}
	b64sig := base64.StdEncoding.EncodeToString(raw)
	h := sha256.Sum256(p)
	body, _ := json.Marshal(map[string]any{"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": map[string]any{
		"data":      map[string]any{"hash": map[string]any{"algorithm": "sha256", "value": hex.EncodeToString(h[:])}},
		"signature": map[string]any{"content": b64sig, "publicKey": map[string]any{"content": base64.StdEncoding.EncodeToString([]byte(pubPEM))}},
	}})
	rp := bundle.RekorPayload{Body: base64.StdEncoding.EncodeToString(body), IntegratedTime: time.Now().Unix(), LogIndex: 7, LogID: log.id}
	// the SET signs the payload's canonical JSON: sorted keys, which a map
	// of these plain values gives
	canonical, _ := json.Marshal(map[string]any{"body": rp.Body, "integratedTime": rp.IntegratedTime, "logIndex": rp.LogIndex, "logID": rp.LogID})
	digest := sha256.Sum256(canonical)
	set, err := ecdsa.SignASN1(rand.Reader, log.key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	sig, err := static.NewSignature(p, b64sig, append(opts, static.WithBundle(&bundle.RekorBundle{SignedEntryTimestamp: set, Payload: rp}))...)
	if err != nil {
		t.Fatal(err)
	}
	attach(t, d, sig, false)
}

// TestRekorBundles: with rekor.pubkey (and no ignoreTlog), a signature
// must carry a Rekor bundle whose entry timestamp the log's key signed;
// verification stays offline.
func TestRekorBundles(t *testing.T) {
	reg := newRegistry(t)
	key := newKey(t)
	log, otherLog := newLog(t), newLog(t)
	logged, ld := reg.push(t, "app:logged")
	signLogged(t, ld, key, log)
	unlogged, ud := reg.push(t, "app:unlogged")
	sign(t, ud, key.signer, nil)
	entry := func(rekorPEM string) string {
		return "      attestors:\n      - entries:\n        - keys:\n            publicKeys: |-\n" + indent(key.pem, "              ") +
			"\n            rekor:\n              url: https://rekor.invalid\n              pubkey: |-\n" + indent(rekorPEM, "                ") + "\n"
	}
	v := verify.New()
	tests := []struct{ name, entry, image, want string }{
		{"logged", entry(log.pem), logged, "pass: verified image signatures for " + logged},
		{"not logged", entry(log.pem), unlogged, "fail: failed to verify image " + unlogged + ": .attestors[0].entries[0].keys: no matching signatures: offline verification failed"},
		{"another log", entry(otherLog.pem), logged, "fail: failed to verify image " + logged + ": .attestors[0].entries[0].keys: no matching signatures: error verifying bundle: verifying bundle: rekor log public key not found for payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, v, policy("", tt.entry))
			_, got := run(t, set, pod(tt.image))
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
