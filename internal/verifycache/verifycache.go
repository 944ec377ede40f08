// Package verifycache keeps the outcomes of image verifications (digest
// resolutions, signature checks, attestation fetches) by key, and makes
// concurrent verifications of one key once.
//
// The outcomes are kept in k8s.io/apimachinery's LRUExpireCache (a TTL
// and a bound on the entries, the least recently used going first). What
// the package adds is the coalescing that a shared verification needs
// when every caller has a deadline of its own: the verification runs on
// a context of its own, with the first caller's values but none of its
// callers' deadlines, and each caller waits on its own context. A caller
// whose context ends leaves, the verification goes on for the others,
// and it is cancelled once no caller waits for it (the next caller of
// the key starts it again). golang.org/x/sync/singleflight runs the
// function on the first caller's goroutine and context, which is what
// this package must not do: one request that times out would fail every
// request waiting on the same image.
package verifycache

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/cache"
)

// Options size a Cache.
type Options struct {
	// Disabled keeps no outcome (concurrent calls are still made once).
	Disabled bool
	// MaxEntries bounds the number of outcomes kept (default 1000).
	MaxEntries int
	// TTL is how long an outcome is kept (default 60 minutes).
	TTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Cache keeps successful outcomes of type V by key. It is safe for
// concurrent use.
type Cache[V any] struct {
	kept *cache.LRUExpireCache // nil when disabled
	ttl  time.Duration

	mu    sync.Mutex
	calls map[string]*call[V]
}

// call is one verification in flight.
type call[V any] struct {
	done    chan struct{} // closed once val and err are set
	val     V
	err     error
	waiters int                // callers waiting (under Cache.mu)
	cancel  context.CancelFunc // cancels the verification's context
}

type clock func() time.Time

func (c clock) Now() time.Time { return c() }

// New returns a Cache.
func New[V any](o Options) *Cache[V] {
	c := &Cache[V]{ttl: o.TTL, calls: map[string]*call[V]{}}
	if c.ttl <= 0 {
		c.ttl = 60 * time.Minute
	}
	if o.Disabled {
		return c
	}
	n := o.MaxEntries
	if n <= 0 {
		n = 1000
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	c.kept = cache.NewLRUExpireCacheWithClock(n, clock(now))
	return c
}

// Len returns the number of outcomes kept (expired ones included until
// they are read).
func (c *Cache[V]) Len() int {
	if c.kept == nil {
		return 0
	}
	return len(c.kept.Keys())
}

func (c *Cache[V]) get(key string) (V, bool) {
	if c.kept != nil {
		if v, ok := c.kept.Get(key); ok {
			return v.(V), true
		}
	}
	var zero V
	return zero, false
}

// Do returns the outcome kept for key (when use is set), or that of
// verify, which runs once for all the concurrent callers of key: in a
// goroutine of its own, on a context that carries ctx's values but not
// its deadline or cancellation, and that is cancelled when every caller
// has left. Each caller waits until verify returns or its own ctx ends
// (it then gets ctx's error). A successful outcome is kept, whatever
// use; errors are not. A panic in verify is returned as an error.
func (c *Cache[V]) Do(ctx context.Context, key string, use bool, verify func(context.Context) (V, error)) (V, error) {
	if use {
		if v, ok := c.get(key); ok {
			return v, nil
		}
	}
	c.mu.Lock()
	cl, ok := c.calls[key]
	if !ok {
		if use {
			// an outcome kept since the first look
			if v, ok := c.get(key); ok {
				c.mu.Unlock()
				return v, nil
			}
		}
		vctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		cl = &call[V]{done: make(chan struct{}), cancel: cancel}
		c.calls[key] = cl
		go c.run(vctx, key, cl, verify)
	}
	cl.waiters++
	c.mu.Unlock()
	select {
	case <-cl.done:
		c.mu.Lock()
		cl.waiters--
		c.mu.Unlock()
		return cl.val, cl.err
	case <-ctx.Done():
		c.mu.Lock()
		if cl.waiters--; cl.waiters == 0 {
			// nobody waits: the verification stops, and the next caller
			// of the key starts another
			cl.cancel()
			if c.calls[key] == cl {
				delete(c.calls, key)
			}
		}
		c.mu.Unlock()
		var zero V
		return zero, ctx.Err()
	}
}

// run makes the verification of one call.
func (c *Cache[V]) run(ctx context.Context, key string, cl *call[V], verify func(context.Context) (V, error)) {
	defer func() {
		if v := recover(); v != nil {
			var zero V
			cl.val, cl.err = zero, fmt.Errorf("image verification panicked: %v", v)
		}
		if cl.err == nil && c.kept != nil {
			c.kept.Add(key, cl.val, c.ttl)
		}
		c.mu.Lock()
		if c.calls[key] == cl {
			delete(c.calls, key)
		}
		c.mu.Unlock()
		cl.cancel()
		close(cl.done)
	}()
	cl.val, cl.err = verify(ctx)
}
