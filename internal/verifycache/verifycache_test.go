package verifycache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type ctxKey struct{}

// gate is a verification that waits until released or cancelled, and
// counts its calls.
type gate struct {
	calls     atomic.Int64
	started   chan struct{} // one token per call
	release   chan struct{}
	cancelled chan error // the verification's context error, once cancelled
	values    chan any   // the value of ctxKey the verification saw
}

func newGate() *gate {
	return &gate{started: make(chan struct{}, 16), release: make(chan struct{}), cancelled: make(chan error, 16), values: make(chan any, 16)}
}

func (g *gate) verify(ctx context.Context) (string, error) {
	g.calls.Add(1)
	g.values <- ctx.Value(ctxKey{})
	g.started <- struct{}{}
	select {
	case <-g.release:
		return "verified", nil
	case <-ctx.Done():
		g.cancelled <- ctx.Err()
		return "", ctx.Err()
	}
}

// waitWaiters waits until key has n callers waiting.
func waitWaiters[V any](t *testing.T, c *Cache[V], key string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		cl := c.calls[key]
		got := 0
		if cl != nil {
			got = cl.waiters
		}
		c.mu.Unlock()
		if got == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%s: %d waiters never came", key, n)
}

// TestCallerTimesOut: the first caller's context ends while others wait
// for the same key; it alone gets its error, the verification goes on
// (its context carries the first caller's values, not its deadline) and
// the others get its outcome, which is kept.
func TestCallerTimesOut(t *testing.T) {
	c := New[string](Options{})
	g := newGate()
	first, cancelFirst := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "first"))
	type result struct {
		v   string
		err error
	}
	firstDone := make(chan result, 1)
	go func() {
		v, err := c.Do(first, "k", true, g.verify)
		firstDone <- result{v, err}
	}()
	<-g.started
	var wg sync.WaitGroup
	others := make([]result, 5)
	for i := range others {
		wg.Go(func() {
			v, err := c.Do(context.Background(), "k", true, g.verify)
			others[i] = result{v, err}
		})
	}
	waitWaiters(t, c, "k", 6)
	cancelFirst()
	if r := <-firstDone; r.v != "" || !errors.Is(r.err, context.Canceled) {
		t.Errorf("first caller: %q, %v; want its own context's error", r.v, r.err)
	}
	select {
	case err := <-g.cancelled:
		t.Fatalf("the verification was cancelled (%v) while others waited", err)
	default:
	}
	close(g.release)
	wg.Wait()
	for i, r := range others {
		if r.v != "verified" || r.err != nil {
			t.Errorf("caller %d: %q, %v", i, r.v, r.err)
		}
	}
	if n := g.calls.Load(); n != 1 {
		t.Errorf("%d verifications, want 1", n)
	}
	if v := <-g.values; v != "first" {
		t.Errorf("the verification's context carries %v, want the first caller's values", v)
	}
	if v, err := c.Do(context.Background(), "k", true, g.verify); v != "verified" || err != nil || g.calls.Load() != 1 {
		t.Errorf("kept outcome: %q, %v after %d verifications", v, err, g.calls.Load())
	}
}

// TestEveryCallerLeaves: when the last waiting caller leaves, the
// verification is cancelled and nothing is kept; the next caller
// verifies again.
func TestEveryCallerLeaves(t *testing.T) {
	c := New[string](Options{})
	g := newGate()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if _, err := c.Do(ctx, "k", true, g.verify); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("got %v, want the caller's deadline", err)
			}
		})
	}
	wg.Wait()
	select {
	case err := <-g.cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("verification context: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the verification was not cancelled once nobody waited")
	}
	close(g.release)
	v, err := c.Do(context.Background(), "k", true, g.verify)
	if v != "verified" || err != nil {
		t.Errorf("next caller: %q, %v", v, err)
	}
	if n := g.calls.Load(); n != 2 {
		t.Errorf("%d verifications, want 2", n)
	}
}

// TestOutcomes: errors are not kept, successes are for the TTL on the
// injected clock, at most MaxEntries; use false verifies again but keeps
// the outcome; Disabled keeps nothing; a panic is an error.
func TestOutcomes(t *testing.T) {
	now := time.Unix(1000, 0)
	c := New[int](Options{MaxEntries: 2, TTL: time.Minute, Now: func() time.Time { return now }})
	ctx := context.Background()
	calls := 0
	verify := func(fail bool) func(context.Context) (int, error) {
		return func(context.Context) (int, error) {
			calls++
			if fail {
				return 0, errors.New("bad signature")
			}
			return calls, nil
		}
	}
	steps := []struct {
		name  string
		key   string
		use   bool
		fail  bool
		tick  time.Duration
		want  int
		calls int
	}{
		{"error", "a", true, true, 0, 0, 1},
		{"error not kept", "a", true, false, 0, 2, 2},
		{"kept", "a", true, false, 0, 2, 2},
		{"use false verifies", "a", false, false, 0, 3, 3},
		{"and keeps", "a", true, false, 0, 3, 3},
		{"within TTL", "a", true, false, 59 * time.Second, 3, 3},
		{"TTL over", "a", true, false, 2 * time.Second, 4, 4},
		{"b", "b", true, false, 0, 5, 5},
		{"c evicts a", "c", true, false, 0, 6, 6},
		{"a again", "a", true, false, 0, 7, 7},
	}
	for _, s := range steps {
		now = now.Add(s.tick)
		got, err := c.Do(ctx, s.key, s.use, verify(s.fail))
		if got != s.want || calls != s.calls || (err != nil) != s.fail {
			t.Errorf("%s: got %d, %v after %d calls; want %d after %d", s.name, got, err, calls, s.want, s.calls)
		}
	}
	if n := c.Len(); n != 2 {
		t.Errorf("Len %d, want 2", n)
	}
	off := New[int](Options{Disabled: true})
	calls = 0
	for range 3 {
		_, _ = off.Do(ctx, "a", true, verify(false))
	}
	if calls != 3 || off.Len() != 0 {
		t.Errorf("disabled: %d calls, %d kept", calls, off.Len())
	}
	_, err := c.Do(ctx, "p", true, func(context.Context) (int, error) { panic("boom") })
	if err == nil || !strings.Contains(err.Error(), "panicked: boom") {
		t.Errorf("panic: %v", err)
	}
}

// TestConcurrentKeys runs many callers on a few keys, some of them
// leaving early, under the race detector: each key is verified once while
// a caller waits, and no call is left behind.
func TestConcurrentKeys(t *testing.T) {
	c := New[string](Options{})
	var calls [4]atomic.Int64
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			k := i % 4
			ctx := context.Background()
			if i%10 == 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Millisecond)
				defer cancel()
			}
			v, err := c.Do(ctx, fmt.Sprint(k), true, func(ctx context.Context) (string, error) {
				calls[k].Add(1)
				select {
				case <-time.After(5 * time.Millisecond):
					return fmt.Sprint("v", k), nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			})
			if err == nil && v != fmt.Sprint("v", k) {
				t.Errorf("key %d: %q", k, v)
			}
			if err != nil && ctx.Err() == nil {
				t.Errorf("key %d: %v with a live context", k, err)
			}
		})
	}
	wg.Wait()
	for k := range calls {
		if n := calls[k].Load(); n < 1 || n > 11 { // one more per flight whose waiters all left
			t.Errorf("key %d verified %d times", k, n)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.calls) != 0 {
		t.Errorf("%d calls left", len(c.calls))
	}
}
