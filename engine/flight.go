package engine

import (
	"errors"
	"sync"
)

// errFlightPanicked is the error the waiters of a call that panicked get
// (the caller that made the call panics).
var errFlightPanicked = errors.New("the shared call panicked")

// flightGroup makes one call per key for concurrent callers: those that
// come while a call for their key runs wait for it and share its result
// (what golang.org/x/sync's singleflight does, for the engine's one use:
// image verifications). The zero value is ready.
type flightGroup[V any] struct {
	mu    sync.Mutex
	calls map[string]*flightCall[V]
}

type flightCall[V any] struct {
	done chan struct{}
	val  V
	err  error
}

// do runs fn for key, or waits for the call of key that runs, and returns
// its result.
func (g *flightGroup[V]) do(key string, fn func() (V, error)) (V, error) {
	g.mu.Lock()
	if c, ok := g.calls[key]; ok {
		g.mu.Unlock()
		<-c.done
		return c.val, c.err
	}
	if g.calls == nil {
		g.calls = map[string]*flightCall[V]{}
	}
	c := &flightCall[V]{done: make(chan struct{})}
	g.calls[key] = c
	g.mu.Unlock()
	finished := false
	defer func() {
		if !finished {
			c.err = errFlightPanicked
		}
		g.mu.Lock()
		delete(g.calls, key)
		g.mu.Unlock()
		close(c.done)
	}()
	c.val, c.err = fn()
	finished = true
	return c.val, c.err
}
