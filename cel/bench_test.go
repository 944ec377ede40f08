package cel_test

import (
	"context"
	"testing"

	"github.com/gavelpolicy/gavel/cel"
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
		ev := c.NewEvaluation(ctx, &cel.Input{Object: obj})
		if _, err := ev.Eval(p); err != nil {
			b.Fatal(err)
		}
	}
}
