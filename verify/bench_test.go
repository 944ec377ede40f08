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
