package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	admv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/report"
)

// The resources of the openreports.io/v1alpha1 reports, written instead of
// the wgpolicyk8s.io ones with report.Options.Format report.OpenReports.
var (
	OpenReports        = schema.GroupVersionResource{Group: "openreports.io", Version: "v1alpha1", Resource: "reports"}
	OpenClusterReports = schema.GroupVersionResource{Group: "openreports.io", Version: "v1alpha1", Resource: "clusterreports"}
)

// reporter writes policy reports (wgpolicyk8s.io/v1alpha2 PolicyReports
// and ClusterPolicyReports, or openreports.io/v1alpha1 Reports and
// ClusterReports with report.OpenReports) to the cluster, laid out as
// upstream's reports controller lays them out: one report per resource, in
// its namespace (cluster-scoped for a cluster-scoped resource), named
// after its UID, owned by it (the garbage collector deletes it with the
// resource; the reporter deletes it too, when the resource's entries go)
// and naming it in its scope, with the entries of every policy. Results come
// from background evaluations of the existing resources (Scan evaluates
// everything once; Run watches the resources, evaluates each when it is
// created or changed, and everything again at an interval and when the
// policies change) and from admission: Run merges the ephemeral reports
// the webhook replicas write (AdmissionReports) and deletes them once the
// report of their resource is written.
//
// Its store keeps, per resource, the latest admission and background
// results and merges them as upstream does: a scan replaces the admission
// results of the policies with background enabled, admission-only
// policies keep theirs; a deleted resource's entries go, and so do the
// entries of deleted policies and rules, the admission entries of a
// policy that changed (made by its previous version; ephemeral reports of
// admissions before the change are not merged) and the background entries
// of a policy that no longer runs in the background. Only the reports whose
// entries changed are rendered and written (about once a second, at most
// maxWrites a time). On its first write a Reporter reads the reports in
// the cluster, and takes back from them the entries of admission-only
// policies, which no scan can make again (also from the per-policy reports
// of earlier versions, which it then deletes). One Reporter writes at a
// time: run it on the leader.
type reporter struct {
	h     *Host
	src   *PolicySource
	opts  report.Options
	store *report.Store

	policiesChanged atomic.Bool
	changedMu       sync.Mutex
	changedAt       map[string]time.Time // updated policies, by key: when the update was seen
	toRemove        []string             // updated policies whose admission entries are stale

	writeMu sync.Mutex
	written map[report.ReportKey]writtenReport // nil: list the cluster's

	eventsMu sync.Mutex
	// eventsSeen holds, by resource UID and policy key, the fingerprint
	// of the events last recorded for the scan results (recordScan)
	eventsSeen map[string]map[string]uint64
	merged     []*ephemeral // deleted after the next successful write

	backlog []report.ReportKey // changed reports beyond the last Write's maxWrites

	ephemeralWait time.Duration // see defaultEphemeralWait
	flushEvery    time.Duration // period of the writes (1s)
	maxWrites     int           // reports written by one Write (0: no limit)
}

// newReporter returns a Reporter for the policies of src. opts gives the
// entries' clock and source and the reports' format (report.Options).
// It writes every changed report on each Write; set maxWrites to bound
// them.
func newReporter(h *Host, src *PolicySource, opts report.Options) *reporter {
	opts = withClock(opts)
	r := &reporter{h: h, src: src, opts: opts, store: report.NewStore(opts), ephemeralWait: defaultEphemeralWait, flushEvery: time.Second}
	src.Subscribe(r.policyChanged)
	return r
}

// policyChanged notes a change of the serving set; an updated policy's
// admission entries, made by its previous version, are stale.
func (r *reporter) policyChanged(ch PolicyChange) {
	r.changedMu.Lock()
	switch {
	case ch.Old != nil && ch.New != nil:
		if r.changedAt == nil {
			r.changedAt = map[string]time.Time{}
		}
		r.changedAt[ch.New.Key()] = time.Now()
		r.toRemove = append(r.toRemove, ch.New.Key())
	case ch.Old != nil:
		delete(r.changedAt, ch.Old.Key())
	}
	r.changedMu.Unlock()
	r.policiesChanged.Store(true)
}

// removeStale removes the admission entries of the policies updated since
// the last call.
func (r *reporter) removeStale() {
	r.changedMu.Lock()
	keys := r.toRemove
	r.toRemove = nil
	r.changedMu.Unlock()
	for _, k := range keys {
		r.store.RemoveAdmission(k)
	}
}

// stale reports whether an admission of the given time (ns) predates the
// last update of the policy.
func (r *reporter) stale(policyKey string, at int64) bool {
	r.changedMu.Lock()
	defer r.changedMu.Unlock()
	t, ok := r.changedAt[policyKey]
	return ok && at < t.UnixNano()
}

// scanKinds returns the resources to watch: the kinds matched by the
// validate rules, and the resources the CEL kinds' matchConstraints name
// (their Pod controller variants' too), as resources the API server
// serves. Those of admission-only policies are watched too, for the
// deletions of the resources their entries are about. Wildcard kinds and
// resources ("*") are not scanned: their cost is unbounded.
func (r *reporter) scanKinds(set *engine.PolicySet) ([]gvk, error) {
	wanted := map[string]bool{}
	var rules []admv1.RuleWithOperations
	for _, p := range set.Policies() {
		rules = append(rules, scanRules(p)...)
		for _, rule := range p.Rules() {
			if rule.Validation == nil && len(rule.VerifyImages) == 0 {
				continue
			}
			m := rule.MatchResources
			kinds := append([]string(nil), m.Kinds...)
			for _, f := range append(append([]api.ResourceFilter(nil), m.Any...), m.All...) {
				kinds = append(kinds, f.Kinds...)
			}
			for _, k := range kinds {
				if !strings.Contains(k, "*") {
					wanted[k] = true
				}
			}
		}
	}
	if len(wanted) == 0 && len(rules) == 0 {
		return nil, nil
	}
	_, lists, err := r.h.kube.Discovery().ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return nil, err
	}
	var out []gvk
	seen := map[string]bool{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, res := range l.APIResources {
			if strings.Contains(res.Name, "/") || !hasVerb(res.Verbs, "list") {
				continue
			}
			names := []string{res.Kind, gv.Version + "/" + res.Kind, gv.Group + "/" + gv.Version + "/" + res.Kind, gv.Group + "/*/" + res.Kind}
			match := rulesName(rules, gv.Group, gv.Version, res.Name)
			for _, n := range names {
				match = match || wanted[n]
			}
			key := gv.Group + "/" + res.Kind
			if !match || seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, gvk{gvr: gv.WithResource(res.Name), apiVersion: gv.String(), kind: res.Kind})
		}
	}
	return out, nil
}

// scanRules returns the resource rules of a policy of a CEL kind: its
// matchConstraints' and its Pod controller variants' (none for a
// ClusterPolicy or Policy, or a ValidatingPolicy of the JSON mode).
func scanRules(p *engine.Policy) []admv1.RuleWithOperations {
	if h := celHookOf(p); h != nil {
		return h.rules
	}
	var m *admv1.MatchResources
	switch src := p.Source().(type) {
	case *api.ValidatingAdmissionPolicy:
		m = src.Spec.MatchConstraints
	case *api.MutatingAdmissionPolicy:
		m = src.Spec.MatchConstraints
	}
	if m == nil {
		return nil
	}
	out := make([]admv1.RuleWithOperations, 0, len(m.ResourceRules))
	for _, r := range m.ResourceRules {
		out = append(out, r.RuleWithOperations)
	}
	return out
}

// rulesName reports whether resource rules name a resource (not through
// a resource "*": wildcard resources are not scanned).
func rulesName(rules []admv1.RuleWithOperations, group, version, resource string) bool {
	for _, r := range rules {
		if slices.Contains(r.Resources, resource) &&
			(slices.Contains(r.APIGroups, group) || slices.Contains(r.APIGroups, "*")) &&
			(slices.Contains(r.APIVersions, version) || slices.Contains(r.APIVersions, "*")) {
			return true
		}
	}
	return false
}

type gvk struct {
	gvr              schema.GroupVersionResource
	apiVersion, kind string
}

func hasVerb(verbs []string, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}

// Scan evaluates every existing resource of the scanned kinds with the
// policies serving now (a background request), drops the entries of
// policies and rules that no longer exist and, when every kind could be
// listed, those of resources that are gone, and writes the reports (all
// of them, whatever maxWrites).
func (r *reporter) Scan(ctx context.Context) error {
	snap := r.src.cur.Load()
	kinds, err := r.scanKinds(snap.all)
	if err != nil {
		return fmt.Errorf("cluster: discovery: %w", err)
	}
	r.removeStale()
	r.prune()
	seen := map[string]bool{}
	complete := true
	for _, k := range kinds {
		l, err := r.h.dyn.Resource(k.gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			r.h.log.Warn("scan: listing", "resource", k.gvr.String(), "err", err)
			complete = false
			continue
		}
		for i := range l.Items {
			obj := l.Items[i].Object
			obj["apiVersion"], obj["kind"] = k.apiVersion, k.kind
			uid := string(l.Items[i].GetUID())
			seen[uid] = true
			resp, err := r.evaluate(ctx, snap, &engine.Request{Object: obj, Background: true})
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				continue
			}
			if err := r.store.Update(uid, resp.Policies, true); err != nil {
				r.h.log.Warn("scan", "err", err)
			}
			r.recordScan(uid, l.Items[i].GetResourceVersion(), resp.Policies)
		}
	}
	if complete {
		for _, uid := range r.store.UIDs() {
			if !seen[uid] {
				r.store.Delete(uid) // the resource is gone: so are its entries
				r.forgetEvents(uid)
			}
		}
	}
	for {
		if err := r.Write(ctx); err != nil {
			return err
		}
		if !r.pending() {
			return nil
		}
	}
}

// evaluate evaluates a resource in a background request with the
// policies of a snapshot: Validate with every policy, and Mutate with the
// CEL mutating kinds, which fail when they would change the resource
// (upstream's background scanner).
func (r *reporter) evaluate(ctx context.Context, snap *snapshot, req *engine.Request) (*engine.Response, error) {
	resp, err := snap.all.Validate(ctx, req)
	if err != nil || len(snap.backgroundMutate.Policies()) == 0 {
		return resp, err
	}
	m, err := snap.backgroundMutate.Mutate(ctx, req)
	if err != nil {
		return nil, err
	}
	out := *resp
	out.Policies = append(slices.Clip(resp.Policies), m.Policies...)
	return &out, nil
}

// Write makes the cluster's reports (those labelled managed by kyverno)
// what the store holds: the reports that changed since the last Write are
// rendered, and created, updated (timestamps alone are no change) or,
// empty, deleted, at most maxWrites of them (the others wait for the next
// Write, before those that change later). The reports in the cluster are
// listed on the first Write and after a failed one, which then compares
// every report. After a successful Write, the ephemeral reports merged
// before it are deleted, but for those of reports not written yet.
func (r *reporter) Write(ctx context.Context) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	var keys []report.ReportKey
	if r.written == nil {
		if err := r.list(ctx); err != nil {
			return err
		}
		r.store.TakeChanged()
		seen := map[report.ReportKey]bool{}
		for _, k := range r.store.Keys() {
			seen[k] = true
			keys = append(keys, k)
		}
		for k := range r.written {
			if !seen[k] {
				keys = append(keys, k)
			}
		}
	} else {
		keys = r.backlog
		seen := make(map[report.ReportKey]bool, len(keys))
		for _, k := range keys {
			seen[k] = true
		}
		for _, k := range r.store.TakeChanged() {
			if !seen[k] {
				keys = append(keys, k)
			}
		}
	}
	r.backlog = nil
	var errs []error
	unwritten := map[report.ReportKey]bool{}
	writes := 0
	for i, key := range keys {
		if r.maxWrites > 0 && writes >= r.maxWrites {
			r.backlog = slices.Clone(keys[i:])
			for _, k := range r.backlog {
				unwritten[k] = true
			}
			break
		}
		wrote, err := r.writeOne(ctx, key)
		if wrote || err != nil {
			writes++
		}
		if err != nil {
			r.store.MarkChanged(key)
			unwritten[key] = true
			errs = append(errs, fmt.Errorf("%s/%s: %w", key.Namespace, key.Name, err))
		}
	}
	// an ephemeral report goes once the report of its resource is written
	kept := r.merged[:0]
	for _, e := range r.merged {
		if e.touches(unwritten) {
			kept = append(kept, e)
			continue
		}
		err := r.h.dyn.Resource(e.gvr).Namespace(e.namespace).Delete(ctx, e.name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			r.h.log.Warn("reports: deleting an ephemeral report", "namespace", e.namespace, "name", e.name, "err", err)
		}
	}
	clear(r.merged[len(kept):])
	r.merged = kept
	if len(errs) > 0 {
		r.written, r.backlog = nil, nil // list the cluster's reports again next time
		return fmt.Errorf("cluster: writing %d reports, first %w", len(errs), errs[0])
	}
	return nil
}

// pending reports whether the next Write has reports to write whatever
// changes: the cluster's reports are not listed, or a backlog waits.
func (r *reporter) pending() bool {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	return r.written == nil || len(r.backlog) > 0
}

// writeOne makes one report in the cluster what the store renders, and
// reports whether it wrote (created, patched or deleted) the report.
func (r *reporter) writeOne(ctx context.Context, key report.ReportKey) (bool, error) {
	prev, ok := r.written[key]
	rep, exists := r.store.Render(key)
	if !exists {
		if !ok {
			return false, nil
		}
		err := r.h.dyn.Resource(prev.gvr).Namespace(key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return true, err
		}
		delete(r.written, key)
		return true, nil
	}
	summary, results := rep.Summary, rep.Results
	if ok && prev.fp != "" && prev.fp == fingerprint(rep.Scope, summary, results) {
		// listed from the cluster, and saying the same
		r.written[key] = writtenReport{rv: prev.rv, gvr: prev.gvr}
		return false, nil
	}
	gvr := r.reportResource(key.Namespace == "")
	ri := r.h.dyn.Resource(gvr).Namespace(key.Namespace)
	var out *unstructured.Unstructured
	if ok {
		// a merge patch of the changed parts, conditional on the version
		// written last: one encoding, no map of the report
		var p reportPatch
		p.Metadata.ResourceVersion = prev.rv
		p.Metadata.Labels = rep.Labels
		p.Metadata.OwnerReferences = rep.OwnerReferences
		p.Scope, p.Summary, p.Results = rep.Scope, summary, results
		data, err := json.Marshal(&p)
		if err != nil {
			return true, err
		}
		out, err = ri.Patch(ctx, key.Name, types.MergePatchType, data, metav1.PatchOptions{})
		if err != nil {
			return true, err
		}
	} else {
		obj, err := toObject(rep.Object())
		if err != nil {
			return true, err
		}
		out, err = ri.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
		if err != nil {
			return true, err
		}
	}
	// the store tells what changed from now on: no fingerprint
	r.written[key] = writtenReport{rv: out.GetResourceVersion(), gvr: gvr}
	return true, nil
}

// reportPatch is the merge patch of a report's content.
type reportPatch struct {
	Metadata struct {
		ResourceVersion string                  `json:"resourceVersion"`
		Labels          map[string]string       `json:"labels"`
		OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
	} `json:"metadata"`
	Scope   *api.ObjectReference     `json:"scope"`
	Summary api.PolicyReportSummary  `json:"summary"`
	Results []api.PolicyReportResult `json:"results"`
}

// writtenReport is what the Reporter knows of a report in the cluster:
// its version, and for a report listed from the cluster a fingerprint of
// its content (those the Reporter wrote are what the store held).
type writtenReport struct {
	rv, fp string
	gvr    schema.GroupVersionResource
}

// list reads the managed reports of the cluster into r.written, and
// gives the store back the entries of admission-only policies that it
// does not hold (a new leader's).
func (r *reporter) list(ctx context.Context) error {
	written := map[report.ReportKey]writtenReport{}
	sel := metav1.ListOptions{LabelSelector: report.LabelManagedBy + "=" + report.ManagedByKyverno}
	live := livePolicies(r.src.Set())
	admissionOnly := map[string][]api.PolicyReportResult{}
	for _, cluster := range []bool{true, false} {
		gvr := r.reportResource(cluster)
		l, err := r.h.dyn.Resource(gvr).List(ctx, sel)
		if err != nil {
			return fmt.Errorf("cluster: listing reports: %w", err)
		}
		for i := range l.Items {
			cur := &l.Items[i]
			var obj api.PolicyReport // every kind of report has these fields
			_ = fromObject(cur.Object, &obj)
			key := report.ReportKey{Namespace: cur.GetNamespace(), Name: cur.GetName()}
			written[key] = writtenReport{rv: cur.GetResourceVersion(), fp: fingerprint(obj.Scope, obj.Summary, obj.Results), gvr: gvr}
			for _, res := range obj.Results {
				p, ok := live[res.Policy]
				if !ok || p.background || !p.has(res.Rule) {
					continue
				}
				if len(res.Resources) == 0 && obj.Scope != nil {
					// a report of a resource: its scope names it
					res.Resources = []api.ObjectReference{*obj.Scope}
				}
				if len(res.Resources) > 0 && res.Resources[0].UID != "" {
					uid := res.Resources[0].UID
					admissionOnly[uid] = append(admissionOnly[uid], res)
				}
			}
		}
	}
	for uid, results := range admissionOnly {
		if !r.store.HasAdmission(uid) {
			_, _ = r.store.SetAdmission(uid, 0, results)
		}
	}
	r.written = written
	return nil
}

// reportResource is the resource of the reports of the Reporter's format.
func (r *reporter) reportResource(cluster bool) schema.GroupVersionResource {
	switch {
	case r.opts.Format == report.OpenReports && cluster:
		return OpenClusterReports
	case r.opts.Format == report.OpenReports:
		return OpenReports
	case cluster:
		return ClusterPolicyReports
	}
	return PolicyReports
}

// fingerprint hashes a report's scope, summary and results without the
// entries' timestamps: two reports with the same fingerprint say the same.
func fingerprint(scope *api.ObjectReference, summary api.PolicyReportSummary, results []api.PolicyReportResult) string {
	stripped := make([]api.PolicyReportResult, len(results))
	copy(stripped, results)
	for i := range stripped {
		stripped[i].Timestamp = metav1.Timestamp{}
	}
	data, _ := json.Marshal(struct {
		Scope *api.ObjectReference
		S     api.PolicyReportSummary
		R     []api.PolicyReportResult
	}{scope, summary, stripped})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// livePolicy is what the store's Prune needs of a serving policy.
type livePolicy struct {
	background bool
	rules      map[string]bool
	// anyRule: a CEL kind's results carry no rule of the policy's (""
	// or names of their own)
	anyRule bool
}

// has reports whether the policy makes entries of the rule.
func (lp livePolicy) has(rule string) bool { return lp.anyRule || lp.rules[rule] }

// livePolicies indexes the policies of a set by key, as report entries
// name them (policies of different kinds with one key share an entry).
func livePolicies(set *engine.PolicySet) map[string]livePolicy {
	out := map[string]livePolicy{}
	for _, p := range set.Policies() {
		lp, ok := out[p.Key()]
		if !ok {
			lp.rules = map[string]bool{}
		}
		lp.background = lp.background || p.Background()
		for _, r := range p.Rules() {
			lp.rules[r.Name] = true
		}
		if _, classic := p.Source().(api.ClassicPolicy); !classic {
			lp.anyRule = true
		}
		out[p.Key()] = lp
	}
	return out
}

// prune drops the entries of the rules that the serving policies no
// longer have, and the background entries of policies that no longer run
// in the background.
func (r *reporter) prune() {
	live := livePolicies(r.src.Set())
	r.store.Prune(func(policy, rule string) (bool, bool) {
		p, ok := live[policy]
		return ok && p.has(rule), p.background
	})
}

// firstWriteWait bounds how long a Reporter's first Write waits for the
// evaluation of the resources its informers list at the start.
const firstWriteWait = 30 * time.Second

// defaultEphemeralWait is how long an ephemeral report waits for its
// resource to reach the Reporter's informers before it is dropped as the
// report of a resource that is gone (or was never stored).
const defaultEphemeralWait = 10 * time.Second

// Run keeps the reports current until ctx is done: it watches the kinds
// the validate rules match (informers, started as policies name new
// kinds), evaluates a resource when it is created or changed and forgets
// it when it is deleted, merges the ephemeral reports of admissions,
// writes the reports that changed about once a second, evaluates every
// watched resource again each interval and when the policies change, and
// drops then the entries of resources that are gone.
func (r *reporter) Run(ctx context.Context, interval time.Duration) {
	rs := &reporterRun{
		r: r, ctx: ctx,
		factory: dynamicinformer.NewDynamicSharedInformerFactory(r.h.dyn, 0),
		watched: map[schema.GroupVersionResource]gvk{},
		infs:    map[schema.GroupVersionResource]cache.SharedIndexInformer{},
		pending: map[string]*ephemeral{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[objectKey](),
			workqueue.TypedRateLimitingQueueConfig[objectKey]{Name: "reports", MetricsProvider: r.h.metrics.queueMetrics()}),
		deletedUID: map[objectKey]string{},
		ephKeys:    map[objectKey]bool{},
	}
	var wg sync.WaitGroup
	defer func() {
		rs.queue.ShutDown()
		wg.Wait()
		rs.factory.Shutdown()
	}()
	wg.Go(func() {
		for rs.processNext() {
		}
	})
	rs.watch()
	ephFactory := rs.watchEphemeral()
	if ephFactory != nil {
		defer ephFactory.Shutdown()
	}
	begun := time.Now()
	flush := time.NewTicker(r.flushEvery)
	defer flush.Stop()
	full := time.NewTicker(interval)
	defer full.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-full.C:
			rs.watch()
			rs.rescan(true)
		case <-flush.C:
			if r.policiesChanged.Swap(false) {
				r.removeStale()
				r.prune()
				rs.watch()
				rs.rescan(false)
			}
		}
		rs.mergePending()
		if !rs.started && rs.queue.Len() > 0 && time.Since(begun) < firstWriteWait {
			// the first Write compares every report in the cluster with
			// the store: not before the resources listed at the start are
			// evaluated (their reports would go, then come back)
			continue
		}
		if rs.dirty.Swap(false) || r.pending() {
			if err := r.Write(ctx); err != nil && ctx.Err() == nil {
				r.h.log.Error("writing the policy reports", "err", err)
				rs.dirty.Store(true)
				continue
			}
			rs.started = true
		}
	}
}

// reporterRun is the state of one Run. The informers' handlers only queue
// the keys of the resources (and note the UIDs of deleted ones); a worker
// evaluates each from the informer's cache. The ephemeral reports'
// handlers only note their keys; Run's loop reads and merges them.
type reporterRun struct {
	r       *reporter
	ctx     context.Context
	factory dynamicinformer.DynamicSharedInformerFactory
	dirty   atomic.Bool
	queue   workqueue.TypedRateLimitingInterface[objectKey]

	// missing and started are used by Run's goroutine only
	missing map[string]bool // resources with entries absent from the informers at the last sweep
	started bool            // a Write succeeded

	mu         sync.Mutex
	watched    map[schema.GroupVersionResource]gvk
	infs       map[schema.GroupVersionResource]cache.SharedIndexInformer
	deletedUID map[objectKey]string // UIDs of deleted resources not processed yet
	ephInfs    map[schema.GroupVersionResource]cache.SharedIndexInformer
	ephKeys    map[objectKey]bool    // ephemeral reports not read yet
	pending    map[string]*ephemeral // read, waiting for their resource, by namespace/name of the ephemeral report
}

func (rs *reporterRun) informer(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.infs[gvr]
}

// processNext evaluates (or forgets) one queued resource.
func (rs *reporterRun) processNext() bool {
	k, shutdown := rs.queue.Get()
	if shutdown {
		return false
	}
	defer rs.queue.Done(k)
	rs.r.h.metrics.reconcile("reports")
	rs.mu.Lock()
	inf, kind := rs.infs[k.gvr], rs.watched[k.gvr]
	uid, deleted := rs.deletedUID[k]
	delete(rs.deletedUID, k)
	rs.mu.Unlock()
	if inf != nil {
		if o, ok, _ := inf.GetStore().GetByKey(k.key); ok {
			if u, _ := o.(*unstructured.Unstructured); u != nil && (!deleted || string(u.GetUID()) != uid) {
				rs.eval(kind, u)
			}
		}
	}
	if deleted {
		rs.r.store.Delete(uid)
		rs.r.forgetEvents(uid)
		rs.dirty.Store(true)
	}
	rs.queue.Forget(k)
	return true
}

// eval evaluates a resource with the background policies into the store.
func (rs *reporterRun) eval(k gvk, u *unstructured.Unstructured) {
	obj := u.DeepCopy().Object
	obj["apiVersion"], obj["kind"] = k.apiVersion, k.kind
	req := &engine.Request{Object: obj, Background: true}
	resp, err := rs.r.evaluate(rs.ctx, rs.r.src.cur.Load(), req)
	if err != nil {
		return
	}
	rs.r.h.metrics.Results(req, resp, true)
	if err := rs.r.store.Update(string(u.GetUID()), resp.Policies, true); err != nil {
		rs.r.h.log.Warn("reports", "err", err)
	}
	rs.r.recordScan(string(u.GetUID()), u.GetResourceVersion(), resp.Policies)
	rs.dirty.Store(true)
}

// watch starts the informers of the kinds the policies match.
func (rs *reporterRun) watch() {
	kinds, err := rs.r.scanKinds(rs.r.src.Set())
	if err != nil {
		rs.r.h.log.Warn("reports: discovery", "err", err)
	}
	for _, k := range kinds {
		rs.watchKind(k)
	}
	rs.factory.Start(rs.ctx.Done())
	rs.factory.WaitForCacheSync(rs.ctx.Done())
}

// watchKind adds the informer of a kind; watch or mergePending start it.
// Its handlers queue the resources' keys.
func (rs *reporterRun) watchKind(k gvk) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if _, ok := rs.watched[k.gvr]; ok {
		return
	}
	rs.watched[k.gvr] = k
	inf := rs.factory.ForResource(k.gvr).Informer()
	_ = inf.SetTransform(dropManagedFields)
	enqueue := func(o any) {
		if u, ok := o.(*unstructured.Unstructured); ok {
			rs.queue.Add(objectKey{k.gvr, keyOf(u)})
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(old, o any) {
			ou, _ := old.(*unstructured.Unstructured)
			nu, _ := o.(*unstructured.Unstructured)
			if ou != nil && nu != nil && ou.GetResourceVersion() == nu.GetResourceVersion() {
				return
			}
			enqueue(o)
		},
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if u, ok := o.(*unstructured.Unstructured); ok {
				key := objectKey{k.gvr, keyOf(u)}
				rs.mu.Lock()
				rs.deletedUID[key] = string(u.GetUID())
				rs.mu.Unlock()
				rs.queue.Add(key)
			}
		},
	})
	rs.infs[k.gvr] = inf
}

// rescan evaluates every watched resource again; with sweep, it also
// drops the entries of resources that two sweeps in a row did not find.
func (rs *reporterRun) rescan(sweep bool) {
	present := map[string]bool{}
	rs.mu.Lock()
	infs := maps.Clone(rs.infs)
	rs.mu.Unlock()
	for gvr, inf := range infs {
		for _, o := range inf.GetStore().List() {
			if u, ok := o.(*unstructured.Unstructured); ok {
				rs.queue.Add(objectKey{gvr, keyOf(u)})
				present[string(u.GetUID())] = true
			}
		}
	}
	if !sweep {
		return
	}
	missing := map[string]bool{}
	for _, uid := range rs.r.store.UIDs() {
		if present[uid] {
			continue
		}
		if rs.missing[uid] {
			rs.r.store.Delete(uid)
			rs.r.forgetEvents(uid)
			rs.dirty.Store(true)
			continue
		}
		missing[uid] = true
	}
	rs.missing = missing
}

// dropManagedFields removes metadata.managedFields from the objects the
// informers keep: neither policies nor reports read them, and they are a
// large part of an object. It writes only when there is something to
// drop: an object without managedFields may be shared with its source
// (client-go's fake tracker delivers its stored objects to a new watch
// without copying them), and a delete is a write even when the key is
// absent.
func dropManagedFields(o any) (any, error) {
	if u, ok := o.(*unstructured.Unstructured); ok {
		if md, ok := u.Object["metadata"].(map[string]any); ok {
			if _, ok := md["managedFields"]; ok {
				delete(md, "managedFields")
			}
		}
	}
	return o, nil
}

// watchEphemeral starts the informers of the ephemeral reports, when the
// API server serves them, and returns their factory. Their handlers note
// the reports' keys; mergePending reads them.
func (rs *reporterRun) watchEphemeral() dynamicinformer.DynamicSharedInformerFactory {
	gk := schema.GroupKind{Group: EphemeralReports.Group, Kind: "EphemeralReport"}
	if _, err := rs.r.h.mapper.RESTMapping(gk, EphemeralReports.Version); err != nil {
		rs.r.h.log.Warn("reports: admission results are not merged", "err", err)
		return nil
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(rs.r.h.dyn, 0)
	rs.mu.Lock()
	rs.ephInfs = map[schema.GroupVersionResource]cache.SharedIndexInformer{}
	rs.mu.Unlock()
	for _, gvr := range []schema.GroupVersionResource{EphemeralReports, ClusterEphemeralReports} {
		inf := f.ForResource(gvr).Informer()
		_ = inf.SetTransform(dropManagedFields)
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(o any) {
				if u, ok := o.(*unstructured.Unstructured); ok {
					rs.mu.Lock()
					rs.ephKeys[objectKey{gvr, keyOf(u)}] = true
					rs.mu.Unlock()
				}
			},
			DeleteFunc: func(o any) {
				if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
					o = d.Obj
				}
				if u, ok := o.(*unstructured.Unstructured); ok {
					rs.mu.Lock()
					delete(rs.ephKeys, objectKey{gvr, keyOf(u)})
					delete(rs.pending, u.GetNamespace()+"/"+u.GetName())
					rs.mu.Unlock()
				}
			},
		})
		rs.mu.Lock()
		rs.ephInfs[gvr] = inf
		rs.mu.Unlock()
	}
	f.Start(rs.ctx.Done())
	return f
}

// readEphemerals decodes the ephemeral reports noted since the last call
// into pending.
func (rs *reporterRun) readEphemerals() {
	rs.mu.Lock()
	keys := rs.ephKeys
	rs.ephKeys = map[objectKey]bool{}
	infs := rs.ephInfs
	rs.mu.Unlock()
	for k := range keys {
		o, ok, _ := infs[k.gvr].GetStore().GetByKey(k.key)
		u, _ := o.(*unstructured.Unstructured)
		if !ok || u == nil {
			continue
		}
		e, err := readEphemeral(u)
		if err != nil {
			rs.r.h.log.Warn("reports: ephemeral report", "err", err)
		}
		rs.mu.Lock()
		rs.pending[e.namespace+"/"+e.name] = e
		rs.mu.Unlock()
	}
}

// mergePending merges the ephemeral reports whose resources the informers
// hold, with the UID they name, into the store; drops those that waited
// longer than the Reporter's ephemeralWait for theirs, or that cannot be read; and keeps
// the others for the next tick. Only the results of current policies and
// rules, of admissions after the policy's last update, are merged. Merged and dropped reports are deleted after the next
// successful Write.
func (rs *reporterRun) mergePending() {
	rs.readEphemerals()
	rs.mu.Lock()
	batch := make([]*ephemeral, 0, len(rs.pending))
	for _, e := range rs.pending {
		batch = append(batch, e)
	}
	rs.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	live := livePolicies(rs.r.src.Set())
	started := false
	now := time.Now()
	for _, e := range batch {
		done := e.resourceUID == ""
		if !done {
			k, ok := rs.kindOf(e.owner.APIVersion, e.owner.Kind)
			switch {
			case !ok:
				done = true // a kind the API server does not serve
			case rs.informer(k.gvr) == nil:
				rs.watchKind(k)
				started = true
			default:
				if rs.has(k.gvr, e.namespace, e.owner.Name, e.resourceUID) {
					results := e.results[:0:0]
					for _, res := range e.results {
						if p, ok := live[res.Policy]; ok && p.has(res.Rule) && !rs.r.stale(res.Policy, e.at) {
							results = append(results, res)
						}
					}
					if _, err := rs.r.store.MergeAdmission(e.resourceUID, e.request, e.at, results); err != nil {
						rs.r.h.log.Warn("reports", "err", err)
					}
					rs.dirty.Store(true)
					done = true
				} else if now.Sub(time.Unix(0, e.at)) > rs.r.ephemeralWait {
					done = true // its resource is gone, or was never stored
				}
			}
		}
		if done {
			rs.mu.Lock()
			delete(rs.pending, e.namespace+"/"+e.name)
			rs.mu.Unlock()
			rs.r.writeMu.Lock()
			rs.r.merged = append(rs.r.merged, e)
			rs.r.writeMu.Unlock()
			rs.dirty.Store(true)
		}
	}
	if started {
		rs.factory.Start(rs.ctx.Done())
		rs.factory.WaitForCacheSync(rs.ctx.Done())
	}
}

// has reports whether the informer of gvr holds the object with that
// namespace, name and UID.
func (rs *reporterRun) has(gvr schema.GroupVersionResource, namespace, name, uid string) bool {
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	o, ok, _ := rs.informer(gvr).GetStore().GetByKey(key)
	if !ok {
		return false
	}
	u, _ := o.(*unstructured.Unstructured)
	return u != nil && string(u.GetUID()) == uid
}

// kindOf maps an owner's apiVersion and kind to the resource to watch.
func (rs *reporterRun) kindOf(apiVersion, kind string) (gvk, bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || kind == "" {
		return gvk{}, false
	}
	m, err := rs.r.h.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: kind}, gv.Version)
	if err != nil {
		return gvk{}, false
	}
	return gvk{gvr: m.Resource, apiVersion: apiVersion, kind: kind}, true
}

// recordScan records the events of a resource's scan results
// (eventRecorder.scanEvents) when they differ from those last recorded
// for the resource and policy, or the resource or the policy changed
// since: upstream records them each time it evaluates a policy on a
// resource, which it does when either changes (and on its periodic full
// scan, hourly by default); gavel evaluates everything again at each
// ScanInterval (a minute by default), and would repeat the same events
// every minute.
func (r *reporter) recordScan(uid, resourceVersion string, results []engine.PolicyResult) {
	ev := r.h.events
	for i := range results {
		pr := &results[i]
		if pr.Policy == nil {
			continue
		}
		infos := ev.scanEvents(pr, r.h.exceptionUID)
		if len(infos) == 0 {
			// nothing to record: a later result is new
			r.eventsMu.Lock()
			delete(r.eventsSeen[uid], pr.Policy.Key())
			r.eventsMu.Unlock()
			continue
		}
		fp := eventsFingerprint(resourceVersion, pr.Policy, infos)
		r.eventsMu.Lock()
		if r.eventsSeen == nil {
			r.eventsSeen = map[string]map[string]uint64{}
		}
		seen := r.eventsSeen[uid]
		if seen == nil {
			seen = map[string]uint64{}
			r.eventsSeen[uid] = seen
		}
		old, ok := seen[pr.Policy.Key()]
		seen[pr.Policy.Key()] = fp
		r.eventsMu.Unlock()
		if ok && old == fp {
			continue
		}
		ev.add(infos...)
	}
}

// forgetEvents forgets the events recorded for a deleted resource.
func (r *reporter) forgetEvents(uid string) {
	r.eventsMu.Lock()
	delete(r.eventsSeen, uid)
	r.eventsMu.Unlock()
}

// eventsFingerprint hashes what makes scan events new: the resource's
// and the policy's versions, and the events' reasons, actions and notes.
func eventsFingerprint(resourceVersion string, p *engine.Policy, infos []eventInfo) uint64 {
	h := fnv.New64a()
	_, _ = io.WriteString(h, resourceVersion)
	if o, ok := p.Source().(interface{ GetResourceVersion() string }); ok {
		_, _ = io.WriteString(h, "\x00"+o.GetResourceVersion())
	}
	for i := range infos {
		_, _ = io.WriteString(h, "\x00"+infos[i].reason+"\x00"+infos[i].action+"\x00"+infos[i].note+"\x00"+infos[i].regarding.Name)
	}
	return h.Sum64()
}
