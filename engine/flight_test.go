package engine

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestFlightGroupSharesOneCall(t *testing.T) {
	var g flightGroup[int]
	var calls atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{})
	var wg sync.WaitGroup
	results := make([]int, 8)
	wg.Add(1)
	go func() {
		defer wg.Done()
		results[0], _ = g.do("k", func() (int, error) {
			calls.Add(1)
			close(started)
			<-release
			return 42, nil
		})
	}()
	<-started
	for i := 1; i < len(results); i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i], _ = g.do("k", func() (int, error) { calls.Add(1); return 0, nil })
		}(i)
	}
	// the waiters may not all be waiting yet: those that come after the
	// call ends make their own, which is what singleflight does too
	close(release)
	wg.Wait()
	if results[0] != 42 {
		t.Fatalf("first call got %d", results[0])
	}
	for i, r := range results {
		if r != 42 && r != 0 {
			t.Errorf("caller %d got %d", i, r)
		}
	}
	if n := calls.Load(); n < 1 || int(n) > len(results) {
		t.Errorf("%d calls", n)
	}
	// a later call runs again
	if v, err := g.do("k", func() (int, error) { return 7, errors.New("x") }); v != 7 || err == nil {
		t.Errorf("got %d %v", v, err)
	}
}

func TestFlightGroupPanic(t *testing.T) {
	var g flightGroup[int]
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic must reach the caller")
			}
		}()
		_, _ = g.do("k", func() (int, error) { panic("boom") })
	}()
	if v, err := g.do("k", func() (int, error) { return 1, nil }); v != 1 || err != nil {
		t.Errorf("after a panic: %d %v", v, err)
	}
}
