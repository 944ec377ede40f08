package verify_test

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/sigstore/cosign/v2/pkg/oci/static"
	sgsign "github.com/sigstore/sigstore-go/pkg/sign"

	"github.com/gavelpolicy/gavel/verify"
)

// TestTrustedRootLogValidity: a log key of the trusted root verifies only
// the entries integrated within its validity period, as sigstore-go
// checks it: keys, certificates and keyless attestors, entries looked up
// online or carried in bundles, signatures and attestations. Nothing is
// printed to stderr.
func TestTrustedRootLogValidity(t *testing.T) {
	reg := newRegistry(t)
	key, ca, log := newKey(t), newCA(t), newLog(t)
	now := time.Now()
	rekor := newRekor(t, log)
	online, od := reg.push(t, "app:online")
	signOnline(t, od, key.signer, key.pem, rekor)
	bundled, bd := reg.push(t, "app:bundled")
	signLogged(t, bd, key, log)
	const review = "https://example.com/CodeReview/v1"
	attested, ad := reg.push(t, "app:attested")
	attestOnline(t, ad, key.signer, key.pem, rekor, true, review, map[string]any{"branch": "main"})
	signer, leaf := ca.issue(t, "dev@example.com", "https://issuer.test")
	certified, cd := reg.push(t, "app:certified")
	signOnline(t, cd, signer, string(leaf), rekor, static.WithCertChain(leaf, []byte(ca.pem)))
	// an entry integrated 90 minutes ago, before the key's end
	old, oldD := reg.push(t, "app:old")
	rekor.integrated.Store(now.Add(-90 * time.Minute).Unix())
	signOnline(t, oldD, key.signer, key.pem, rekor)
	rekor.integrated.Store(0)

	url := rekor.srv.URL
	keys := "      attestors:\n      - entries:\n        - keys:\n            publicKeys: |-\n" + indent(key.pem, "              ") + "\n            rekor:\n              url: " + url + "\n"
	attestation := "      attestations:\n      - predicateType: " + review + "\n        attestors:\n        - entries:\n          - keys:\n              publicKeys: |-\n" +
		indent(key.pem, "                ") + "\n              rekor:\n                url: " + url + "\n"
	certificates := "      attestors:\n      - entries:\n        - certificates:\n            cert: |-\n" + indent(string(leaf), "              ") +
		"\n            certChain: |-\n" + indent(ca.pem, "              ") + "\n            rekor:\n              url: " + url + "\n            ctlog:\n              ignoreSCT: true\n"
	keyless := "      attestors:\n      - entries:\n        - keyless:\n            subject: dev@example.com\n            issuer: https://issuer.test\n            rekor:\n              url: " + url +
		"\n            ctlog:\n              ignoreSCT: true\n"
	// valid since two hours; ended an hour ago; valid from in an hour
	valid := verify.New(verify.WithTrustedRoot(loadTrustedRoot(t, trustedRootPeriod(t, ca, log, now.Add(-2*time.Hour), time.Time{}))))
	expired := verify.New(verify.WithTrustedRoot(loadTrustedRoot(t, trustedRootPeriod(t, ca, log, now.Add(-2*time.Hour), now.Add(-time.Hour)))))
	future := verify.New(verify.WithTrustedRoot(loadTrustedRoot(t, trustedRootPeriod(t, ca, log, now.Add(time.Hour), time.Time{}))))

	const notValid = "rekor log public key not valid at payload integrated time"
	fail := func(image, attestor string) string {
		return "fail: failed to verify image " + image + ": .attestors[0].entries[0]." + attestor + ": no matching signatures: "
	}
	tests := []struct {
		name  string
		v     *verify.Verifier
		entry string
		image string
		want  string
	}{
		{"online, valid", valid, keys, online, "pass: verified image signatures for " + online},
		{"online, expired", expired, keys, online, fail(online, "keys") + "no valid tlog entries found verifying SET offline: " + notValid},
		{"online, not yet valid", future, keys, online, fail(online, "keys") + "no valid tlog entries found verifying SET offline: " + notValid},
		{"online, logged before the end", expired, keys, old, "pass: verified image signatures for " + old},
		{"bundle, valid", valid, keys, bundled, "pass: verified image signatures for " + bundled},
		{"bundle, expired", expired, keys, bundled, fail(bundled, "keys") + "error verifying bundle: verifying bundle with trusted root: " + notValid},
		{"attestation, valid", valid, attestation, attested, "pass: verified image attestations for " + attested},
		{"attestation, expired", expired, attestation, attested, "fail: image attestations verification failed, verifiedCount: 0, requiredCount: 1, error: .attestations[0].attestors[0].entries[0].keys: no matching attestations: no valid tlog entries found verifying SET offline: " + notValid},
		{"certificates, valid", valid, certificates, certified, "pass: verified image signatures for " + certified},
		{"certificates, expired", expired, certificates, certified, fail(certified, "certificates") + "no valid tlog entries found verifying SET offline: " + notValid},
		{"keyless, valid", valid, keyless, certified, "pass: verified image signatures for " + certified},
		{"keyless, expired", expired, keyless, certified, fail(certified, "keyless") + "no valid tlog entries found verifying SET offline: " + notValid},
	}
	stderr := captureStderr(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, tt.v, policy("", tt.entry))
			if _, got := run(t, set, pod(tt.image)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	if out := stderr(); out != "" {
		t.Errorf("printed to stderr:\n%s", out)
	}
}

// captureStderr redirects os.Stderr until the returned function, which
// gives what was written (the package's tests do not run in parallel).
func captureStderr(t *testing.T) func() string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	restore := func() string {
		if os.Stderr == w {
			os.Stderr = saved
			w.Close()
			return <-done
		}
		return ""
	}
	t.Cleanup(func() { restore() })
	return restore
}

// TestTrustedRootLogValidityBundles: a Sigstore bundle signed with a key
// and entered in the log verifies its entry with the trusted root's log
// key (rekor without pubkey) within the key's validity period.
func TestTrustedRootLogValidityBundles(t *testing.T) {
	reg := newRegistry(t)
	ca, log := newCA(t), newLog(t)
	rekor := newRekor(t, log)
	kp, err := sgsign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.GetPublicKeyPem()
	img, d := reg.push(t, "app:bundle")
	bundleSign(t, d, kp, nil, nil, sgsign.NewRekor(&sgsign.RekorOptions{BaseURL: rekor.srv.URL}))
	entry := "      type: SigstoreBundle\n      attestors:\n      - entries:\n        - keys:\n            publicKeys: |-\n" + indent(pub, "              ") +
		"\n            rekor:\n              url: " + rekor.srv.URL + "\n"
	now := time.Now()
	// sigstore-go does not say why an entry did not verify
	failed := "fail: failed to verify image " + img + ": .attestors[0].entries[0].keys: no matching signatures: failed to verify log inclusion: not enough verified log entries from transparency log: 0 < 1"
	tests := []struct {
		name string
		v    *verify.Verifier
		want string
	}{
		{"valid", verify.New(verify.WithTrustedRoot(loadTrustedRoot(t, trustedRootPeriod(t, ca, log, now.Add(-2*time.Hour), time.Time{})))), "pass: verified image signatures for " + img},
		{"expired", verify.New(verify.WithTrustedRoot(loadTrustedRoot(t, trustedRootPeriod(t, ca, log, now.Add(-2*time.Hour), now.Add(-time.Hour))))), failed},
		{"another log", verify.New(verify.WithTrustedRoot(loadTrustedRoot(t, trustedRootJSON(t, ca, newLog(t))))), failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, tt.v, policy("", entry))
			if _, got := run(t, set, pod(img)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
