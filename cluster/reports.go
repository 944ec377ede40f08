package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	ireport "github.com/gavelpolicy/gavel/internal/report"
	"github.com/gavelpolicy/gavel/report"
)

// Reporter writes policy reports (wgpolicyk8s.io/v1alpha2 PolicyReports
// and ClusterPolicyReports) to the cluster from background evaluations of
// the existing resources: Scan evaluates everything once, Run watches the
// resources and evaluates each when it is admitted or changed (so a report
// follows an admission within about a second) and everything again at an
// interval. Its report.Store (Store) keeps, per resource, the
// latest admission and background results and merges them as upstream
// does; a resource that a scan no longer finds is forgotten, and with it
// its entries. One Reporter writes at a time: run it on the leader.
type Reporter struct {
	h     *Host
	src   *PolicySource
	store *report.Store
	known map[string]bool // resources of the last scan

	writeMu sync.Mutex
	written map[string]writtenReport // by reportKey; nil: list the cluster's
}

// NewReporter returns a Reporter for the policies of src. opts gives the
// entries' clock and source (report.Options).
func NewReporter(h *Host, src *PolicySource, opts report.Options) *Reporter {
	return &Reporter{h: h, src: src, store: report.NewStore(opts)}
}

// Store returns the reporter's store of results.
func (r *Reporter) Store() *report.Store { return r.store }

// scanKinds returns the resources to scan: the kinds matched by the
// validate rules of policies with background enabled, as resources the API
// server serves.
func (r *Reporter) scanKinds(set *engine.PolicySet) ([]gvk, error) {
	wanted := map[string]bool{}
	all := false
	for _, p := range set.Policies() {
		if !p.Background() {
			continue
		}
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
				if strings.Contains(k, "*") {
					all = true
					continue
				}
				wanted[k] = true
			}
		}
	}
	if len(wanted) == 0 {
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
			match := false
			for _, n := range names {
				match = match || wanted[n]
			}
			_ = all // wildcard kinds are not scanned (their cost is unbounded)
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
// policies serving now (a background request), forgets the resources that
// are gone, and writes the reports.
func (r *Reporter) Scan(ctx context.Context) error {
	set := r.src.Set()
	kinds, err := r.scanKinds(set)
	if err != nil {
		return fmt.Errorf("cluster: discovery: %w", err)
	}
	seen := map[string]bool{}
	for _, k := range kinds {
		l, err := r.h.dyn.Resource(k.gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			r.h.logf("scan: listing %s: %v", k.gvr, err)
			continue
		}
		for i := range l.Items {
			obj := l.Items[i].Object
			obj["apiVersion"], obj["kind"] = k.apiVersion, k.kind
			uid := string(l.Items[i].GetUID())
			seen[uid] = true
			resp, err := set.Validate(ctx, &engine.Request{Object: obj, Background: true})
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				continue
			}
			if err := r.store.Update(uid, resp.Policies, true); err != nil {
				r.h.logf("scan: %v", err)
			}
		}
	}
	for uid := range r.known {
		if !seen[uid] {
			r.store.Delete(uid) // the resource is gone: so are its entries
		}
	}
	r.known = seen
	return r.Write(ctx)
}

// Write makes the cluster's reports (those labelled managed by kyverno)
// what the store renders: new ones are created, changed ones updated
// (timestamps alone are no change), and the others deleted. The reports
// in the cluster are listed on the first Write and after a failed one;
// otherwise the Reporter writes from what it wrote last.
func (r *Reporter) Write(ctx context.Context) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	if r.written == nil {
		if err := r.list(ctx); err != nil {
			return err
		}
	}
	type rendered struct {
		rep report.Report
		fp  string
	}
	desired := map[string]rendered{}
	for _, rep := range r.store.Reports() {
		key, fp := reportFingerprint(&rep)
		desired[key] = rendered{rep, fp}
	}
	var errs []error
	for key, d := range desired {
		fp := d.fp
		prev, ok := r.written[key]
		if ok && prev.fp == fp {
			continue
		}
		obj, err := toObject(d.rep.Object())
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: obj}
		gvr := reportResource(u.GetKind())
		ri := r.h.dyn.Resource(gvr).Namespace(u.GetNamespace())
		var out *unstructured.Unstructured
		if ok {
			u.SetResourceVersion(prev.rv)
			out, err = ri.Update(ctx, u, metav1.UpdateOptions{})
		} else {
			out, err = ri.Create(ctx, u, metav1.CreateOptions{})
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r.written[key] = writtenReport{rv: out.GetResourceVersion(), fp: fp, gvr: gvr, namespace: u.GetNamespace(), name: u.GetName()}
	}
	for key, w := range r.written {
		if _, ok := desired[key]; ok {
			continue
		}
		err := r.h.dyn.Resource(w.gvr).Namespace(w.namespace).Delete(ctx, w.name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		delete(r.written, key)
	}
	if len(errs) > 0 {
		r.written = nil // list the cluster's reports again next time
		return fmt.Errorf("cluster: writing reports: %w", errs[0])
	}
	return nil
}

// writtenReport is what the Reporter knows of a report in the cluster.
type writtenReport struct {
	rv, fp          string
	gvr             schema.GroupVersionResource
	namespace, name string
}

// list reads the managed reports of the cluster into r.written.
func (r *Reporter) list(ctx context.Context) error {
	written := map[string]writtenReport{}
	sel := metav1.ListOptions{LabelSelector: ireport.LabelManagedBy + "=" + ireport.ManagedByKyverno}
	for _, kind := range []string{"ClusterPolicyReport", "PolicyReport"} {
		gvr := reportResource(kind)
		l, err := r.h.dyn.Resource(gvr).List(ctx, sel)
		if err != nil {
			return fmt.Errorf("cluster: listing reports: %w", err)
		}
		for i := range l.Items {
			cur := &l.Items[i]
			var obj api.PolicyReport // the cluster report has the same fields
			_ = fromObject(cur.Object, &obj)
			rep := report.Report{Name: cur.GetName(), Summary: obj.Summary, Results: obj.Results}
			if kind == "PolicyReport" {
				rep.Namespace = cur.GetNamespace()
			}
			key, fp := reportFingerprint(&rep)
			written[key] = writtenReport{rv: cur.GetResourceVersion(), fp: fp, gvr: gvr, namespace: cur.GetNamespace(), name: cur.GetName()}
		}
	}
	r.written = written
	return nil
}

func reportResource(kind string) schema.GroupVersionResource {
	if kind == "ClusterPolicyReport" {
		return ClusterPolicyReports
	}
	return PolicyReports
}

func reportKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

// reportFingerprint returns a rendered report's key and a hash of its
// summary and results without the entries' timestamps: two reports with
// the same fingerprint say the same.
func reportFingerprint(rep *report.Report) (key, fp string) {
	kind := "PolicyReport"
	if rep.Namespace == "" {
		kind = "ClusterPolicyReport"
	}
	stripped := make([]api.PolicyReportResult, len(rep.Results))
	copy(stripped, rep.Results)
	for i := range stripped {
		stripped[i].Timestamp = metav1.Timestamp{}
	}
	data, _ := json.Marshal(struct {
		S api.PolicyReportSummary
		R []api.PolicyReportResult
	}{rep.Summary, stripped})
	sum := sha256.Sum256(data)
	return reportKey(kind, rep.Namespace, rep.Name), hex.EncodeToString(sum[:])
}

// Run keeps the reports current until ctx is done: it watches the
// scanned kinds (informers, started as policies name new kinds), evaluates
// a resource when it is created or changed and forgets it when it is
// deleted, writes the reports that changed about once a second, and
// evaluates every watched resource again each interval (policies change).
func (r *Reporter) Run(ctx context.Context, interval time.Duration) {
	factory := dynamicinformer.NewDynamicSharedInformerFactory(r.h.dyn, 0)
	defer factory.Shutdown()
	var (
		mu      sync.Mutex
		dirty   bool
		watched = map[schema.GroupVersionResource]gvk{}
		infs    = map[schema.GroupVersionResource]cache.SharedIndexInformer{}
	)
	markDirty := func() {
		mu.Lock()
		dirty = true
		mu.Unlock()
	}
	eval := func(k gvk, o any) {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return
		}
		obj := u.DeepCopy().Object
		obj["apiVersion"], obj["kind"] = k.apiVersion, k.kind
		resp, err := r.src.Set().Validate(ctx, &engine.Request{Object: obj, Background: true})
		if err != nil {
			return
		}
		if err := r.store.Update(string(u.GetUID()), resp.Policies, true); err != nil {
			r.h.logf("reports: %v", err)
		}
		markDirty()
	}
	forget := func(o any) {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		if u, ok := o.(*unstructured.Unstructured); ok {
			r.store.Delete(string(u.GetUID()))
			markDirty()
		}
	}
	watch := func() {
		kinds, err := r.scanKinds(r.src.Set())
		if err != nil {
			r.h.logf("reports: discovery: %v", err)
		}
		for _, k := range kinds {
			if _, ok := watched[k.gvr]; ok {
				continue
			}
			watched[k.gvr] = k
			inf := factory.ForResource(k.gvr).Informer()
			_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc: func(o any) { eval(k, o) },
				UpdateFunc: func(old, o any) {
					ou, _ := old.(*unstructured.Unstructured)
					nu, _ := o.(*unstructured.Unstructured)
					if ou != nil && nu != nil && ou.GetResourceVersion() == nu.GetResourceVersion() {
						return
					}
					eval(k, o)
				},
				DeleteFunc: forget,
			})
			infs[k.gvr] = inf
		}
		factory.Start(ctx.Done())
		factory.WaitForCacheSync(ctx.Done())
	}
	rescan := func() {
		for gvr, inf := range infs {
			for _, o := range inf.GetStore().List() {
				eval(watched[gvr], o)
			}
		}
	}
	watch()
	flush := time.NewTicker(time.Second)
	defer flush.Stop()
	full := time.NewTicker(interval)
	defer full.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-full.C:
			watch()
			rescan()
		case <-flush.C:
		}
		mu.Lock()
		d := dirty
		dirty = false
		mu.Unlock()
		if d {
			if err := r.Write(ctx); err != nil && ctx.Err() == nil {
				r.h.logf("%v", err)
				markDirty()
			}
		}
	}
}
