package cel_test

import (
	"context"
	"testing"

	"github.com/gavelpolicy/gavel/internal/cel"
)

// BenchmarkEval evaluates one validation with a comprehension over a Pod's
// containers, on a new Evaluation each time (as a rule does per request).
func BenchmarkEval(b *testing.B) {
	c := env(b).NewCompiler(false)
	p, err := c.Compile("object.spec.containers.all(c, has(c.livenessProbe) || has(c.readinessProbe) || has(c.startupProbe))", cel.Validation)
	if err != nil {
		b.Fatal(err)
	}
	obj := pod()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ev := c.NewEvaluation(ctx, &cel.Input{Object: obj}, nil)
		if _, err := ev.Eval(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvalLibraryEnv is BenchmarkEval in an environment with every
// library, the Input carrying Libraries: the binding's cost for an
// expression that calls none.
func BenchmarkEvalLibraryEnv(b *testing.B) {
	c := libEnv(b).NewCompiler(false)
	p, err := c.Compile("object.spec.containers.all(c, has(c.livenessProbe) || has(c.readinessProbe) || has(c.startupProbe))", cel.Validation)
	if err != nil {
		b.Fatal(err)
	}
	obj := pod()
	libs := &cel.Libraries{Resource: newResources()}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ev := c.NewEvaluation(ctx, &cel.Input{Object: obj, Libraries: libs}, nil)
		if _, err := ev.Eval(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvalLibraryCalls evaluates an expression that calls a host
// (resource.Get), a pure library (image) and the clock on a new
// Evaluation each time.
func BenchmarkEvalLibraryCalls(b *testing.B) {
	c := libEnv(b).NewCompiler(false)
	p, err := c.Compile(`object.spec.containers.all(c, image(c.image).registry().startsWith(resource.Get("v1", "configmaps", "kube-system", "allowed-registry").data.registry)) || time.now() > timestamp("2020-01-01T00:00:00Z")`, cel.Validation)
	if err != nil {
		b.Fatal(err)
	}
	obj := pod()
	libs := &cel.Libraries{Resource: newResources()}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ev := c.NewEvaluation(ctx, &cel.Input{Object: obj, Libraries: libs}, nil)
		if _, err := ev.Eval(p); err != nil {
			b.Fatal(err)
		}
	}
}
