package verify_test

import (
	"context"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/verify"
)

// BenchmarkCosignCold measures one Pod with one image verified against an
// in-process registry every time (useCache: false): digest resolution,
// signature manifest and payload, ECDSA verification.
func BenchmarkCosignCold(b *testing.B) {
	reg := newRegistry(b)
	key := newKey(b)
	img, d := reg.push(b, "app:v1")
	sign(b, d, key.signer, nil)
	set := compile(b, verify.New(), policy("", "      useCache: false\n"+keysEntry("", key.pem)))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := set.Mutate(ctx, &engine.Request{Operation: api.Create, Object: pod(img)})
		if err != nil || resp.Policies[0].Rules[0].Status != engine.StatusPass {
			b.Fatal(err, resp.Policies[0].Rules[0].Message)
		}
	}
}

// BenchmarkRekorOnlineAttestation measures one Pod with one image whose
// attestation (no bundle) is verified every time: the attestation
// manifest and envelope, the log search (dsse and intoto entries) on an
// in-process Rekor, the inclusion proof and SET with the trusted root's
// log key through sigstore-go, the predicate's conditions.
func BenchmarkRekorOnlineAttestation(b *testing.B) {
	reg := newRegistry(b)
	key, log := newKey(b), newLog(b)
	rekor := newRekor(b, log)
	img, d := reg.push(b, "app:v1")
	const review = "https://example.com/CodeReview/v1"
	attestOnline(b, d, key.signer, key.pem, rekor, true, review, map[string]any{"branch": "main"})
	entry := "      useCache: false\n      attestations:\n      - predicateType: " + review + "\n        attestors:\n        - entries:\n          - keys:\n              publicKeys: |-\n" +
		indent(key.pem, "                ") + "\n              rekor:\n                url: " + rekor.srv.URL + "\n        conditions:\n        - all:\n          - key: '{{ branch }}'\n            operator: Equals\n            value: main\n"
	set := compile(b, verify.New(verify.WithTrustedRoot(loadTrustedRoot(b, trustedRootJSON(b, newCA(b), log)))), policy("", entry))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := set.Mutate(ctx, &engine.Request{Operation: api.Create, Object: pod(img)})
		if err != nil || resp.Policies[0].Rules[0].Status != engine.StatusPass {
			b.Fatal(err, resp.Policies[0].Rules[0].Message)
		}
	}
}
