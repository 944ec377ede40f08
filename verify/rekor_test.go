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
	"net/http"
	"net/http/httptest"
	"strings"
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
	p, b64sig := signPayload(t, d, signer)
	rp, set := logEntry(t, log, p, b64sig, pubPEM, 7)
	sig, err := static.NewSignature(p, b64sig, append(opts, static.WithBundle(&bundle.RekorBundle{SignedEntryTimestamp: set, Payload: rp}))...)
	if err != nil {
		t.Fatal(err)
	}
	attach(t, d, sig, false)
}

// signPayload signs cosign's simple signing payload of the image.
func signPayload(t testing.TB, d name.Digest, signer signature.Signer) (payloadJSON []byte, b64sig string) {
	t.Helper()
	p, err := (&payload.Cosign{Image: d}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := signer.SignMessage(bytes.NewReader(p))
	if err != nil {
		t.Fatal(err)
	}
	return p, base64.StdEncoding.EncodeToString(raw)
}

// logEntry makes the log's hashedrekord entry of a signature and its
// signed entry timestamp (SET).
func logEntry(t testing.TB, log *testLog, p []byte, b64sig, pubPEM string, index int64) (bundle.RekorPayload, []byte) {
	t.Helper()
	h := sha256.Sum256(p)
	body, _ := json.Marshal(map[string]any{"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": map[string]any{
		"data":      map[string]any{"hash": map[string]any{"algorithm": "sha256", "value": hex.EncodeToString(h[:])}},
		"signature": map[string]any{"content": b64sig, "publicKey": map[string]any{"content": base64.StdEncoding.EncodeToString([]byte(pubPEM))}},
	}})
	rp := bundle.RekorPayload{Body: base64.StdEncoding.EncodeToString(body), IntegratedTime: time.Now().Unix(), LogIndex: index, LogID: log.id}
	// the SET signs the payload's canonical JSON: sorted keys, which a map
	// of these plain values gives
	canonical, _ := json.Marshal(map[string]any{"body": rp.Body, "integratedTime": rp.IntegratedTime, "logIndex": rp.LogIndex, "logID": rp.LogID})
	digest := sha256.Sum256(canonical)
	set, err := ecdsa.SignASN1(rand.Reader, log.key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return rp, set
}

// TestRekorBundles: with rekor.pubkey (and no ignoreTlog), a signature's
// Rekor bundle is checked offline against the log's key; one without a
// bundle is looked up at rekor.url, or fails without a URL.
func TestRekorBundles(t *testing.T) {
	reg := newRegistry(t)
	key := newKey(t)
	log, otherLog := newLog(t), newLog(t)
	logged, ld := reg.push(t, "app:logged")
	signLogged(t, ld, key, log)
	unlogged, ud := reg.push(t, "app:unlogged")
	sign(t, ud, key.signer, nil)
	rekor := newRekor(t, log) // logs nothing
	entry := func(url, rekorPEM string) string {
		return "      attestors:\n      - entries:\n        - keys:\n            publicKeys: |-\n" + indent(key.pem, "              ") +
			"\n            rekor:\n" + url + "              pubkey: |-\n" + indent(rekorPEM, "                ") + "\n"
	}
	withURL := "              url: " + rekor.srv.URL + "\n"
	v := verify.New()
	tests := []struct{ name, entry, image, want string }{
		{"logged", entry(withURL, log.pem), logged, "pass: verified image signatures for " + logged},
		{"not logged", entry(withURL, log.pem), unlogged, "fail: failed to verify image " + unlogged + ": .attestors[0].entries[0].keys: no matching signatures: signature not found in transparency log"},
		{"not logged, no url", entry("", log.pem), unlogged, "fail: failed to verify image " + unlogged + ": .attestors[0].entries[0].keys: no matching signatures: offline verification failed"},
		{"another log", entry(withURL, otherLog.pem), logged, "fail: failed to verify image " + logged + ": .attestors[0].entries[0].keys: no matching signatures: error verifying bundle: verifying bundle: rekor log public key not found for payload"},
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
	// the logged image's bundle was enough: one search, for the other
	if n := rekor.searches.Load(); n != 1 {
		t.Errorf("%d searches of the log, want 1", n)
	}
}

// TestRekorOnline: signatures without a bundle are looked up in the log
// at rekor.url, through Rekor's API, and their entries' inclusion proofs
// and timestamps checked with the log's key (the policy's or the trusted
// root's); a log that cannot be reached is "unavailable".
func TestRekorOnline(t *testing.T) {
	reg := newRegistry(t)
	key := newKey(t)
	log, otherLog := newLog(t), newLog(t)
	rekor := newRekor(t, log)
	img, d := reg.push(t, "app:v1")
	signOnline(t, d, key.signer, key.pem, rekor)
	unlogged, ud := reg.push(t, "app:unlogged")
	sign(t, ud, key.signer, nil)
	ca := newCA(t)
	signer, leaf := ca.issue(t, "dev@example.com", "https://issuer.test")
	keylessImg, kd := reg.push(t, "app:keyless")
	signOnline(t, kd, signer, string(leaf), rekor, static.WithCertChain(leaf, []byte(ca.pem)))

	entry := func(url, rekorPEM string) string {
		s := "      attestors:\n      - entries:\n        - keys:\n            publicKeys: |-\n" + indent(key.pem, "              ") +
			"\n            rekor:\n              url: " + url + "\n"
		if rekorPEM != "" {
			s += "              pubkey: |-\n" + indent(rekorPEM, "                ") + "\n"
		}
		return s
	}
	keyless := "      attestors:\n      - entries:\n        - keyless:\n            subject: dev@example.com\n            issuer: https://issuer.test" +
		"\n            rekor:\n              url: " + rekor.srv.URL + "\n            ctlog:\n              ignoreSCT: true\n"
	trusted := verify.New(verify.WithTrustedRoot(loadTrustedRoot(t, trustedRootJSON(t, ca, log))))
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	prefix := "failed to verify image "
	tests := []struct {
		name  string
		v     *verify.Verifier
		entry string
		image string
		want  string
	}{
		{"logged", verify.New(), entry(rekor.srv.URL, log.pem), img, "pass: verified image signatures for " + img},
		{"not logged", verify.New(), entry(rekor.srv.URL, log.pem), unlogged, "fail: " + prefix + unlogged + ": .attestors[0].entries[0].keys: no matching signatures: signature not found in transparency log"},
		{"another log's key", verify.New(), entry(rekor.srv.URL, otherLog.pem), img, "fail: " + prefix + img + ": .attestors[0].entries[0].keys: no matching signatures: no valid tlog entries found rekor log public key not found for payload. Check your TUF root (see cosign initialize) or set a custom key with env var SIGSTORE_REKOR_PUBLIC_KEY"},
		{"trusted root's key", trusted, entry(rekor.srv.URL, ""), img, "pass: verified image signatures for " + img},
		{"keyless, trusted root", trusted, keyless, keylessImg, "pass: verified image signatures for " + keylessImg},
		{"log down", verify.New(), entry(down.URL, log.pem), img, "error: " + prefix + img + ": .attestors[0].entries[0].keys: image registry unavailable: transparency log unreachable: no matching signatures: searching log query: Post \"" + down.URL + "/api/v1/log/entries/retrieve\": dial tcp " + down.Listener.Addr().String() + ": connect: connection refused"},
		{"bad url", verify.New(), entry("ftp://rekor.test", log.pem), img, "fail: " + prefix + img + ": .attestors[0].entries[0].keys: invalid rekor.url \"ftp://rekor.test\": want an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, tt.v, policy("", tt.entry))
			if _, got := run(t, set, pod(tt.image)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	// a log answering 503: unavailable, so failurePolicy Ignore applies
	rekor.status.Store(http.StatusServiceUnavailable)
	set := compile(t, verify.New(), policy("  webhookConfiguration:\n    failurePolicy: Ignore\n", entry(rekor.srv.URL, log.pem)))
	if resp, got := run(t, set, pod(img)); !strings.HasPrefix(got, "skip: ") || resp.Blocked() {
		t.Errorf("log answering 503: got %s (blocked %v)", got, resp.Blocked())
	}
}
