package cluster

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/generate"
	"github.com/gavelpolicy/gavel/report"
)

// ControllerOptions configure a Controller.
type ControllerOptions struct {
	// Workers process UpdateRequests concurrently (default 2).
	Workers int
	// ScanInterval is the period of the full background scans (default 1m;
	// negative: no reports). Between scans, resources are evaluated when
	// they are created or changed, and forgotten when deleted (Reporter.Run).
	ScanInterval time.Duration
	// Generate are options of the generate controller (retries...); the
	// host sets its observer (generate.WithObserver) to record events.
	Generate []generate.Option
	// Report are the options of the reports (clock, source...); the clock
	// defaults to time.Now.
	Report report.Options
	// ReportWritesPerSecond bounds the policy reports created, updated or
	// deleted a second (default 50; negative: no bound). There is one
	// report per resource, so a first scan of many resources writes many:
	// the bound leaves the client's rate to the other controllers, and the
	// reports beyond it are written in the next seconds, the oldest
	// changes first.
	ReportWritesPerSecond int
}

// defaultReportWrites is the default of
// ControllerOptions.ReportWritesPerSecond.
const defaultReportWrites = 50

// Controller is the background side of gavel in a cluster: it drains the
// durable UpdateRequest queue with a generate.Controller, applies policy
// changes and edits of generated resources and of clone sources through
// the generate controller's handlers (upstream's synchronize), and keeps
// the policy reports (Reporter.Run). Run it on the leader only
// (Host.RunLeader); every replica builds one so that a new leader starts
// at once.
//
// Its parts are controllers in client-go's sample-controller shape: the
// event handlers (policy changes, informers of generated resources and
// clone sources) only put keys in rate-limited queues; workers do the
// API calls, retrying failures with backoff (up to 10 times), and no API
// call is made under a lock. The leader records, per policy, the version
// it applied (a ConfigMap per policy, see stateConfigMapName), so that a
// new leader applies the changes made while none ran.
type Controller struct {
	h    *Host
	src  *PolicySource
	gen  *generate.Controller
	rep  *reporter
	opts ControllerOptions
	log  *slog.Logger

	mu   sync.Mutex
	lead *leadTerm // nil when not leading
	// gpolKinds are the kinds GeneratingPolicies generate, as the
	// generate controller learns them (generate.WithDownstreamKinds):
	// watched like the kinds of generate rules, and as clone sources
	gpolKinds map[[2]string]bool
	// sched runs the deleting policies on their schedules
	sched *Scheduler
}

// leadTerm is the state of one leadership.
type leadTerm struct {
	ctx      context.Context
	policies workqueue.TypedRateLimitingInterface[string]
	prev     map[string]*engine.Policy // the version serving before a change not processed yet, by key
	states   *stateStore
	gens     *changeWatcher // generated resources
	sources  *changeWatcher // clone sources
}

// watchKey is the key of the policies queue that makes the worker start
// the informers of the kinds the generate rules create and clone.
const watchKey = "\x00watch"

// NewController returns the controller of the policies of src. Call it
// before Host.Start.
func NewController(h *Host, src *PolicySource, opts ControllerOptions) *Controller {
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.ScanInterval == 0 {
		opts.ScanInterval = time.Minute
	}
	if opts.Report.Clock == nil {
		opts.Report.Clock = time.Now
	}
	if opts.ReportWritesPerSecond == 0 {
		opts.ReportWritesPerSecond = defaultReportWrites
	}
	c := &Controller{h: h, src: src, opts: opts, log: h.log.With("controller", "background"), gpolKinds: map[[2]string]bool{}}
	gopts := append(slices.Clip(opts.Generate), generate.WithQueue(h.queue), generate.WithDownstreamKinds(c.downstreamKind),
		generate.WithObserver(c.observeUpdateRequest))
	c.sched = NewScheduler(h, src, SchedulerOptions{})
	c.gen = generate.NewController(src.Set(), h.client, gopts...)
	c.rep = newReporter(h, src, opts.Report)
	c.rep.maxWrites = max(opts.ReportWritesPerSecond, 0) // one Write a second
	src.Subscribe(c.policyChanged)
	return c
}

// policyChanged is the policy source's handler: the generate controller
// sees the new set, and a leader queues the policy's key (with the
// version that served before, for a policy without record).
func (c *Controller) policyChanged(ch PolicyChange) {
	c.gen.SetPolicies(ch.Set)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lead == nil {
		return
	}
	if _, ok := c.lead.prev[ch.Key]; !ok {
		c.lead.prev[ch.Key] = ch.Old
	}
	c.lead.policies.Add(ch.Key)
	c.lead.policies.Add(watchKey)
}

// handled logs what an event handler of the generate controller did: the
// policy handlers process the UpdateRequests they build themselves, the
// others put them in the durable queue.
func (c *Controller) handled(what string, urs []*api.UpdateRequest, err error) {
	if err != nil {
		c.log.Error(what, "err", err)
	}
	for _, ur := range urs {
		if ur.Status.State == api.URFailed {
			c.log.Warn(what, "policy", ur.Spec.Policy, "message", ur.Status.Message)
		}
	}
}

// Run does the leader's work until ctx is done, and returns when every
// goroutine it started has stopped: first the policy changes made while
// no leader ran (each policy, and each recorded one, against its record),
// then UpdateRequests, watches of generated resources and clone sources,
// background scans.
func (c *Controller) Run(ctx context.Context) {
	if !c.src.WaitForSync(ctx) {
		return
	}
	c.gen.SetPolicies(c.src.Set())
	t := &leadTerm{ctx: ctx, prev: map[string]*engine.Policy{}, states: newStateStore(c),
		policies: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "policy-changes", MetricsProvider: c.h.metrics.queueMetrics()})}
	defer t.policies.ShutDown()
	t.gens = newChangeWatcher(c.h, "downstream", generate.LabelPolicyName, func(ctx context.Context, old, cur map[string]any) error {
		urs, err := c.gen.OnDownstreamChange(ctx, old, cur)
		c.handled("downstream change", urs, err)
		return err
	})
	t.sources = newChangeWatcher(c.h, "clone-sources", generate.LabelCloneSource, func(ctx context.Context, old, cur map[string]any) error {
		urs, err := c.gen.OnSourceChange(ctx, old, cur)
		c.handled("clone source change", urs, err)
		return err
	})
	defer t.states.shutdown()
	if !t.states.start(ctx) {
		return
	}
	migrated, err := t.states.migrate(ctx)
	if err != nil {
		c.log.Error("controller state", "err", err)
	}
	c.src.setReportStatus(true)
	defer c.src.setReportStatus(false)
	c.mu.Lock()
	c.lead = t
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.lead = nil
		c.mu.Unlock()
	}()
	// every policy serving, failing or recorded is checked against its
	// record: the changes made while no leader ran
	keys := append(append(keysOf(c.src.Errors()), t.states.keys()...), migrated...)
	for _, p := range c.src.Set().Policies() {
		keys = append(keys, idOf(p))
	}
	for _, k := range keys {
		t.policies.Add(k)
	}
	// the kinds the GeneratingPolicies generate, for their informers
	if err := c.gen.Restore(ctx); err != nil {
		c.log.Error("generating policies", "err", err)
	}
	t.policies.Add(watchKey)

	var wg sync.WaitGroup
	wg.Go(func() {
		<-ctx.Done()
		t.policies.ShutDown()
	})
	wg.Go(func() {
		for c.processPolicy(t) {
		}
	})
	wg.Go(func() { t.gens.run(ctx) })
	wg.Go(func() { t.sources.run(ctx) })
	wg.Go(func() { c.h.queue.Drain(ctx, c.gen, c.opts.Workers) })
	wg.Go(func() { c.sched.Run(ctx) })
	if c.opts.ScanInterval > 0 {
		wg.Go(func() { c.rep.Run(ctx, c.opts.ScanInterval) })
	}
	wg.Wait()
}

// processPolicy applies one policy's change (or starts the informers of
// new generated kinds), retrying failures with backoff.
func (c *Controller) processPolicy(t *leadTerm) bool {
	key, shutdown := t.policies.Get()
	if shutdown {
		return false
	}
	defer t.policies.Done(key)
	if key == watchKey {
		c.watchDownstream(t)
		t.policies.Forget(key)
		return true
	}
	c.mu.Lock()
	prev := t.prev[key]
	delete(t.prev, key)
	c.mu.Unlock()
	c.h.metrics.reconcile("policy-changes")
	err := c.syncPolicy(t.ctx, t.states, key, prev)
	switch {
	case err == nil || t.ctx.Err() != nil:
		t.policies.Forget(key)
	case t.policies.NumRequeues(key) < maxRetries:
		c.log.Warn("applying a policy change, will retry", "policy", key, "err", err)
		c.h.metrics.requeue("policy-changes", t.policies.NumRequeues(key))
		c.mu.Lock()
		if _, ok := t.prev[key]; !ok && prev != nil {
			t.prev[key] = prev
		}
		c.mu.Unlock()
		t.policies.AddRateLimited(key)
	default:
		c.log.Error("applying a policy change: giving up", "policy", key, "err", err)
		c.h.metrics.drop("policy-changes")
		t.policies.Forget(key)
	}
	return true
}

// watchDownstream starts informers on the kinds the generate rules of the
// serving set create, labelled as generated, so that an edit or a
// deletion of a synchronized downstream resource is reverted; and on the
// kinds they clone, labelled as clone sources (the controller labels a
// source when it first clones it), so that a change of a source reaches
// its copies.
func (c *Controller) watchDownstream(t *leadTerm) {
	c.mu.Lock()
	gpol := make([][2]string, 0, len(c.gpolKinds))
	for k := range c.gpolKinds {
		gpol = append(gpol, k)
	}
	c.mu.Unlock()
	for _, k := range gpol {
		// GeneratingPolicies clone objects of the kinds they generate
		if gvr, ok := c.resourceOf(k[0], k[1]); ok {
			t.gens.watch(t.ctx, gvr)
			t.sources.watch(t.ctx, gvr)
		}
	}
	for _, p := range c.src.Set().Policies() {
		for _, r := range p.Rules() {
			g := r.Generation
			if g == nil {
				continue
			}
			specs := []api.ResourceSpec{g.ResourceSpec}
			for _, f := range g.ForEachGeneration {
				specs = append(specs, f.ResourceSpec)
			}
			for _, s := range specs {
				if s.Kind == "" {
					continue
				}
				if gvr, ok := c.resourceOf(s.APIVersion, s.Kind); ok {
					t.gens.watch(t.ctx, gvr)
				}
			}
			for _, k := range cloneKinds(g) {
				if gvr, ok := c.resourceOf(k[0], k[1]); ok {
					t.sources.watch(t.ctx, gvr)
				}
			}
		}
	}
}

// downstreamKind is told each kind a GeneratingPolicy generates: it is
// watched from then on (and by the next leaders of this process).
func (c *Controller) downstreamKind(apiVersion, kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]string{apiVersion, kind}
	if c.gpolKinds[k] {
		return
	}
	c.gpolKinds[k] = true
	if c.lead != nil {
		c.lead.policies.Add(watchKey)
	}
}

// cloneKinds returns the apiVersion and kind of the sources a generate
// rule clones.
func cloneKinds(g *api.Generation) [][2]string {
	var kinds [][2]string
	if g.Clone != nil && g.Clone.Name != "" {
		kinds = append(kinds, [2]string{g.APIVersion, g.Kind})
	}
	if g.CloneList != nil {
		for _, k := range g.CloneList.Kinds {
			grp, ver, kind := splitKind(k)
			av := ver
			if grp != "" {
				av = grp + "/" + ver
			}
			kinds = append(kinds, [2]string{av, kind})
		}
	}
	return kinds
}

func (c *Controller) resourceOf(apiVersion, kind string) (schema.GroupVersionResource, bool) {
	if strings.Contains(kind, "*") {
		return schema.GroupVersionResource{}, false
	}
	m, err := c.h.client.Mapping(apiVersion, kind)
	if err != nil {
		c.log.Warn("a generated kind is not served", "apiVersion", apiVersion, "kind", kind, "err", err)
		return schema.GroupVersionResource{}, false
	}
	return m.Resource, true
}

// labelSelector selects the objects carrying a label.
func labelSelector(label string) func(*metav1.ListOptions) {
	return func(o *metav1.ListOptions) { o.LabelSelector = label }
}

// observeUpdateRequest records the events of a processed UpdateRequest
// (updateRequestEvents).
func (c *Controller) observeUpdateRequest(ur *api.UpdateRequest, results []engine.PolicyResult) {
	c.h.events.add(updateRequestEvents(ur, results)...)
}
