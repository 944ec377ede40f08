package verify_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sigstore/cosign/v2/pkg/oci/static"

	"github.com/gavelpolicy/gavel/verify"
)

// TestRekorOnlineAttestations: attestations without a bundle are looked
// up in the log at rekor.url as cosign looks them up (dsse and intoto
// entries of the envelope and the key), then their predicates' conditions
// evaluated; one not logged fails, and a log that cannot be reached is
// "unavailable", so that failurePolicy Ignore skips.
func TestRekorOnlineAttestations(t *testing.T) {
	reg := newRegistry(t)
	key := newKey(t)
	log, otherLog := newLog(t), newLog(t)
	rekor := newRekor(t, log)
	const review = "https://example.com/CodeReview/v1"
	predicate := map[string]any{"author": "alice", "repo": map[string]any{"branch": "main"}}
	intoto, id := reg.push(t, "app:intoto")
	attestOnline(t, id, key.signer, key.pem, rekor, false, review, predicate)
	dsse, dd := reg.push(t, "app:dsse")
	attestOnline(t, dd, key.signer, key.pem, rekor, true, review, predicate)
	unlogged, ud := reg.push(t, "app:unlogged")
	attestOnline(t, ud, key.signer, key.pem, nil, false, review, predicate)
	ca := newCA(t)
	signer, leaf := ca.issue(t, "dev@example.com", "https://issuer.test")
	keyless, kd := reg.push(t, "app:keyless")
	attestOnline(t, kd, signer, string(leaf), rekor, true, review, predicate, static.WithCertChain(leaf, []byte(ca.pem)))

	entry := func(url, rekorPEM, branch string) string {
		s := "      attestations:\n      - predicateType: " + review + "\n        attestors:\n        - entries:\n          - keys:\n              publicKeys: |-\n" +
			indent(key.pem, "                ") + "\n              rekor:\n                url: " + url + "\n"
		if rekorPEM != "" {
			s += "                pubkey: |-\n" + indent(rekorPEM, "                  ") + "\n"
		}
		return s + "        conditions:\n        - all:\n          - key: '{{ repo.branch }}'\n            operator: Equals\n            value: " + branch + "\n"
	}
	keylessEntry := "      attestations:\n      - predicateType: " + review + "\n        attestors:\n        - entries:\n          - keyless:\n              subject: dev@example.com\n              issuer: https://issuer.test\n" +
		"              rekor:\n                url: " + rekor.srv.URL + "\n              ctlog:\n                ignoreSCT: true\n"
	trusted := verify.New(verify.WithTrustedRoot(loadTrustedRoot(t, trustedRootJSON(t, ca, log))))
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	failed := "image attestations verification failed, verifiedCount: 0, requiredCount: 1, error: .attestations[0].attestors[0].entries[0].keys: "
	tests := []struct {
		name  string
		v     *verify.Verifier
		entry string
		image string
		want  string
	}{
		{"intoto entry", verify.New(), entry(rekor.srv.URL, log.pem, "main"), intoto, "pass: verified image attestations for " + intoto},
		{"dsse entry", verify.New(), entry(rekor.srv.URL, log.pem, "main"), dsse, "pass: verified image attestations for " + dsse},
		{"conditions fail", verify.New(), entry(rekor.srv.URL, log.pem, "release"), intoto, "fail: " + failed + "attestation checks failed for " + intoto + " and predicate " + review},
		{"trusted root's key", trusted, entry(rekor.srv.URL, "", "main"), dsse, "pass: verified image attestations for " + dsse},
		{"keyless, trusted root", trusted, keylessEntry, keyless, "pass: verified image attestations for " + keyless},
		{"not logged", verify.New(), entry(rekor.srv.URL, log.pem, "main"), unlogged, "fail: " + failed + "no matching attestations: signature not found in transparency log"},
		{"another log's key", verify.New(), entry(rekor.srv.URL, otherLog.pem, "main"), intoto, "fail: " + failed + "no matching attestations: no valid tlog entries found rekor log public key not found for payload. Check your TUF root (see cosign initialize) or set a custom key with env var SIGSTORE_REKOR_PUBLIC_KEY"},
		{"log down", verify.New(), entry(down.URL, log.pem, "main"), intoto, "error: failed to verify image " + intoto + ": .attestations[0].attestors[0].entries[0].keys: image registry unavailable: transparency log unreachable: no matching attestations: searching log query: Post \"" + down.URL + "/api/v1/log/entries/retrieve\": dial tcp " + down.Listener.Addr().String() + ": connect: connection refused"},
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
	set := compile(t, verify.New(), policy("  webhookConfiguration:\n    failurePolicy: Ignore\n", entry(rekor.srv.URL, log.pem, "main")))
	if resp, got := run(t, set, pod(intoto)); !strings.HasPrefix(got, "skip: ") || resp.Blocked() {
		t.Errorf("log answering 503: got %s (blocked %v)", got, resp.Blocked())
	}
}
