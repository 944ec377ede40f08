package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/loader"
)

// loadBenchCEL loads the 20 CEL bench policies and the 1,000 Pods.
func loadBenchCEL(b *testing.B) ([]api.PolicyObject, []map[string]any) {
	b.Helper()
	if _, err := os.Stat(benchDir); err != nil {
		b.Skip("shared bench workload not found")
	}
	ps, err := loader.Load(filepath.Join(benchDir, "policies-cel"))
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

// BenchmarkCompileCEL compiles the 20 CEL bench policies (every
// expression type-checked, autogen rules included) on an engine whose
// CEL environment is built.
func BenchmarkCompileCEL(b *testing.B) {
	policies, _ := loadBenchCEL(b)
	eng, err := engine.New()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := eng.Compile(policies...); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := eng.Compile(policies...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateCEL evaluates one Pod against the 20 CEL bench
// policies.
func BenchmarkValidateCEL(b *testing.B) {
	policies, pods := loadBenchCEL(b)
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
