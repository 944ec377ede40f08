package engine_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// BenchmarkValidateVPOL evaluates one Pod of the bench (pods-1000.yaml,
// in turn) against the 31 ValidatingPolicies of policies-vpol, as gavel
// apply does: namespaceObject is null (no Namespace is known), as it is
// there.
func BenchmarkValidateVPOL(b *testing.B) {
	policies, pods := loadBenchPolicies(b, "policies-vpol")
	eng, err := engine.New()
	if err != nil {
		b.Fatal(err)
	}
	set, err := eng.Compile(policies...)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		req := &engine.Request{Operation: api.Create, Object: pods[i%len(pods)]}
		i++
		if _, err := set.Validate(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileVPOL compiles the 31 ValidatingPolicies (with their Pod
// controller variants) on an engine whose environment is built. It also
// reports the heap the compiled set keeps alive (live-B), measured once
// before the loop.
func BenchmarkCompileVPOL(b *testing.B) {
	policies, _ := loadBenchPolicies(b, "policies-vpol")
	eng, err := engine.New()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := eng.Compile(policies...); err != nil {
		b.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	set, err := eng.Compile(policies...)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(set)
	live := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := eng.Compile(policies...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(live, "live-B")
}
