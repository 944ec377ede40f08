package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/report"
)

// Reporter writes policy reports (wgpolicyk8s.io/v1alpha2 PolicyReports
// and ClusterPolicyReports) to the cluster from background scans of the
// existing resources. Its report.Store (Store) keeps, per resource, the
// latest admission and background results and merges them as upstream
// does; a resource that a scan no longer finds is forgotten, and with it
// its entries. One Reporter writes at a time: run it on the leader.
type Reporter struct {
	h     *Host
	src   *PolicySource
	store *report.Store
	known map[string]bool // resources of the last scan
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
// (timestamps alone are no change), and the others deleted.
func (r *Reporter) Write(ctx context.Context) error {
	desired := map[string]*unstructured.Unstructured{}
	for _, rep := range r.store.Reports() {
		obj, err := toObject(rep)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetAPIVersion() == "" {
			u.SetAPIVersion("wgpolicyk8s.io/v1alpha2")
		}
		desired[reportKey(u.GetKind(), u.GetNamespace(), u.GetName())] = u
	}
	sel := metav1.ListOptions{LabelSelector: report.LabelManagedBy + "=" + report.ManagedByKyverno}
	var errs []error
	for _, gvr := range []schema.GroupVersionResource{ClusterPolicyReports, PolicyReports} {
		kind := "PolicyReport"
		if gvr == ClusterPolicyReports {
			kind = "ClusterPolicyReport"
		}
		l, err := r.h.dyn.Resource(gvr).List(ctx, sel)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i := range l.Items {
			cur := &l.Items[i]
			key := reportKey(kind, cur.GetNamespace(), cur.GetName())
			want, ok := desired[key]
			ri := r.h.dyn.Resource(gvr).Namespace(cur.GetNamespace())
			if !ok {
				if err := ri.Delete(ctx, cur.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					errs = append(errs, err)
				}
				continue
			}
			delete(desired, key)
			if sameResults(cur.Object, want.Object) {
				continue
			}
			want.SetResourceVersion(cur.GetResourceVersion())
			if _, err := ri.Update(ctx, want, metav1.UpdateOptions{}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, u := range desired {
		gvr := PolicyReports
		if u.GetKind() == "ClusterPolicyReport" {
			gvr = ClusterPolicyReports
		}
		if _, err := r.h.dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cluster: writing reports: %w", errs[0])
	}
	return nil
}

func reportKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

// sameResults compares the summaries and results of two reports, leaving
// out the entries' timestamps.
func sameResults(a, b map[string]any) bool {
	strip := func(m map[string]any) any {
		data, _ := json.Marshal(map[string]any{"summary": m["summary"], "results": m["results"]})
		var v map[string]any
		_ = json.Unmarshal(data, &v)
		if rs, ok := v["results"].([]any); ok {
			for _, e := range rs {
				if em, ok := e.(map[string]any); ok {
					delete(em, "timestamp")
				}
			}
		}
		return v
	}
	return reflect.DeepEqual(strip(a), strip(b))
}
