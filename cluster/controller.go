package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

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
	// Generate are options of the generate controller (retries...).
	Generate []generate.Option
	// Report are the options of the reports (clock, source...); the clock
	// defaults to time.Now.
	Report report.Options
	// StateConfigMap is the ConfigMap, in the host's namespace, where the
	// leader records the version of each policy it has applied (default
	// DefaultStateConfigMap), so that a new leader applies the policy
	// changes made while none ran.
	StateConfigMap string
}

// Controller is the background side of gavel in a cluster: it drains the
// durable UpdateRequest queue with a generate.Controller, applies policy
// changes and edits of generated resources and of clone sources through
// the generate controller's handlers (upstream's synchronize), and keeps
// the policy reports (Reporter.Run). Run it
// on the leader only (Host.RunLeader); every replica builds one so that a
// new leader starts at once.
type Controller struct {
	h     *Host
	src   *PolicySource
	gen   *generate.Controller
	rep   *Reporter
	sched *Scheduler
	opts  ControllerOptions

	// polMu orders the policy changes of a leader: the replay when it
	// starts leading, then each change; state is the durable record of the
	// applied policies (controller_state.go).
	polMu sync.Mutex
	state policyState

	mu      sync.Mutex
	leadCtx context.Context // nil when not leading
	watched map[schema.GroupVersionResource]bool
	sources map[schema.GroupVersionResource]bool
	dynInf  dynamicinformer.DynamicSharedInformerFactory // generated resources
	srcInf  dynamicinformer.DynamicSharedInformerFactory // clone sources
	// gpolKinds are the kinds GeneratingPolicies generate, as the
	// generate controller learns them (generate.WithDownstreamKinds):
	// watched like the kinds of generate rules
	gpolKinds map[[2]string]bool
}

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
	if opts.StateConfigMap == "" {
		opts.StateConfigMap = DefaultStateConfigMap
	}
	c := &Controller{h: h, src: src, opts: opts, gpolKinds: map[[2]string]bool{}}
	gopts := append(slices.Clip(opts.Generate), generate.WithQueue(h.queue), generate.WithDownstreamKinds(c.downstreamKind))
	c.gen = generate.NewController(src.Set(), h.client, gopts...)
	c.rep = NewReporter(h, src, opts.Report)
	c.sched = NewScheduler(h, src, SchedulerOptions{})
	src.Subscribe(c.policyChanged)
	return c
}

// Generate returns the generate controller.
func (c *Controller) Generate() *generate.Controller { return c.gen }

// Reporter returns the reporter of the background scans.
func (c *Controller) Reporter() *Reporter { return c.rep }

// policyChanged runs on every change of the serving set: the leader
// applies it (synchronize, generateExisting, deleted rules) through the
// generate controller's OnPolicyUpdate and OnPolicyDelete, and records the
// version it applied.
func (c *Controller) policyChanged(ch PolicyChange) {
	c.polMu.Lock()
	defer c.polMu.Unlock()
	c.mu.Lock()
	ctx := c.leadCtx
	c.mu.Unlock()
	if ctx == nil || ctx.Err() != nil || c.state == nil {
		c.gen.SetPolicies(ch.Set)
		return
	}
	changes := map[string]*policyRecord{}
	var urs []*api.UpdateRequest
	var err error
	switch {
	case ch.New != nil:
		k := stateKey(policyID(ch.New.Kind(), ch.New.Key()))
		rec, had := c.state[k]
		urs, err = c.apply(ctx, ch.New, ch.Old, rec, had)
		if rerr := c.recordApplied(ch.New, rec, had, changes); rerr != nil {
			err = errors.Join(err, rerr)
		}
	case ch.Old != nil:
		urs, err = c.gen.OnPolicyDelete(ctx, ch.Old)
		if _, had := c.state[stateKey(policyID(ch.Old.Kind(), ch.Old.Key()))]; had {
			changes[stateKey(policyID(ch.Old.Kind(), ch.Old.Key()))] = nil
		}
	}
	c.gen.SetPolicies(ch.Set)
	c.handled("policy change", urs, err)
	if ctx.Err() == nil {
		if err := c.commit(ctx, changes); err != nil {
			c.h.logf("policy change: %v", err)
		}
	}
	c.watchDownstream(ctx, ch.Set)
}

// handled logs what an event handler of the generate controller did: the
// policy handlers process the UpdateRequests they build themselves, the
// others put them in the durable queue.
func (c *Controller) handled(what string, urs []*api.UpdateRequest, err error) {
	if err != nil {
		c.h.logf("%s: %v", what, err)
	}
	for _, ur := range urs {
		if ur.Status.State == api.URFailed {
			c.h.logf("%s: policy %s: %s", what, ur.Spec.Policy, ur.Status.Message)
		}
	}
}

// Run does the leader's work until ctx is done: first the policy changes
// made while no leader ran (from the record in StateConfigMap), then
// UpdateRequests, watches of generated resources and clone sources,
// background scans.
func (c *Controller) Run(ctx context.Context) {
	if !c.src.WaitForSync(ctx) {
		return
	}
	c.gen.SetPolicies(c.src.Set())
	c.mu.Lock()
	c.leadCtx = ctx
	c.watched = map[schema.GroupVersionResource]bool{}
	c.sources = map[schema.GroupVersionResource]bool{}
	c.dynInf = dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.h.dyn, 0, metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.LabelSelector = generate.LabelPolicyName })
	c.srcInf = dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.h.dyn, 0, metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.LabelSelector = generate.LabelCloneSource })
	c.mu.Unlock()
	c.src.SetReportStatus(true)
	defer func() {
		c.src.SetReportStatus(false)
		c.mu.Lock()
		c.leadCtx = nil
		c.mu.Unlock()
		c.polMu.Lock()
		c.state = nil
		c.polMu.Unlock()
	}()
	// the snapshot is taken before polMu: PolicySource calls policyChanged
	// with its own lock held, which Errors takes
	set, broken := c.src.Set(), c.src.Errors()
	c.polMu.Lock()
	if err := c.replay(ctx, set, broken); err != nil {
		c.h.logf("applying the policy changes made while no controller ran: %v", err)
	}
	c.polMu.Unlock()
	c.watchDownstream(ctx, c.src.Set())
	// the kinds the GeneratingPolicies generate, for their informers
	if err := c.gen.Restore(ctx); err != nil {
		c.h.logf("generating policies: %v", err)
	}

	var wg sync.WaitGroup
	wg.Go(func() { c.sched.Run(ctx) })
	wg.Go(func() { c.h.queue.Drain(ctx, c.gen, c.opts.Workers) })
	if c.opts.ScanInterval > 0 {
		wg.Go(func() { c.rep.Run(ctx, c.opts.ScanInterval) })
	}
	<-ctx.Done()
	c.dynInf.Shutdown()
	c.srcInf.Shutdown()
	wg.Wait()
}

// watchDownstream starts informers on the kinds the generate rules of set
// create, labelled as generated, so that an edit or a deletion of a
// synchronized downstream resource is reverted; and on the kinds they
// clone, labelled as clone sources (the controller labels a source when it
// first clones it), so that a change of a source reaches its copies.
func (c *Controller) watchDownstream(ctx context.Context, set *engine.PolicySet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dynInf == nil {
		return
	}
	started := false
	for _, p := range set.Policies() {
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
				gvr, ok := c.resourceOf(s.APIVersion, s.Kind)
				if !ok || c.watched[gvr] {
					continue
				}
				c.watched[gvr] = true
				inf := c.dynInf.ForResource(gvr).Informer()
				_, _ = inf.AddEventHandler(changeHandler(func(old, cur map[string]any) {
					c.downstreamChanged(ctx, old, cur)
				}))
				started = true
			}
		}
	}
	for k := range c.gpolKinds {
		started = c.watchKind(ctx, k[0], k[1]) || started
	}
	if started {
		c.dynInf.Start(ctx.Done())
	}
	c.watchSources(ctx, set)
}

// downstreamKind is told each kind a GeneratingPolicy generates: it is
// watched from then on (and by the next leaders of this process).
func (c *Controller) downstreamKind(apiVersion, kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gpolKinds[[2]string{apiVersion, kind}] = true
	if c.dynInf == nil || c.leadCtx == nil {
		return
	}
	if c.watchKind(c.leadCtx, apiVersion, kind) {
		c.dynInf.Start(c.leadCtx.Done())
	}
	// a kind that is also a clone source's (clones are of their
	// source's kind)
	c.watchSource(c.leadCtx, apiVersion, kind)
	c.srcInf.Start(c.leadCtx.Done())
}

// watchKind starts watching the downstream objects of a kind, and reports
// whether it started an informer; c.mu is held.
func (c *Controller) watchKind(ctx context.Context, apiVersion, kind string) bool {
	gvr, ok := c.resourceOf(apiVersion, kind)
	if !ok || c.watched[gvr] {
		return false
	}
	c.watched[gvr] = true
	_, _ = c.dynInf.ForResource(gvr).Informer().AddEventHandler(changeHandler(func(old, cur map[string]any) {
		c.downstreamChanged(ctx, old, cur)
	}))
	return true
}

// changeHandler calls changed with the old and new object of each update
// that changes an object's resourceVersion, with the old object and nil
// for each deletion, and with the object as old and new for each object of
// the informer's initial list: a change made while no controller watched
// is handled as an update.
func changeHandler(changed func(old, cur map[string]any)) cache.ResourceEventHandlerDetailedFuncs {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if u, ok := obj.(*unstructured.Unstructured); ok && initial {
				changed(u.Object, u.Object)
			}
		},
		UpdateFunc: func(old, cur any) {
			ou, _ := old.(*unstructured.Unstructured)
			nu, _ := cur.(*unstructured.Unstructured)
			if ou == nil || nu == nil || ou.GetResourceVersion() == nu.GetResourceVersion() {
				return
			}
			changed(ou.Object, nu.Object)
		},
		DeleteFunc: func(old any) {
			if d, ok := old.(cache.DeletedFinalStateUnknown); ok {
				old = d.Obj
			}
			if ou, ok := old.(*unstructured.Unstructured); ok {
				changed(ou.Object, nil)
			}
		},
	}
}

// watchSources starts the informers of clone sources; c.mu is held.
func (c *Controller) watchSources(ctx context.Context, set *engine.PolicySet) {
	started := false
	for _, p := range set.Policies() {
		for _, r := range p.Rules() {
			g := r.Generation
			if g == nil {
				continue
			}
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
			for _, k := range kinds {
				c.watchSource(ctx, k[0], k[1])
				started = true
			}
		}
	}
	// GeneratingPolicies clone objects of the kinds they generate
	for k := range c.gpolKinds {
		c.watchSource(ctx, k[0], k[1])
		started = true
	}
	if started {
		c.srcInf.Start(ctx.Done())
	}
}

// watchSource starts watching the clone sources of a kind; c.mu is held.
func (c *Controller) watchSource(ctx context.Context, apiVersion, kind string) {
	gvr, ok := c.resourceOf(apiVersion, kind)
	if !ok || c.sources[gvr] {
		return
	}
	c.sources[gvr] = true
	_, _ = c.srcInf.ForResource(gvr).Informer().AddEventHandler(changeHandler(func(old, cur map[string]any) {
		c.sourceChanged(ctx, old, cur)
	}))
}

// sourceChanged and downstreamChanged put the UpdateRequests of an event
// in the durable queue (generate.WithQueue), where equal ones coalesce.
func (c *Controller) sourceChanged(ctx context.Context, old, cur map[string]any) {
	urs, err := c.gen.OnSourceChange(ctx, old, cur)
	c.handled("clone source change", urs, err)
}

func (c *Controller) downstreamChanged(ctx context.Context, old, cur map[string]any) {
	urs, err := c.gen.OnDownstreamChange(ctx, old, cur)
	c.handled("downstream change", urs, err)
}

func (c *Controller) resourceOf(apiVersion, kind string) (schema.GroupVersionResource, bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionResource{}, false
	}
	if strings.Contains(kind, "*") {
		return schema.GroupVersionResource{}, false
	}
	m, err := c.h.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: kind}, gv.Version)
	if err != nil {
		c.h.logf("generated kind %s %s: %v", apiVersion, kind, err)
		return schema.GroupVersionResource{}, false
	}
	return m.Resource, true
}
