package jmespath

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestFacade checks that the options, errors and types of the facade are
// those of the implementation: each option takes effect, each error is
// reachable with errors.Is or errors.As.
// TestDefaultRegistry checks both halves of WithDefaultRegistry: the
// registry image_normalize assumes, and whether it writes it.
func TestDefaultRegistry(t *testing.T) {
	for _, tt := range []struct {
		registry string
		mutate   bool
		expr     string
		want     any
	}{
		{"corp.io", true, "image_normalize('nginx')", "corp.io/nginx:latest"},
		{"corp.io", false, "image_normalize('nginx:1.0')", "nginx:1.0"},
		{"corp.io", false, "image_normalize('ghcr.io/a/b')", "ghcr.io/a/b:latest"},
	} {
		intr, err := New(WithDefaultRegistry(tt.registry, tt.mutate))
		if err != nil {
			t.Fatal(err)
		}
		got, err := intr.Search(tt.expr, nil)
		if err != nil || got != tt.want {
			t.Errorf("%s (registry %s, mutate %v) = %v, %v; want %v", tt.expr, tt.registry, tt.mutate, got, err, tt.want)
		}
	}
}

func TestFacade(t *testing.T) {
	clock := func() time.Time { return time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC) }
	intr, err := New(WithClock(clock), WithRandom(bytes.NewReader(make([]byte, 64))), WithMaxResultSize(64),
		WithDefaultRegistry("corp.io", true), WithCacheSize(0), WithRegexCacheSize(0), WithMaxRandomLength(8), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		expr string
		want any
		err  func(error) bool
	}{
		{expr: "time_now_utc()", want: "2024-05-01T12:00:00Z"},
		{expr: "image_normalize('nginx')", want: "corp.io/nginx:latest"},
		{expr: "length(random('[a-z]{4}'))", want: 4.0},
		{expr: "pad_left('x', `100`, '-')", err: func(err error) bool { return errors.Is(err, ErrTooLarge) }},
		{expr: "divide(`1`, `0`)", err: func(err error) bool { return strings.HasPrefix(err.Error(), "JMESPath function 'divide': ") }},
		{expr: "nope(@)", err: func(err error) bool { var ce *CompileError; return errors.As(err, &ce) }},
	} {
		q, err := intr.Compile(tt.expr)
		var got any
		if err == nil {
			if q.String() != tt.expr {
				t.Errorf("String() = %q", q.String())
			}
			got, err = q.Search(nil)
		}
		if tt.err != nil {
			if err == nil || !tt.err(err) {
				t.Errorf("%s: error %v of the wrong kind", tt.expr, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s = %v, %v; want %v", tt.expr, got, err, tt.want)
		}
	}
	if _, err := intr.Search("a", map[string]any{"a": json.Number("x")}); err == nil || err.Error() != `invalid input data at a: invalid number "x"` {
		t.Errorf("Search of an invalid number: %v, want an error naming the value", err)
	}
	if _, err := New(WithCacheSize(-1)); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("New(WithCacheSize(-1)) = %v, want ErrInvalidOption", err)
	}
	fns := intr.Functions()
	if len(fns) < 80 || !strings.HasPrefix(fns[0].Signature(), fns[0].Name+"(") {
		t.Errorf("Functions: %d, first %v", len(fns), fns[0])
	}
}
