package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// Condition reasons written to a policy's Ready condition.
const (
	ReasonSucceeded = "Succeeded"
	ReasonFailed    = "Failed"
	// EventReasonPolicyError is the reason of the Warning event recorded
	// for a policy that does not compile.
	EventReasonPolicyError = "PolicyError"
)

// PolicyChange tells a PolicySource's subscribers about one policy: Old is
// the compiled policy that was serving (nil for a new policy), New the one
// serving now (nil when the policy was deleted), Set the policy set now
// serving. Key is the policy's key (namespace/name, or name).
type PolicyChange struct {
	Key      string
	Old, New *engine.Policy
	Set      *engine.PolicySet
}

// snapshot is what a PolicySource serves at one time: every policy, and
// the subsets each webhook path serves.
type snapshot struct {
	all *engine.PolicySet
	// by failure policy, without the policies that have webhooks of
	// their own
	fail, ignore *engine.PolicySet
	// the policies with webhooks of their own (match conditions), by key
	fine map[string]*engine.PolicySet
}

// PolicySource keeps a PolicySet compiled from the cluster's ClusterPolicy
// and Policy objects, in client-go's sample-controller shape: the
// informers' handlers only put the policy's key in a queue; a worker
// compiles the policy and swaps the set atomically, so that a request is
// answered by one set from start to end. A policy that does not compile
// is reported (with PolicySourceOptions.ReportStatus: its Ready condition
// set to False with the reason, and a Warning event, written by a second
// queue's worker with rate-limited retries) and the version that was
// serving before keeps serving. The workers run from Host.Start to the
// end of its context. It is safe for concurrent use.
type PolicySource struct {
	h   *Host
	eng *engine.Engine

	cur atomic.Pointer[snapshot]

	queue   workqueue.TypedRateLimitingInterface[string] // policy keys to compile
	status  workqueue.TypedRateLimitingInterface[string] // policy keys whose status to write
	infs    map[bool]cache.SharedIndexInformer           // by namespaced
	regs    []cache.ResourceEventHandlerRegistration
	synced  chan struct{}
	syncKey string

	mu        sync.Mutex
	good      map[string]*engine.Policy
	errs      map[string]error
	compiled  map[string]string // the generation and annotations of the version compiled, by key
	listeners []func(PolicyChange)
	writeStat bool
}

// PolicySourceOptions configure NewPolicySource.
type PolicySourceOptions struct {
	// ReportStatus makes the source write the Ready condition of the
	// policies and the events of those that fail to compile. Set it in one
	// process (the controller's leader, or the single webhook), not in
	// every replica.
	ReportStatus bool
}

// NewPolicySource returns a source of policies that compiles with the
// host's engine. Call it before Host.Start: its informers and workers
// start with the host's.
func NewPolicySource(h *Host, opts PolicySourceOptions) (*PolicySource, error) {
	eng, err := h.Engine()
	if err != nil {
		return nil, err
	}
	newQueue := func(name string) workqueue.TypedRateLimitingInterface[string] {
		return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name, MetricsProvider: h.metrics.queueMetrics()})
	}
	s := &PolicySource{h: h, eng: eng, good: map[string]*engine.Policy{}, errs: map[string]error{},
		compiled: map[string]string{}, writeStat: opts.ReportStatus,
		queue: newQueue("policies"), status: newQueue("policy-status"),
		infs: map[bool]cache.SharedIndexInformer{}, synced: make(chan struct{}), syncKey: "\x00synced"}
	s.store(&snapshot{all: eng.NewPolicySet()})
	for namespaced, gvr := range map[bool]schema.GroupVersionResource{false: ClusterPolicies, true: Policies} {
		inf := h.dynFactory.ForResource(gvr).Informer()
		s.infs[namespaced] = inf
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    s.enqueue,
			UpdateFunc: func(_, o any) { s.enqueue(o) },
			DeleteFunc: s.enqueue,
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		s.regs = append(s.regs, reg)
	}
	h.goWorker(s.run)
	return s, nil
}

// enqueue is the informers' handler: the policy's key, nothing more.
func (s *PolicySource) enqueue(o any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(o); err == nil {
		s.queue.Add(key)
	}
}

// run compiles the queued policies and writes the statuses until ctx is
// done.
func (s *PolicySource) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() {
		<-ctx.Done()
		s.queue.ShutDown()
		s.status.ShutDown()
	})
	wg.Go(func() {
		// once the informers delivered the initial lists, a marker after
		// them tells when their policies are compiled (the queue is FIFO)
		fns := make([]cache.InformerSynced, len(s.regs))
		for i, r := range s.regs {
			fns[i] = r.HasSynced
		}
		if cache.WaitForCacheSync(ctx.Done(), fns...) {
			s.queue.Add(s.syncKey)
		}
	})
	wg.Go(func() {
		for s.processNext() {
		}
	})
	wg.Go(func() {
		for s.processStatus(ctx) {
		}
	})
	wg.Wait()
}

func (s *PolicySource) processNext() bool {
	key, shutdown := s.queue.Get()
	if shutdown {
		return false
	}
	defer s.queue.Done(key)
	if key == s.syncKey {
		close(s.synced)
		return true
	}
	s.h.metrics.reconcile("policies")
	s.sync(key)
	s.queue.Forget(key)
	return true
}

// WaitForSync waits until the policies that existed when the host started
// have all been compiled (or ctx is done, then it returns false).
func (s *PolicySource) WaitForSync(ctx context.Context) bool {
	select {
	case <-s.synced:
		return true
	case <-ctx.Done():
		return false
	}
}

// Synced reports whether the policies that existed when the host started
// have all been compiled (readiness).
func (s *PolicySource) Synced() bool {
	select {
	case <-s.synced:
		return true
	default:
		return false
	}
}

// Set returns the policy set serving now.
func (s *PolicySource) Set() *engine.PolicySet { return s.cur.Load().all }

// WebhookSet returns the policies a webhook path serves: with key "", the
// policies of failure policy fp that have no webhook of their own; with a
// policy key, that policy's own webhook (nil when it has none now).
func (s *PolicySource) WebhookSet(fp api.FailurePolicyType, key string) *engine.PolicySet {
	snap := s.cur.Load()
	if key != "" {
		return snap.fine[key]
	}
	if fp == api.Ignore {
		return snap.ignore
	}
	return snap.fail
}

// lookup returns the version of a policy serving now (nil when none), and
// whether its latest version does not compile.
func (s *PolicySource) lookup(key string) (*engine.Policy, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.good[key], s.errs[key] != nil
}

// Errors returns the compile error of each policy that failed to compile
// in its latest version, by policy key.
func (s *PolicySource) Errors() map[string]error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.errs)
}

// SetReportStatus turns the writing of the policies' status and events on
// or off (PolicySourceOptions.ReportStatus); turned on, it queues the
// status of every policy, written when it differs. A Controller turns it
// on while it leads.
func (s *PolicySource) SetReportStatus(on bool) {
	s.mu.Lock()
	s.writeStat = on
	var keys []string
	if on {
		keys = append(keysOf(s.good), keysOf(s.errs)...)
	}
	s.mu.Unlock()
	for _, k := range keys {
		s.status.Add(k)
	}
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Subscribe registers f to be called, in order and never concurrently,
// after every change of the serving set. f runs on the source's worker
// and must not block (queue what it has to do).
func (s *PolicySource) Subscribe(f func(PolicyChange)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners = append(s.listeners, f)
}

// object returns the policy of key from the informers' caches.
func (s *PolicySource) object(key string) (*unstructured.Unstructured, bool) {
	o, ok, err := s.infs[strings.Contains(key, "/")].GetStore().GetByKey(key)
	if err != nil || !ok {
		return nil, false
	}
	u, ok := o.(*unstructured.Unstructured)
	return u, ok
}

// version identifies what of a policy object compiles to the same policy:
// its UID and generation and its annotations (report categories and
// severities do not bump the generation); "" for objects without a
// generation (not written through the API server), always compiled.
func version(u *unstructured.Unstructured) string {
	if u.GetGeneration() == 0 {
		return ""
	}
	ann := u.GetAnnotations()
	keys := keysOf(ann)
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%d", u.GetUID(), u.GetGeneration())
	for _, k := range keys {
		b.WriteString("\x00" + k + "=" + ann[k])
	}
	return b.String()
}

// sync compiles the current version of a policy (or forgets a deleted
// one), swaps the serving set and tells the subscribers. A status write
// or a resync of an unchanged policy does nothing.
func (s *PolicySource) sync(key string) {
	u, exists := s.object(key)
	var p *engine.Policy
	var cerr error
	ver := ""
	if exists {
		ver = version(u)
		s.mu.Lock()
		same := ver != "" && s.compiled[key] == ver
		s.mu.Unlock()
		if same {
			return
		}
		p, cerr = s.compile(u)
	}
	s.mu.Lock()
	old, hadErr := s.good[key], s.errs[key] != nil
	switch {
	case !exists:
		delete(s.good, key)
		delete(s.errs, key)
		delete(s.compiled, key)
	case cerr != nil:
		s.errs[key] = cerr
		s.compiled[key] = ver
	default:
		delete(s.errs, key)
		s.good[key] = p
		s.compiled[key] = ver
	}
	writeStat := s.writeStat
	var snap *snapshot
	if exists && cerr != nil {
		snap = s.cur.Load() // the previous version keeps serving
	} else {
		snap = s.store(s.build())
	}
	listeners := slices.Clone(s.listeners)
	failed := maps.Clone(s.errs)
	s.mu.Unlock()

	if cerr != nil {
		s.h.log.Warn("policy does not compile, the previous version keeps serving", "policy", key, "err", cerr)
	}
	if writeStat && exists && (cerr != nil || hadErr || !ready(u)) {
		s.status.Add(key)
	}
	s.h.metrics.SetPolicies(snap.all, failed)
	if exists && cerr != nil {
		return
	}
	ch := PolicyChange{Key: key, Old: old, New: p, Set: snap.all}
	s.h.metrics.PolicyChange(ch)
	for _, f := range listeners {
		f(ch)
	}
}

func (s *PolicySource) compile(u *unstructured.Unstructured) (*engine.Policy, error) {
	po, err := api.DecodePolicy(document(u))
	if err != nil {
		return nil, err
	}
	return s.eng.CompilePolicy(po)
}

// build returns the sets of the good policies, in key order; s.mu is
// held.
func (s *PolicySource) build() *snapshot {
	keys := keysOf(s.good)
	sort.Strings(keys)
	var all, fail, ignore []*engine.Policy
	fine := map[string]*engine.PolicySet{}
	for _, k := range keys {
		p := s.good[k]
		all = append(all, p)
		switch {
		case fineGrained(p):
			fine[k] = s.eng.NewPolicySet(p)
		case p.FailurePolicy() == api.Ignore:
			ignore = append(ignore, p)
		default:
			fail = append(fail, p)
		}
	}
	return &snapshot{all: s.eng.NewPolicySet(all...), fail: s.eng.NewPolicySet(fail...), ignore: s.eng.NewPolicySet(ignore...), fine: fine}
}

func (s *PolicySource) store(snap *snapshot) *snapshot {
	if snap.fail == nil {
		empty := s.eng.NewPolicySet()
		snap = &snapshot{all: snap.all, fail: empty, ignore: empty, fine: map[string]*engine.PolicySet{}}
	}
	s.cur.Store(snap)
	return snap
}

// ready reports whether the object's Ready condition is True.
func ready(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			return m["status"] == string(metav1.ConditionTrue)
		}
	}
	return false
}

func (s *PolicySource) processStatus(ctx context.Context) bool {
	key, shutdown := s.status.Get()
	if shutdown {
		return false
	}
	defer s.status.Done(key)
	s.h.metrics.reconcile("policy-status")
	err := s.writeStatus(ctx, key)
	switch {
	case err == nil || ctx.Err() != nil:
		s.status.Forget(key)
	case s.status.NumRequeues(key) < maxRetries:
		s.h.metrics.requeue("policy-status", s.status.NumRequeues(key))
		s.status.AddRateLimited(key)
	default:
		s.h.log.Error("policy status: giving up", "policy", key, "err", err)
		s.h.metrics.drop("policy-status")
		s.status.Forget(key)
	}
	return true
}

// maxRetries bounds the retries of an item of a controller's queue, as
// upstream's controllers do.
const maxRetries = 10

// writeStatus writes a policy's Ready condition (True, or False with the
// compile error) when it differs, and records a Warning event for an
// error.
func (s *PolicySource) writeStatus(ctx context.Context, key string) error {
	s.mu.Lock()
	on, cerr := s.writeStat, s.errs[key]
	s.mu.Unlock()
	u, exists := s.object(key)
	if !on || !exists {
		return nil
	}
	cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: ReasonSucceeded, Message: "Ready", ObservedGeneration: u.GetGeneration()}
	if cerr != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonFailed, cerr.Error()
	}
	if cerr == nil && hasCondition(u, cond) {
		return nil // the cache already shows it
	}
	gvr := ClusterPolicies
	if u.GetNamespace() != "" {
		gvr = Policies
	}
	ri := s.h.dyn.Resource(gvr).Namespace(u.GetNamespace())
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		var st api.PolicyStatus
		if m, ok := cur.Object["status"].(map[string]any); ok {
			_ = fromObject(m, &st)
		}
		if sameCondition(meta.FindStatusCondition(st.Conditions, "Ready"), cond) {
			return nil
		}
		meta.SetStatusCondition(&st.Conditions, cond)
		r := cerr == nil
		st.Ready = &r
		obj, err := toObject(st)
		if err != nil {
			return err
		}
		cur.Object["status"] = obj
		_, err = ri.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("writing the status of policy %s: %w", key, err)
	}
	if cerr != nil {
		s.h.events.warn(u, EventReasonPolicyError, cerr.Error())
	}
	return nil
}

func sameCondition(c *metav1.Condition, want metav1.Condition) bool {
	return c != nil && c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message && c.ObservedGeneration == want.ObservedGeneration
}

// hasCondition reports whether the object's status holds the condition.
func hasCondition(u *unstructured.Unstructured, want metav1.Condition) bool {
	var st api.PolicyStatus
	if m, ok := u.Object["status"].(map[string]any); !ok || fromObject(m, &st) != nil {
		return false
	}
	return sameCondition(meta.FindStatusCondition(st.Conditions, want.Type), want)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
