package generate

import (
	"context"
	"errors"
	"sync"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// Queue is a source of UpdateRequests for Run.
type Queue interface {
	// Next blocks until an UpdateRequest is available and returns it, or
	// returns an error when ctx is done or the queue is closed.
	Next(ctx context.Context) (*api.UpdateRequest, error)
}

// ErrQueueClosed is returned by a closed MemoryQueue.
var ErrQueueClosed = errors.New("update request queue closed")

// MemoryQueue is a bounded in-memory FIFO of UpdateRequests. It is the
// engine's UpdateRequestQueue (the engine enqueues at admission) and Run's
// Queue at the same time. It is safe for concurrent use.
type MemoryQueue struct {
	ch   chan *api.UpdateRequest
	done chan struct{}
	once sync.Once
}

var (
	_ engine.UpdateRequestQueue = (*MemoryQueue)(nil)
	_ Queue                     = (*MemoryQueue)(nil)
)

// NewMemoryQueue returns a queue holding up to capacity requests (at least
// one).
func NewMemoryQueue(capacity int) *MemoryQueue {
	if capacity < 1 {
		capacity = 1
	}
	return &MemoryQueue{ch: make(chan *api.UpdateRequest, capacity), done: make(chan struct{})}
}

// Enqueue adds a request, waiting for room while ctx allows.
func (q *MemoryQueue) Enqueue(ctx context.Context, ur *api.UpdateRequest) error {
	if ur == nil {
		return errors.New("nil update request")
	}
	select {
	case <-q.done:
		return ErrQueueClosed
	default:
	}
	select {
	case q.ch <- ur:
		return nil
	case <-q.done:
		return ErrQueueClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Next implements Queue.
func (q *MemoryQueue) Next(ctx context.Context) (*api.UpdateRequest, error) {
	select {
	case ur := <-q.ch:
		return ur, nil
	default:
	}
	select {
	case ur := <-q.ch:
		return ur, nil
	case <-q.done:
		return nil, ErrQueueClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Len returns the number of queued requests.
func (q *MemoryQueue) Len() int { return len(q.ch) }

// Close closes the queue: Enqueue fails from then on and Next fails once
// the requests still queued are drained. Closing twice is harmless.
func (q *MemoryQueue) Close() { q.once.Do(func() { close(q.done) }) }
