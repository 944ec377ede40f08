package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// BenchmarkImageValidatingPolicy measures an ImageValidatingPolicy on a
// Pod with a warm verification cache: the engine's overhead per Pod
// (matchConstraints, the images, matchImageReferences, the digest check,
// the validations, the cache lookups of each image and attestor, the
// required check). Mutate pins the images' digests (resolutions cached).
func BenchmarkImageValidatingPolicy(b *testing.B) {
	key := testPublicKey(b)
	for _, n := range []int{1, 10} {
		f := newIVFake()
		var tags, digests []string
		for i := range n {
			d := fmt.Sprintf("sha256:%064d", i)
			tags = append(tags, fmt.Sprintf("ghcr.io/acme/app%d:v1", i))
			digests = append(digests, fmt.Sprintf("ghcr.io/acme/app%d@%s", i, d))
			f.digests[tags[i]] = d
			f.sign(digests[i], key)
		}
		set := compileIV(b, f, ivpol("p", "  matchImageReferences:\n  - glob: ghcr.io/acme/*\n  attestors:\n"+keyAttestor("cosign", key)+
			"  validations:\n  - expression: images.containers.map(i, verifyImageSignatures(i, [attestors.cosign])).all(e, e > 0)\n    message: unsigned\n"))
		ctx := context.Background()
		byDigest, byTag := pod(digests...), pod(tags...)
		resp, err := set.Validate(ctx, &engine.Request{Operation: api.Create, Object: byDigest})
		if err != nil || results(resp) != "p p pass: success" {
			b.Fatalf("%v: %s", err, results(resp))
		}
		b.Run(fmt.Sprintf("Validate/images=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := set.Validate(ctx, &engine.Request{Operation: api.Create, Object: byDigest}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("Mutate/images=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := set.Mutate(ctx, &engine.Request{Operation: api.Create, Object: byTag}); err != nil {
					b.Fatal(err)
				}
			}
		})
		if v, r := f.verifies.Load(), f.resolves.Load(); v > int64(n) || r > int64(n) {
			b.Fatalf("%d verifications, %d resolutions for %d images: the cache was not warm", v, r, n)
		}
	}
}
