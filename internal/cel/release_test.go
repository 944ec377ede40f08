package cel_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/gavelpolicy/gavel/internal/cel"
)

// TestRelease checks that a compiler's programs, which run in the
// environment's shared variants and not in the unit's own environment,
// see the unit's variables by name, and that a compiler keeps the types
// of its variables and stays usable after Release (its environments are
// built again).
func TestRelease(t *testing.T) {
	vars := [][2]string{
		{"images", "object.spec.containers.map(c, c.image)"},
		{"untagged", "variables.images.filter(i, !i.contains(':'))"},
		{"replicas", "object.spec.replicas"},
		// a CEL reserved word as a name: field names escaped by the API
		// server's rules, read by name
		{"namespace", "object.metadata.namespace"},
	}
	tests := []struct {
		name string
		// release is the number of variables added before Release;
		// -1: never
		release int
		expr    string
		kind    cel.Kind
		want    any    // the value, as a Go value
		err     string // substring of a compile error
	}{
		{name: "variables, no release", release: -1, expr: "variables.untagged == ['busybox'] && variables.replicas == 3", kind: cel.Validation, want: true},
		{name: "released after the variables", release: len(vars), expr: "variables.untagged == ['busybox'] && variables.replicas == 3", kind: cel.Validation, want: true},
		{name: "released between the variables", release: 1, expr: "variables.untagged == ['busybox']", kind: cel.Validation, want: true},
		{name: "released before any variable", release: 0, expr: "variables.images.size() == 2", kind: cel.Validation, want: true},
		{name: "reserved word", release: len(vars), expr: "variables.namespace == 'prod'", kind: cel.Validation, want: true},
		{name: "message expression", release: len(vars), expr: "'images: ' + variables.images.join(', ')", kind: cel.MessageExpression, want: "images: nginx:1.25, busybox"},
		{name: "types kept", release: len(vars), expr: "variables.images + 1 == 2", kind: cel.Validation, err: "found no matching overload for '_+_'"},
		{name: "undefined variable", release: len(vars), expr: "variables.nope == 1", kind: cel.Validation, err: "undefined field 'nope'"},
		{name: "apply configuration", release: len(vars), expr: "Object{spec: Object.spec{replicas: variables.replicas + 1}}", kind: cel.ApplyConfiguration,
			want: map[string]any{"spec": map[string]any{"replicas": int64(4)}}},
		{name: "apply configuration, no release", release: -1, expr: "Object{spec: Object.spec{replicas: variables.replicas + 1}}", kind: cel.ApplyConfiguration,
			want: map[string]any{"spec": map[string]any{"replicas": int64(4)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, lazy := range []bool{false, true} {
				c := env(t).NewCompiler(false)
				if lazy {
					c.Lazy()
				}
				for i, v := range vars {
					if i == tt.release {
						c.Release()
					}
					if _, err := c.AddVariable(v[0], v[1]); err != nil {
						t.Fatalf("variable %s: %v", v[0], err)
					}
				}
				if tt.release == len(vars) {
					c.Release()
				}
				p, err := c.Compile(tt.expr, tt.kind)
				if tt.err != "" {
					if err == nil || !strings.Contains(err.Error(), tt.err) {
						t.Fatalf("lazy %v: got %v, want a compile error containing %q", lazy, err, tt.err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("lazy %v: %v", lazy, err)
				}
				c.Release()
				v, err := c.NewEvaluation(context.Background(), &cel.Input{Object: pod()}, nil).Eval(p)
				if err != nil {
					t.Fatalf("lazy %v: %v", lazy, err)
				}
				got := v.Value()
				if m, isMap := tt.want.(map[string]any); isMap {
					if got, err = v.ConvertToNative(reflect.TypeOf(m)); err != nil {
						t.Fatalf("lazy %v: %v", lazy, err)
					}
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("lazy %v: got %#v, want %#v", lazy, got, tt.want)
				}
			}
		})
	}
}

// TestLazyConcurrent checks that the programs of a lazy compiler, checked
// again on their first evaluation, may be first evaluated concurrently
// (run with -race).
func TestLazyConcurrent(t *testing.T) {
	c := env(t).NewCompiler(false).Lazy()
	if _, err := c.AddVariable("images", "object.spec.containers.map(c, c.image)"); err != nil {
		t.Fatal(err)
	}
	exprs := []string{"variables.images.size() == 2", "'nginx:1.25' in variables.images", "object.metadata.name == 'web'", "variables.images.exists(i, i == 'busybox')"}
	var progs []*cel.Program
	for _, x := range exprs {
		p, err := c.Compile(x, cel.Validation)
		if err != nil {
			t.Fatal(err)
		}
		progs = append(progs, p)
	}
	c.Release()
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(progs))
	for range 8 {
		wg.Go(func() {
			ev := c.NewEvaluation(context.Background(), &cel.Input{Object: pod()}, nil)
			for _, p := range progs {
				v, err := ev.Eval(p)
				if err == nil && v.Value() != true {
					err = fmt.Errorf("%s: got %v", p.Expression(), v)
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
