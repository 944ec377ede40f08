package engine_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/loader"
)

// TestExceptionHostControl checks that exceptions apply only when the host
// enables them and only from the namespaces it allows.
func TestExceptionHostControl(t *testing.T) {
	dir := filepath.Join("testdata", "cases", "exception-skip")
	ps, err := loader.Load(filepath.Join(dir, "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := loader.Load(filepath.Join(dir, "resource.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var bad map[string]any
	for _, d := range rs.Resources {
		if d.Name() == "bad" {
			bad = d.Object
		}
	}
	compiled := func(opts ...exceptions.Option) *exceptions.Set {
		set, err := exceptions.Compile(ps.Exceptions, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	src := engine.WithExceptions(compiled())
	tests := []struct {
		name string
		opts []engine.Option
		want engine.Status
	}{
		{"no exception source", nil, engine.StatusFail},
		{"enabled", []engine.Option{src}, engine.StatusSkip},
		{"nil set", []engine.Option{engine.WithExceptions((*exceptions.Set)(nil))}, engine.StatusFail},
		{"namespace allowed", []engine.Option{engine.WithExceptions(compiled(exceptions.Namespaces("def*")))}, engine.StatusSkip},
		{"namespace not allowed", []engine.Option{engine.WithExceptions(compiled(exceptions.Namespaces("kyverno")))}, engine.StatusFail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng, err := engine.New(tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			ps, err := eng.Compile(ps.Policies...)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := ps.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: bad})
			if err != nil {
				t.Fatal(err)
			}
			got := resp.Policies[0].Rules[0].Status
			if got != tt.want {
				t.Errorf("status = %s, want %s", got, tt.want)
			}
		})
	}
}
