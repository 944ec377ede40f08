package engine_test

import (
	"context"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// loadBenchCEL loads the 20 CEL bench policies and the 1,000 Pods.
func loadBenchCEL(b *testing.B) ([]api.PolicyObject, []map[string]any) {
	return loadBenchPolicies(b, "policies-cel")
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
