package generate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// DefaultMaxRetries is how many times a Failed UpdateRequest is retried
// before it is garbage collected, as upstream.
const DefaultMaxRetries = 3

// ErrRetriesExhausted is wrapped by Process's error for an UpdateRequest
// that still failed after its retries and was garbage collected.
var ErrRetriesExhausted = errors.New("update request failed after its retries and was garbage collected")

// ServerSideApplier is an optional capability of the Client: when a policy
// sets spec.useServerSideApply and the client implements it, downstream
// resources are written with Apply instead of Create and Update.
type ServerSideApplier interface {
	Apply(ctx context.Context, obj map[string]any, fieldManager string) (map[string]any, error)
}

// Option configures a Controller.
type Option func(*Controller)

// WithMaxRetries sets how many times a Failed request is retried (default
// 3; 0 disables retries).
func WithMaxRetries(n int) Option {
	return func(c *Controller) {
		if n >= 0 {
			c.maxRetries = n
		}
	}
}

// WithRetryDelay sets the wait before each retry (default none). The wait
// ends early when the context is done.
func WithRetryDelay(d time.Duration) Option {
	return func(c *Controller) {
		if d >= 0 {
			c.retryDelay = d
		}
	}
}

// WithWorkers sets how many requests Run processes concurrently (default 1).
func WithWorkers(n int) Option {
	return func(c *Controller) {
		if n > 0 {
			c.workers = n
		}
	}
}

// WithGarbageCollector sets a hook called with each request dropped after
// its retries.
func WithGarbageCollector(f func(*api.UpdateRequest)) Option {
	return func(c *Controller) { c.onGC = f }
}

// WithObserver sets a hook called with every UpdateRequest after it was
// processed (in its final state) and the rule results of the policy: a
// write that the client refused turns the rule's result into an error
// carrying the client's message.
func WithObserver(f func(ur *api.UpdateRequest, results []engine.PolicyResult)) Option {
	return func(c *Controller) { c.observer = f }
}

// WithQueue makes the handlers of object events (OnDownstreamChange,
// OnSourceChange, OnTriggerUpdate, OnTriggerDelete) put the requests they
// build on q, Pending, instead of processing them at once: a host with a
// durable queue (cluster.Queue) then loses no event when it stops between
// the event and its processing. The policy handlers (OnPolicyUpdate,
// OnPolicyDelete) still process at once: a host replays a policy change
// that it did not finish (cluster.Controller keeps a durable record).
func WithQueue(q engine.UpdateRequestQueue) Option {
	return func(c *Controller) { c.queue = q }
}

// WithDownstreamKinds sets a hook called with each kind the controller
// learns a GeneratingPolicy generates (once per policy and kind): a host
// that watches downstream resources starts watching the kind. The hook
// must not block.
func WithDownstreamKinds(f func(apiVersion, kind string)) Option {
	return func(c *Controller) { c.onKind = f }
}

// Controller processes UpdateRequests through the host Client. It is safe
// for concurrent use; one UpdateRequest must not be processed concurrently
// with itself.
type Controller struct {
	client     engine.Client
	maxRetries int
	retryDelay time.Duration
	workers    int
	onGC       func(*api.UpdateRequest)
	observer   func(*api.UpdateRequest, []engine.PolicyResult)
	queue      engine.UpdateRequestQueue // nil: handlers process at once
	onKind     func(apiVersion, kind string)

	mu  sync.RWMutex
	set *engine.PolicySet

	// gpolKinds are the downstream kinds of each GeneratingPolicy (by
	// key) the controller has seen (gpol.go)
	kindsMu   sync.Mutex
	gpolKinds map[string]map[kindRef]bool
}

// NewController returns a controller for the policies of set (an empty
// set is fine; it must not be nil) that reads and writes the cluster
// through client, usually the engine's (engine.WithClient); without one
// Process fails with engine.ErrNotConfigured.
func NewController(set *engine.PolicySet, client engine.Client, opts ...Option) *Controller {
	c := &Controller{client: client, set: set, maxRetries: DefaultMaxRetries, workers: 1, gpolKinds: map[string]map[kindRef]bool{}}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// Policies returns the controller's current policies.
func (c *Controller) Policies() *engine.PolicySet {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.set
}

// SetPolicies replaces the controller's policies without any
// synchronization (OnPolicyUpdate and OnPolicyDelete also update them).
//
// The controller and admission must use the same policies: a host that
// installs a new set calls OnPolicyUpdate or OnPolicyDelete for each
// changed policy (or SetPolicies), then serves admission from Policies(),
// never from a set it kept from before, which still holds the old
// policies.
func (c *Controller) SetPolicies(set *engine.PolicySet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set = set
}

// policy returns the current ClusterPolicy or Policy with the key, or nil.
func (c *Controller) policy(key string) *engine.Policy { return c.policyOf(key, false) }

// policyOf returns the current policy with the key, or nil: a
// GeneratingPolicy (or NamespacedGeneratingPolicy) when gpol, else a
// ClusterPolicy or Policy (the kinds may share names).
func (c *Controller) policyOf(key string, gpol bool) *engine.Policy {
	set := c.Policies()
	if set == nil {
		return nil
	}
	for _, p := range set.Policies() {
		if p.Key() == key && isGenerating(p) == gpol {
			return p
		}
	}
	return nil
}

// replacePolicy puts p in place of the policy with the same kind and key
// (or adds it); with remove, the policy is dropped instead.
func (c *Controller) replacePolicy(p *engine.Policy, remove bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set == nil {
		return errors.New("update request controller: no policy set (give NewController an empty one)")
	}
	var out []*engine.Policy
	found := false
	for _, x := range c.set.Policies() {
		if x.Key() == p.Key() && api.KindOf(x.Source()) == api.KindOf(p.Source()) {
			found = true
			if !remove {
				out = append(out, p)
			}
			continue
		}
		out = append(out, x)
	}
	if !found && !remove {
		out = append(out, p)
	}
	c.set = c.set.Engine().NewPolicySet(out...)
	return nil
}

func (c *Controller) engine() *engine.Engine {
	if set := c.Policies(); set != nil {
		return set.Engine()
	}
	return nil
}

// Process processes one UpdateRequest: Pending, then Completed, Skip or
// Failed, retrying a failure up to the configured number of times. The
// request's Status is updated in place (Status.RetryCount counts the
// retries). Process returns nil for Completed and Skip, and for a request
// that still failed after its retries an error wrapping ErrRetriesExhausted
// and the last failure (the request is then garbage collected).
func (c *Controller) Process(ctx context.Context, ur *api.UpdateRequest) error {
	if ur == nil {
		return errors.New("nil update request")
	}
	if c.client == nil {
		return fmt.Errorf("update request controller: client %w", engine.ErrNotConfigured)
	}
	for {
		results, err := c.processOnce(ctx, ur)
		if err == nil {
			c.observe(ur, results)
			return nil
		}
		if ctx.Err() != nil {
			c.observe(ur, results)
			return ctx.Err()
		}
		if ur.Status.RetryCount >= c.maxRetries {
			c.observe(ur, results)
			if c.onGC != nil {
				c.onGC(ur)
			}
			return fmt.Errorf("%w: %w", ErrRetriesExhausted, err)
		}
		ur.Status.RetryCount++
		if c.retryDelay > 0 {
			t := time.NewTimer(c.retryDelay)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
	}
}

func (c *Controller) observe(ur *api.UpdateRequest, results []engine.PolicyResult) {
	if c.observer != nil {
		c.observer(ur, results)
	}
}

// ProcessAll processes requests in order (for instance those an
// in-memory cluster queued) and returns their errors joined.
func (c *Controller) ProcessAll(ctx context.Context, urs []*api.UpdateRequest) error {
	var errs []error
	for _, ur := range urs {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		if err := c.Process(ctx, ur); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Run takes requests from queue and processes them until ctx is done (it
// then returns ctx's error) or the queue fails (it returns that error).
// Failures of single requests are recorded on them and do not stop Run.
// Every worker goroutine has returned when Run returns.
func (c *Controller) Run(ctx context.Context, queue Queue) error {
	if queue == nil {
		return errors.New("update request controller: nil queue")
	}
	// the first worker whose queue fails stops the others: the first
	// cause given to stop is the one Cause reports
	wctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() {
			for {
				ur, err := queue.Next(wctx)
				if err != nil {
					stop(err)
					return
				}
				_ = c.Process(wctx, ur)
			}
		})
	}
	wg.Wait()
	err := context.Cause(wctx) // ctx's cause when ctx stopped them first
	if ctxErr := ctx.Err(); ctxErr != nil && (err == context.Cause(ctx) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return ctxErr
	}
	return err
}
