package cel_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/cel-go/common/types"

	"github.com/gavelpolicy/gavel/internal/cel"
)

// TestInputShared evaluates one Input in many goroutines, each with a
// Scope of its own or none: an Input is plain data that NewEvaluation
// reads and keeps nothing in (run with -race).
func TestInputShared(t *testing.T) {
	c := env(t).NewCompiler(true)
	if _, err := c.AddVariable("images", "object.spec.containers.map(c, c.image)"); err != nil {
		t.Fatal(err)
	}
	p, err := c.Compile("variables.images.size() == 2 && params.max == 2 && oldObject == null", cel.Validation)
	if err != nil {
		t.Fatal(err)
	}
	in := &cel.Input{Object: pod(), Params: map[string]any{"max": float64(2)}}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s *cel.Scope
			if i%2 == 0 {
				s = new(cel.Scope)
			}
			for range 20 {
				v, err := c.NewEvaluation(context.Background(), in, s).Eval(p)
				if err == nil && v != types.True {
					err = fmt.Errorf("got %v, want true", v)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestEvaluationKeepsNoInput: changing an Input after NewEvaluation
// changes neither that Evaluation nor the Input's next ones' shared
// values, which follow its trees.
func TestEvaluationKeepsNoInput(t *testing.T) {
	c := env(t).NewCompiler(false)
	if _, err := c.AddVariable("name", "object.metadata.name"); err != nil {
		t.Fatal(err)
	}
	p, err := c.Compile("string(variables.name)", cel.MessageExpression)
	if err != nil {
		t.Fatal(err)
	}
	a := map[string]any{"metadata": map[string]any{"name": "a"}}
	b := map[string]any{"metadata": map[string]any{"name": "b"}}
	var s cel.Scope
	in := &cel.Input{Object: a}
	ev := c.NewEvaluation(context.Background(), in, &s)
	in.Object = b
	for _, step := range []struct {
		ev   *cel.Evaluation
		want string
	}{
		{ev, "a"},
		{c.NewEvaluation(context.Background(), in, &s), "b"},
		{c.NewEvaluation(context.Background(), &cel.Input{Object: a}, &s), "a"},
	} {
		v, err := step.ev.Eval(p)
		if err != nil || v != types.String(step.want) {
			t.Fatalf("got %v, %v; want %q", v, err, step.want)
		}
	}
}
