package engine_test

import (
	"testing"
	"time"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/jmespath"
)

// TestEngineJMESPath: the interpreter Engine.JMESPath returns has the
// engine's clock, JMESPath options and size limit.
func TestEngineJMESPath(t *testing.T) {
	clock := func() time.Time { return time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC) }
	limits := engine.DefaultLimits()
	limits.MaxJMESPathResultBytes = 64
	eng, err := engine.New(engine.WithClock(clock), engine.WithLimits(limits),
		engine.WithJMESPathOptions(jmespath.WithDefaultRegistry("corp.io")))
	if err != nil {
		t.Fatal(err)
	}
	jp := eng.JMESPath()
	if jp != eng.JMESPath() {
		t.Error("JMESPath built twice")
	}
	for expr, want := range map[string]any{
		"time_now_utc()":           "2024-05-01T12:00:00Z",
		"image_normalize('nginx')": "corp.io/nginx:latest",
	} {
		if got, err := jp.Search(expr, nil); err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", expr, got, err, want)
		}
	}
	if _, err := jp.Search("pad_left('x', `100`, '-')", nil); err == nil {
		t.Error("the engine's size limit does not hold")
	}
}
