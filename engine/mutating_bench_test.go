package engine_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/internal/testshared"
	"github.com/gavelpolicy/gavel/loader"
)

// loadCorpusMutating loads the MutatingPolicies of the corpus (every
// folder of kyverno-policies-new whose name ends in -mpol) and the 1,000
// bench Pods.
func loadCorpusMutating(b *testing.B) ([]api.PolicyObject, []map[string]any) {
	b.Helper()
	_, pods := loadBenchPolicies(b, "policies")
	dirs, _ := filepath.Glob(filepath.Join(testshared.Dir(b, "conformance"), "kyverno-policies-new", "*-mpol", "*"))
	var policies []api.PolicyObject
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "*.yaml"))
		for _, f := range files {
			s, err := loader.Load(f)
			if err != nil {
				b.Fatal(err)
			}
			for _, p := range s.Policies {
				if k := api.KindOf(p); k == api.KindMutatingPolicy || k == api.KindNamespacedMutatingPolicy {
					policies = append(policies, p)
				}
			}
		}
	}
	if len(policies) == 0 {
		b.Skip("corpus MutatingPolicies not found")
	}
	return policies, pods
}

// BenchmarkMutatePolicy mutates one Pod (of the 1,000 bench Pods, in
// turn) with every MutatingPolicy of the corpus (41 policies: the
// mutations of those that select Pods applied in order, the Pod
// controller variants of the others matched and skipped).
func BenchmarkMutatePolicy(b *testing.B) {
	policies, pods := loadCorpusMutating(b)
	eng, err := engine.New()
	if err != nil {
		b.Fatal(err)
	}
	set, err := eng.Compile(policies...)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// the first evaluation decodes the built-in schemas
	if _, err := set.Mutate(ctx, &engine.Request{Operation: api.Create, Object: pods[0]}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(policies)), "policies")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		req := &engine.Request{Operation: api.Create, Object: pods[i%len(pods)]}
		i++
		if _, err := set.Mutate(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileMutatingPolicies compiles the corpus' MutatingPolicies.
func BenchmarkCompileMutatingPolicies(b *testing.B) {
	policies, _ := loadCorpusMutating(b)
	eng, err := engine.New()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := eng.Compile(policies...); err != nil {
			b.Fatal(err)
		}
	}
}
