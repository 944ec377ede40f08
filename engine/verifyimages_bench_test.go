package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// BenchmarkVerifyImagesWarm measures verifyImages rules with a warm
// cache: every image's digest and signature outcome are cached, so a call
// costs the engine's work only (extraction, matching, cache lookups,
// digest patch, annotation, diff). The goal is under 20 µs per image.
func BenchmarkVerifyImagesWarm(b *testing.B) {
	for _, n := range []int{1, 10} {
		f := newFake()
		var imgs []string
		for i := range n {
			img := fmt.Sprintf("registry.test/app%d:v1", i)
			d := fmt.Sprintf("sha256:%064d", i)
			f.digests[img] = d
			f.signatures[fmt.Sprintf("registry.test/app%d@%s", i, d)] = []string{keyA}
			imgs = append(imgs, img)
		}
		set := compileVerify(b, f, verifyPolicy("p", "  validationFailureAction: Enforce", keysEntry("", keyA)))
		obj := pod(imgs...)
		resp, rules := mutateRules(b, set, obj) // warms the cache
		for _, r := range rules {
			if r.Status != engine.StatusPass {
				b.Fatalf("%s: %s", r.Status, r.Message)
			}
		}
		mutated := resp.Resource
		ctx := context.Background()
		b.Run(fmt.Sprintf("Mutate/images=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := set.Mutate(ctx, &engine.Request{Operation: api.Create, Object: obj}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n)/1000, "µs/image")
		})
		b.Run(fmt.Sprintf("Validate/images=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := set.Validate(ctx, &engine.Request{Operation: api.Create, Object: mutated}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n)/1000, "µs/image")
		})
		if v := f.verifies.Load(); v != int64(n) {
			b.Fatalf("%d verifications for %d images: the cache was not warm", v, n)
		}
	}
}
