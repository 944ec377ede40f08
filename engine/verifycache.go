package engine

import (
	"container/list"
	"sync"
	"time"
)

// verifyCache keeps successful verification outcomes by image digest and
// attestor (the key), for a TTL, at most max of them (the least recently
// used goes first). Concurrent verifications of one key are made once
// (flightGroup). It is safe for concurrent use.
type verifyCache struct {
	now     func() time.Time
	ttl     time.Duration
	max     int
	enabled bool

	mu    sync.Mutex
	items map[string]*list.Element
	lru   list.List // front: most recently used
	group flightGroup[verifyOutcome]
}

type verifyCacheEntry struct {
	key     string
	expires time.Time
	value   verifyOutcome
}

// verifyOutcome is what a verification gives: the verified statements for
// attestations (nil for signatures).
type verifyOutcome struct {
	statements []map[string]any
}

func newVerifyCache(o ImageVerifyCacheOptions, now func() time.Time) *verifyCache {
	c := &verifyCache{now: now, ttl: o.TTL, max: o.MaxEntries, enabled: !o.Disabled, items: map[string]*list.Element{}}
	if c.ttl == 0 {
		c.ttl = 60 * time.Minute
	}
	if c.max == 0 {
		c.max = 1000
	}
	return c
}

func (c *verifyCache) get(key string) (verifyOutcome, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return verifyOutcome{}, false
	}
	e := el.Value.(*verifyCacheEntry)
	if !c.now().Before(e.expires) {
		c.lru.Remove(el)
		delete(c.items, key)
		return verifyOutcome{}, false
	}
	c.lru.MoveToFront(el)
	return e.value, true
}

func (c *verifyCache) put(key string, v verifyOutcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	expires := c.now().Add(c.ttl)
	if el, ok := c.items[key]; ok {
		e := el.Value.(*verifyCacheEntry)
		e.value, e.expires = v, expires
		c.lru.MoveToFront(el)
		return
	}
	c.items[key] = c.lru.PushFront(&verifyCacheEntry{key: key, expires: expires, value: v})
	for c.lru.Len() > c.max {
		last := c.lru.Back()
		c.lru.Remove(last)
		delete(c.items, last.Value.(*verifyCacheEntry).key)
	}
}

// len returns the number of entries (expired ones included).
func (c *verifyCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// do returns the cached outcome of key or runs verify once for all
// concurrent callers of key; use false bypasses the cache (not the
// coalescing). Only successes are kept.
func (c *verifyCache) do(key string, use bool, verify func() (verifyOutcome, error)) (verifyOutcome, error) {
	use = use && c.enabled
	if use {
		if v, ok := c.get(key); ok {
			return v, nil
		}
	}
	v, err := c.group.do(key, func() (verifyOutcome, error) {
		if use {
			// a caller that finished while this one waited for the group
			if v, ok := c.get(key); ok {
				return v, nil
			}
		}
		v, err := verify()
		if err == nil && c.enabled {
			c.put(key, v)
		}
		return v, err
	})
	if err != nil {
		return verifyOutcome{}, err
	}
	return v, nil
}
