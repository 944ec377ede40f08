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

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
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
	// admission: the policies the webhooks serve (not the kinds the API
	// server evaluates itself)
	admission *engine.PolicySet
	// by failure policy, without the policies that have webhooks of
	// their own
	fail, ignore *engine.PolicySet
	// the policies with webhooks of their own (match conditions) or of
	// their selectors' group, by the webhook's key (webhookGroup)
	fine map[string]*engine.PolicySet
	// backgroundMutate: the CEL mutating kinds, whose background results
	// come from PolicySet.Mutate
	backgroundMutate *engine.PolicySet
}

// PolicySource keeps a PolicySet compiled from the cluster's policies of
// every kind the engine evaluates: ClusterPolicy and Policy,
// ValidatingPolicy, ImageValidatingPolicy and MutatingPolicy with their
// Namespaced kinds, and Kubernetes' ValidatingAdmissionPolicy (and
// MutatingAdmissionPolicy, PolicySourceOptions.MutatingAdmissionPolicies)
// with their bindings; the kinds of policies.kyverno.io and
// admissionregistration.k8s.io are watched when the cluster serves them
// at start. The API server evaluates its admission policies itself: the
// webhooks do not serve them (WebhookSet), only the background scans
// report on them (Set), as upstream's reports controller does.
//
// It is a controller in client-go's sample-controller shape: the
// informers' handlers only put the policy's ID in a queue (its key,
// prefixed by its kind for the kinds other than ClusterPolicy and
// Policy); a worker compiles the policy and swaps the set atomically, so
// that a request is answered by one set from start to end. A policy that
// does not compile is reported (with PolicySourceOptions.ReportStatus:
// its status set not ready with the reason, and a Warning event, written
// by a second queue's worker with rate-limited retries) and the version
// that was serving before keeps serving. The workers run from Host.Start
// to the end of its context. It is safe for concurrent use.
type PolicySource struct {
	h   *Host
	eng *engine.Engine

	cur atomic.Pointer[snapshot]

	queue   workqueue.TypedRateLimitingInterface[string] // policy IDs to compile
	status  workqueue.TypedRateLimitingInterface[string] // policy IDs whose status to write
	infs    map[string]cache.SharedIndexInformer         // by kind
	gvrs    map[string]schema.GroupVersionResource       // by kind
	regs    []cache.ResourceEventHandlerRegistration
	synced  chan struct{}
	syncKey string

	mu        sync.Mutex
	good      map[string]*engine.Policy // by ID
	errs      map[string]error
	compiled  map[string]string // the generation and annotations of the version compiled, by ID
	listeners []func(PolicyChange)
	writeStat bool
	// gated: a WebhookController runs beside the source, and a policy is
	// Ready once the webhook configurations it wrote serve it (served,
	// the compiled policies of the set it last wrote)
	gated  bool
	served map[*engine.Policy]bool
}

// PolicySourceOptions configure NewPolicySource.
type PolicySourceOptions struct {
	// ReportStatus makes the source write the Ready condition of the
	// policies and the events of those that fail to compile. Set it in one
	// process (the controller's leader, or the single webhook), not in
	// every replica.
	ReportStatus bool
	// NoValidatingAdmissionPolicies leaves out the
	// ValidatingAdmissionPolicies and their bindings, which the
	// background scans otherwise report on (upstream's reports controller
	// with --validatingAdmissionPolicyReports=false).
	NoValidatingAdmissionPolicies bool
	// MutatingAdmissionPolicies watches the MutatingAdmissionPolicies and
	// their bindings, for the background scans' reports (upstream's
	// --mutatingAdmissionPolicyReports, off by default).
	MutatingAdmissionPolicies bool
}

// NewPolicySource returns a source of policies that compiles with the
// host's engine. Call it before Host.Start: its informers and workers
// start with the host's.
func NewPolicySource(h *Host, opts PolicySourceOptions) (*PolicySource, error) {
	eng, err := h.hostEngine()
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
		infs: map[string]cache.SharedIndexInformer{}, gvrs: map[string]schema.GroupVersionResource{},
		synced: make(chan struct{}), syncKey: "\x00synced"}
	s.store(&snapshot{all: eng.NewPolicySet()})
	for i := range hostKinds {
		k := &hostKinds[i]
		gvr, ok := k.served(h.mapper, &opts)
		if !ok {
			if k.enabled == nil || k.enabled(&opts) {
				h.log.Info("policy kind not served, not watched", "group", k.group, "kind", k.kind)
			}
			continue
		}
		inf := h.dynFactory.ForResource(gvr).Informer()
		s.infs[k.kind], s.gvrs[k.kind] = inf, gvr
		enqueue := s.enqueuer(k.kind)
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    enqueue,
			UpdateFunc: func(_, o any) { enqueue(o) },
			DeleteFunc: enqueue,
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		s.regs = append(s.regs, reg)
	}
	h.goWorker(s.run)
	return s, nil
}

// enqueuer returns the informers' handler of a kind: it queues the
// policy's ID, nothing more.
func (s *PolicySource) enqueuer(kind string) func(o any) {
	return func(o any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(o); err == nil {
			s.queue.Add(policyID(kind, key))
		}
	}
}

// kinds returns the kinds of policy the source watches.
func (s *PolicySource) kinds() []string {
	out := make([]string, 0, len(s.infs))
	for i := range hostKinds {
		if s.infs[hostKinds[i].kind] != nil {
			out = append(out, hostKinds[i].kind)
		}
	}
	return out
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

// Set returns the policy set serving now: every policy, those the API
// server evaluates itself too (the background scans' set).
func (s *PolicySource) Set() *engine.PolicySet { return s.cur.Load().all }

// WebhookSet returns the policies a webhook path serves: with key "", the
// policies of failure policy fp that have no webhook of their own (fp "":
// every policy the webhooks serve); with a key, the policies of that
// webhook (the key of a policy with webhooks of its own, or of a group
// of CEL policies with the same selectors: see WebhookConfigurations),
// nil when there is none now.
func (s *PolicySource) WebhookSet(fp api.FailurePolicyType, key string) *engine.PolicySet {
	snap := s.cur.Load()
	switch {
	case key != "":
		return snap.fine[key]
	case fp == api.Ignore:
		return snap.ignore
	case fp == "":
		return snap.admission
	}
	return snap.fail
}

// lookup returns the version of a policy serving now (nil when none), and
// whether its latest version does not compile.
func (s *PolicySource) lookup(id string) (*engine.Policy, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.good[id], s.errs[id] != nil
}

// Errors returns the compile error of each policy that failed to compile
// in its latest version, by policy ID: the policy's key (name, or
// namespace/name), prefixed by its kind and a dot for the kinds other
// than ClusterPolicy and Policy ("ValidatingPolicy.name").
func (s *PolicySource) Errors() map[string]error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.errs)
}

// setReportStatus turns the writing of the policies' status and events on
// or off (PolicySourceOptions.ReportStatus); turned on, it queues the
// status of every policy, written when it differs. A Controller turns it
// on while it leads.
func (s *PolicySource) setReportStatus(on bool) {
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

// object returns the policy of an ID from the informers' caches.
func (s *PolicySource) object(id string) (*unstructured.Unstructured, bool) {
	kind, key := splitID(id)
	inf := s.infs[kind]
	if inf == nil {
		return nil, false
	}
	o, ok, err := inf.GetStore().GetByKey(key)
	if err != nil || !ok {
		return nil, false
	}
	u, ok := o.(*unstructured.Unstructured)
	if ok && u.GetKind() == "" {
		// informers' objects carry their kind; a fake's may not
		u = u.DeepCopy()
		u.SetKind(kind)
	}
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
	if writeStat && exists && (cerr != nil || hadErr || !ready(u) || shapeOf(u.GetKind()) == statusCEL) {
		s.status.Add(key)
	}
	s.h.metrics.setPolicies(snap.all, failed)
	if exists && cerr != nil {
		return
	}
	ch := PolicyChange{Key: key, Old: old, New: p, Set: snap.all}
	s.h.metrics.policyChange(ch)
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
	var all, admission, fail, ignore, bgMutate []*engine.Policy
	groups := map[string][]*engine.Policy{}
	for _, k := range keys {
		p := s.good[k]
		all = append(all, p)
		if backgroundMutator(api.KindOf(p.Source())) {
			bgMutate = append(bgMutate, p)
		}
		if !admissionKind(api.KindOf(p.Source())) {
			continue
		}
		admission = append(admission, p)
		switch g := webhookGroup(p); {
		case g.key != "":
			groups[g.key] = append(groups[g.key], p)
		case p.FailurePolicy() == api.Ignore:
			ignore = append(ignore, p)
		default:
			fail = append(fail, p)
		}
	}
	fine := make(map[string]*engine.PolicySet, len(groups))
	for k, ps := range groups {
		fine[k] = s.eng.NewPolicySet(ps...)
	}
	return &snapshot{all: s.eng.NewPolicySet(all...), admission: s.eng.NewPolicySet(admission...),
		fail: s.eng.NewPolicySet(fail...), ignore: s.eng.NewPolicySet(ignore...), fine: fine,
		backgroundMutate: s.eng.NewPolicySet(bgMutate...)}
}

// backgroundMutator reports the CEL mutating kinds (and bindings), whose
// background results come from PolicySet.Mutate: a policy that would
// change an existing resource fails ("mutation is not applied").
func backgroundMutator(kind string) bool {
	switch kind {
	case api.KindMutatingPolicy, api.KindNamespacedMutatingPolicy, api.KindMutatingAdmissionPolicy, api.KindMutatingAdmissionPolicyBinding:
		return true
	}
	return false
}

func (s *PolicySource) store(snap *snapshot) *snapshot {
	if snap.fail == nil {
		empty := s.eng.NewPolicySet()
		snap = &snapshot{all: snap.all, admission: snap.all, fail: empty, ignore: empty,
			fine: map[string]*engine.PolicySet{}, backgroundMutate: empty}
	}
	s.cur.Store(snap)
	return snap
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
