package verify_test

import (
	"context"
	"crypto"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgsign "github.com/sigstore/sigstore-go/pkg/sign"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/verify"
)

// trustedRootJSON is a Sigstore trusted_root.json of the test's Fulcio
// CA and Rekor log, made with sigstore-go's root package.
func trustedRootJSON(t testing.TB, ca *testCA, log *testLog) []byte {
	t.Helper()
	return trustedRootPeriod(t, ca, log, time.Now().Add(-time.Hour), time.Time{})
}

// trustedRootPeriod is trustedRootJSON with the log key valid from start
// until end (zero: no end).
func trustedRootPeriod(t testing.TB, ca *testCA, log *testLog, start, end time.Time) []byte {
	t.Helper()
	id, _ := hex.DecodeString(log.id)
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01,
		[]root.CertificateAuthority{&root.FulcioCertificateAuthority{Root: ca.cert, ValidityPeriodStart: time.Now().Add(-time.Hour), URI: "https://fulcio.test"}},
		map[string]*root.TransparencyLog{}, nil,
		map[string]*root.TransparencyLog{log.id: {BaseURL: "https://rekor.test", ID: id, PublicKey: &log.key.PublicKey,
			HashFunc: crypto.SHA256, SignatureHashFunc: crypto.SHA256, ValidityPeriodStart: start, ValidityPeriodEnd: end}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func loadTrustedRoot(t testing.TB, raw []byte) *root.TrustedRoot {
	t.Helper()
	tr, err := root.NewTrustedRootFromJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestTrustedRoot: keyless attestors without roots, and rekor without
// pubkey, verify with the Sigstore trusted root the Verifier was given
// (a trusted_root.json, as air-gapped clusters keep it).
func TestTrustedRoot(t *testing.T) {
	reg := newRegistry(t)
	ca, otherCA := newCA(t), newCA(t)
	log, otherLog := newLog(t), newLog(t)
	signer, leaf := ca.issue(t, "dev@example.com", "https://issuer.test")
	img, d := reg.push(t, "app:keyless")
	sign(t, d, signer, nil, static.WithCertChain(leaf, []byte(ca.pem)))
	logged, ld := reg.push(t, "app:logged")
	signLoggedWith(t, ld, signer, string(leaf), log, static.WithCertChain(leaf, []byte(ca.pem)))
	key := newKey(t)
	keyLogged, kd := reg.push(t, "app:key-logged")
	signLogged(t, kd, key, log)

	keyless := func(subject, rekor string) string {
		return "      attestors:\n      - entries:\n        - keyless:\n            subject: " + subject + "\n            issuer: https://issuer.test" +
			"\n            rekor:\n" + rekor + "            ctlog:\n              ignoreSCT: true\n"
	}
	noTlog := "              ignoreTlog: true\n"
	rekor := newRekor(t, log) // logs nothing: the signatures carry bundles
	logURL := "              url: " + rekor.srv.URL + "\n"
	logKey := func(l *testLog) string {
		return logURL + "              pubkey: |-\n" + indent(l.pem, "                ") + "\n"
	}
	keys := "      attestors:\n      - entries:\n        - keys:\n            publicKeys: |-\n" + indent(key.pem, "              ") + "\n            rekor:\n" + logURL

	trusted := verify.New(verify.WithTrustedRoot(loadTrustedRoot(t, trustedRootJSON(t, ca, log))))
	otherRoot := verify.New(verify.WithTrustedRoot(loadTrustedRoot(t, trustedRootJSON(t, otherCA, otherLog))))
	prefix := "failed to verify image "
	tests := []struct {
		name  string
		v     *verify.Verifier
		entry string
		image string
		want  string
	}{
		{"keyless", trusted, keyless("dev@example.com", noTlog), img, "pass: verified image signatures for " + img},
		{"keyless wrong subject", trusted, keyless("ops@example.com", noTlog), img, "fail: " + prefix + img + ": .attestors[0].entries[0].keyless: no matching signatures: none of the expected identities matched what was in the certificate, got subjects [dev@example.com] with issuer https://issuer.test"},
		{"keyless other root", otherRoot, keyless("dev@example.com", noTlog), img, "fail: " + prefix + img + ": .attestors[0].entries[0].keyless: no matching signatures: leaf certificate verification failed"},
		{"keyless logged", trusted, keyless("dev@example.com", logURL), logged, "pass: verified image signatures for " + logged},
		{"keyless not logged", trusted, keyless("dev@example.com", logURL), img, "fail: " + prefix + img + ": .attestors[0].entries[0].keyless: no matching signatures: signature not found in transparency log"},
		{"keyless policy log key", trusted, keyless("dev@example.com", logKey(log)), logged, "pass: verified image signatures for " + logged},
		{"keyless other policy log key", trusted, keyless("dev@example.com", logKey(otherLog)), logged, "fail: " + prefix + logged + ": .attestors[0].entries[0].keyless: no matching signatures: error verifying bundle: verifying bundle with trusted root: rekor log public key not found for payload"},
		{"keyless, other root's log", otherRoot, keyless("dev@example.com", logKey(log)), logged, "fail: " + prefix + logged + ": .attestors[0].entries[0].keyless: no matching signatures: leaf certificate verification failed"},
		{"keyless without trusted root", verify.New(), keyless("dev@example.com", noTlog), img, "error: " + prefix + img + ": .attestors[0].entries[0].keyless: keyless verification without roots needs Sigstore's trusted root (verify.WithTUF or verify.WithTrustedRoot): not configured"},
		{"key, root's log", trusted, keys, keyLogged, "pass: verified image signatures for " + keyLogged},
		{"key, other root's log", otherRoot, keys, keyLogged, "fail: " + prefix + keyLogged + ": .attestors[0].entries[0].keys: no matching signatures: error verifying bundle: verifying bundle with trusted root: rekor log public key not found for payload"},
		{"key, no trusted root", verify.New(), keys, keyLogged, "fail: " + prefix + keyLogged + ": .attestors[0].entries[0].keys: checking the transparency log needs rekor.pubkey (or rekor.ignoreTlog: true, or the Verifier's Sigstore trusted root)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, tt.v, policy("", tt.entry))
			if _, got := run(t, set, pod(tt.image)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	req := engine.ImageVerifyRequest{Image: d.String(), Attestor: api.Attestor{Keyless: &api.KeylessAttestor{Subject: "dev@example.com", Issuer: "https://issuer.test",
		Rekor: &api.Rekor{IgnoreTlog: true}, CTLog: &api.CTLog{IgnoreSCT: true}}}}
	if err := verify.New().VerifySignature(context.Background(), req); !errors.Is(err, engine.ErrNotConfigured) || !strings.Contains(err.Error(), "trusted root") {
		t.Errorf("no trusted root: %v", err)
	}
}

// TestTrustedRootBundles: a Sigstore bundle of a keyless signature
// verifies with the trusted root when the attestor gives no roots.
func TestTrustedRootBundles(t *testing.T) {
	reg := newRegistry(t)
	ca, otherCA, log := newCA(t), newCA(t), newLog(t)
	img, d := reg.push(t, "app:keyless")
	ephemeral, err := sgsign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	bundleSign(t, d, ephemeral, caProvider{ca, "dev@example.com"}, nil)
	entry := func(subject string) string {
		return "      type: SigstoreBundle\n      attestors:\n      - entries:\n        - keyless:\n            subject: " + subject + "\n            issuer: https://issuer.test\n" +
			"            rekor:\n              ignoreTlog: true\n            ctlog:\n              ignoreSCT: true\n"
	}
	prefix := "fail: failed to verify image " + img + ": .attestors[0].entries[0].keyless: no matching signatures: "
	tests := []struct {
		name, entry, want string
		v                 *verify.Verifier
	}{
		{"keyless", entry("dev@example.com"), "pass: verified image signatures for " + img, verify.New(verify.WithTrustedRoot(loadTrustedRoot(t, trustedRootJSON(t, ca, log))))},
		{"other subject", entry("ops@example.com"), prefix, verify.New(verify.WithTrustedRoot(loadTrustedRoot(t, trustedRootJSON(t, ca, log))))},
		{"other root", entry("dev@example.com"), prefix, verify.New(verify.WithTrustedRoot(loadTrustedRoot(t, trustedRootJSON(t, otherCA, log))))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, tt.v, policy("", tt.entry))
			if _, got := run(t, set, pod(img)); !strings.HasPrefix(got, tt.want) || strings.HasPrefix(tt.want, "pass") && got != tt.want {
				t.Errorf("got\n%s\nwant prefix\n%s", got, tt.want)
			}
		})
	}
}
