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

// loadBench loads the 42 bench policies and the 1,000 Pods.
func loadBench(b *testing.B) ([]api.PolicyObject, []map[string]any) {
	return loadBenchPolicies(b, "policies")
}

// loadBenchPolicies loads the bench policies of folder dir and the 1,000
// Pods.
func loadBenchPolicies(b testing.TB, dir string) ([]api.PolicyObject, []map[string]any) {
	b.Helper()
	// the shared performance workload (42 policies, 1,000 Pods), with
	// GAVEL_SHARED
	benchDir := testshared.Dir(b, "bench")
	ps, err := loader.Load(filepath.Join(benchDir, dir))
	if err != nil {
		b.Fatal(err)
	}
	rs, err := loader.Load(filepath.Join(benchDir, "pods-1000.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	var pods []map[string]any
	for _, d := range rs.Resources {
		pods = append(pods, d.Object)
	}
	return ps.Policies, pods
}

// BenchmarkCompile compiles the 42 bench policies.
func BenchmarkCompile(b *testing.B) {
	policies, _ := loadBench(b)
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

func benchEval(b *testing.B, mutate bool) {
	policies, pods := loadBench(b)
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
		if mutate {
			_, err = set.Mutate(ctx, req)
		} else {
			_, err = set.Validate(ctx, req)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidate evaluates one Pod against the 42 bench policies.
func BenchmarkValidate(b *testing.B) { benchEval(b, false) }

// BenchmarkMutate mutates one Pod with the 42 bench policies.
func BenchmarkMutate(b *testing.B) { benchEval(b, true) }

// BenchmarkValidateParallel evaluates Pods from all cores.
func BenchmarkValidateParallel(b *testing.B) {
	policies, pods := loadBench(b)
	eng, _ := engine.New()
	set, err := eng.Compile(policies...)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer() // loading and compiling are not measured
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := set.Validate(context.Background(), &engine.Request{Object: pods[i%len(pods)]}); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}
