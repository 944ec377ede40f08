package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
	"unicode"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cluster/dynclient"
	"github.com/gavelpolicy/gavel/engine"
)

// Bounds of --batch-size and --concurrent, as upstream's resource loader
// checks them.
const (
	minBatchSize  = 100
	maxBatchSize  = 20000
	maxConcurrent = 32
)

// liveCluster is the cluster of a --cluster run: a dynamic client,
// dynclient's Discovery on a REST client (kinds; the REST client also
// serves apiCall entries) and a RESTMapper on it, and gavel's
// dynclient.Client for the engine's reads. client-go's discovery package
// is not linked: see dynclient.Discovery.
type liveCluster struct {
	dyn    dynamic.Interface
	disc   *dynclient.Discovery
	mapper meta.RESTMapper
	client *dynclient.Client
	api    *dynclient.APIClient
}

// connectCluster builds the clients of --cluster from the kubeconfig as
// kubectl finds it (--kubeconfig, else $KUBECONFIG, else ~/.kube/config,
// else the in-cluster service account) with --context.
func connectCluster(f applyFlags) (*liveCluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f.kubeconfig != "" {
		rules.ExplicitPath = f.kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: f.kubeContext}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, err
	}
	// client-go's default (5 requests a second) would make a run wait on
	// its own reads: namespace labels and context entries, per resource
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	rc, err := dynclient.NewRESTClient(cfg)
	if err != nil {
		return nil, err
	}
	return newLiveCluster(dyn, rc), nil
}

// newLiveCluster returns the cluster of dyn and of rc, a REST client
// rooted at the API server (fakes and test servers in tests).
func newLiveCluster(dyn dynamic.Interface, rc rest.Interface) *liveCluster {
	disc := dynclient.NewDiscovery(rc)
	// a run is one-shot: its discovery reads end with the process
	mapper := dynclient.NewMapper(context.Background(), disc)
	return &liveCluster{
		dyn: dyn, disc: disc, mapper: mapper,
		client: dynclient.New(dyn, mapper),
		api:    dynclient.NewAPIClient(rc),
	}
}

// engineOptions are the host interfaces the cluster serves, as upstream's
// CLI reads them through its client with --cluster: objects of context
// entries and mutate-existing targets, ConfigMaps, namespace labels and
// apiCall entries.
func (lc *liveCluster) engineOptions() []engine.Option {
	opts := []engine.Option{
		engine.WithClient(lc.client),
		engine.WithConfigMapResolver(lc.client),
		engine.WithNamespaceLabeler(&runLabels{src: lc.client}),
	}
	if lc.api != nil {
		opts = append(opts, engine.WithAPIClient(lc.api))
	}
	return opts
}

// runLabels remembers the labels of each namespace for the run, as the
// cluster host's informer does: a run reads each Namespace once, not once
// per resource.
type runLabels struct {
	src engine.NamespaceLabeler
	mu  sync.Mutex
	m   map[string]labelsResult
}

type labelsResult struct {
	labels map[string]string
	err    error
}

// NamespaceLabels implements engine.NamespaceLabeler.
func (r *runLabels) NamespaceLabels(ctx context.Context, namespace string) (map[string]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if res, ok := r.m[namespace]; ok {
		return res.labels, res.err
	}
	labels, err := r.src.NamespaceLabels(ctx, namespace)
	if ctx.Err() != nil {
		return labels, err // not the namespace's answer
	}
	if r.m == nil {
		r.m = map[string]labelsResult{}
	}
	r.m[namespace] = labelsResult{labels, err}
	return labels, err
}

// listTask is one kind to list: all namespaces, or one.
type listTask struct {
	gvk       schema.GroupVersionKind
	gvr       schema.GroupVersionResource
	namespace string
}

// kindSelector is a kind of a rule's match block: [[group/]version/]Kind,
// each part possibly a wildcard.
// kindSelector selects the kinds (or, with resource set, the resources)
// to list; its fields may be path.Match patterns.
type kindSelector struct{ group, version, kind, resource string }

// parseKindSelector splits a kind of a match block as upstream does;
// ok is false for subresources (Pod/status), which are not listed.
func parseKindSelector(s string) (sel kindSelector, ok bool) {
	parts := strings.Split(s, "/")
	last := parts[len(parts)-1]
	if len(parts) > 1 && last != "*" && last != "" && unicode.IsLower([]rune(last)[0]) {
		return sel, false // a subresource
	}
	sel = kindSelector{group: "*", version: "*", kind: last}
	switch len(parts) {
	case 1:
	case 2:
		sel.version = parts[0]
	case 3:
		sel.group, sel.version = parts[0], parts[1]
	default:
		return sel, false
	}
	return sel, true
}

func (s kindSelector) matches(group, version, kind, resource string) bool {
	m := func(pattern, v string) bool { ok, _ := path.Match(pattern, v); return ok }
	if s.resource != "" {
		return m(s.group, group) && m(s.version, version) && m(s.resource, resource)
	}
	return m(s.group, group) && m(s.version, version) && m(s.kind, kind)
}

// policyKinds are the kinds the rules of the set match (autogen rules
// included), which upstream lists from the cluster.
func policyKinds(set *engine.PolicySet) []kindSelector {
	var out []kindSelector
	seen := map[string]bool{}
	add := func(kinds []string) {
		for _, k := range kinds {
			if seen[k] {
				continue
			}
			seen[k] = true
			if sel, ok := parseKindSelector(k); ok {
				out = append(out, sel)
			}
		}
	}
	for _, p := range set.Policies() {
		for _, sel := range celResources(p) {
			if k := sel.group + "/" + sel.version + "/" + sel.resource; !seen[k] {
				seen[k] = true
				out = append(out, sel)
			}
		}
		for _, r := range p.Rules() {
			add(r.MatchResources.Kinds)
			for _, f := range r.MatchResources.Any {
				add(f.Kinds)
			}
			for _, f := range r.MatchResources.All {
				add(f.Kinds)
			}
		}
	}
	return out
}

// celResources are the resources the matchConstraints of a policy of a
// CEL kind select (with a ValidatingPolicy's Pod controller variants),
// subresources left out.
func celResources(p *engine.Policy) []kindSelector {
	var constraints []*admissionregistrationv1.MatchResources
	switch p.Source().(type) {
	case *api.ValidatingPolicy, *api.ValidatingAdmissionPolicy:
		for _, v := range p.Variants() {
			constraints = append(constraints, v.MatchConstraints)
		}
	}
	var out []kindSelector
	for _, m := range constraints {
		if m == nil {
			continue
		}
		for _, r := range m.ResourceRules {
			for _, g := range r.APIGroups {
				for _, v := range r.APIVersions {
					for _, res := range r.Resources {
						if name, sub, _ := strings.Cut(res, "/"); sub == "" {
							out = append(out, kindSelector{group: g, version: v, resource: name})
						}
					}
				}
			}
		}
	}
	return out
}

// listTasks resolves the kinds through discovery (the preferred version
// of each resource that can be listed) into what to list, as upstream
// does: without --namespace every kind in every namespace; with it the
// namespaced kinds in that namespace; with --cluster-wide-resources the
// cluster-scoped kinds (and, with --namespace, the namespaced kinds of that
// namespace too). Tasks are sorted, so that the output does not depend on
// the order of discovery.
func (lc *liveCluster) listTasks(ctx context.Context, sels []kindSelector, namespace string, clusterWide bool) ([]listTask, error) {
	// only the groups the kinds can name are read
	want := func(group string) bool {
		return slices.ContainsFunc(sels, func(s kindSelector) bool { ok, _ := path.Match(s.group, group); return ok })
	}
	lists, err := lc.disc.PreferredResources(ctx, want)
	if err != nil && len(lists) == 0 {
		return nil, err
	}
	var tasks []listTask
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			if !slices.ContainsFunc(sels, func(s kindSelector) bool { return s.matches(gv.Group, gv.Version, r.Kind, r.Name) }) {
				continue
			}
			t := listTask{gvk: gv.WithKind(r.Kind), gvr: gv.WithResource(r.Name)}
			switch {
			case !r.Namespaced && namespace != "" && !clusterWide:
				continue // upstream lists them in the namespace, which fails
			case r.Namespaced && clusterWide && namespace == "":
				continue
			case r.Namespaced:
				t.namespace = namespace
			}
			tasks = append(tasks, t)
		}
	}
	slices.SortFunc(tasks, func(a, b listTask) int {
		return strings.Compare(a.gvr.String(), b.gvr.String())
	})
	return tasks, nil
}

// page is one answer of a paged list.
type page struct {
	items []map[string]any
	err   error
}

// list reads the objects of a task in pages of batch objects (the API
// server's limit and continue tokens) and sends them to out, until the
// last page, an error or the end of ctx; out is closed at the end.
func (lc *liveCluster) list(ctx context.Context, t listTask, batch int, out chan<- page) {
	defer close(out)
	var ri dynamic.ResourceInterface = lc.dyn.Resource(t.gvr)
	if t.namespace != "" {
		ri = lc.dyn.Resource(t.gvr).Namespace(t.namespace)
	}
	apiVersion, kind := t.gvk.GroupVersion().String(), t.gvk.Kind
	cont := ""
	for {
		l, err := ri.List(ctx, metav1.ListOptions{Limit: int64(batch), Continue: cont})
		var p page
		if err != nil {
			p.err = fmt.Errorf("cannot list %s: %w", t.gvr.Resource, err)
		} else {
			p.items = make([]map[string]any, len(l.Items))
			for i := range l.Items {
				obj := l.Items[i].Object
				// as upstream, each object gets the kind it was listed as
				obj["apiVersion"], obj["kind"] = apiVersion, kind
				p.items[i] = obj
			}
		}
		select {
		case out <- p:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
		if cont = l.GetContinue(); cont == "" {
			return
		}
	}
}

// clusterFeed feeds the objects of the tasks to the evaluation, in the
// order of the tasks and of the API server's pages: concurrent tasks are
// listed at once (each a page ahead at most), so memory holds a few pages,
// not the cluster. With names (-r under --cluster), only the objects of
// those names are fed, and a name that matches none ends the run, as
// upstream. A kind that cannot be listed is skipped with a note on stderr
// (upstream skips it silently).
func (lc *liveCluster) clusterFeed(tasks []listTask, batch, concurrent int, names []string, stderr io.Writer) feedFunc {
	return func(emit func(job) bool) error {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		chans := make([]chan page, len(tasks))
		for i := range chans {
			chans[i] = make(chan page, 1)
		}
		go func() {
			sem := make(chan struct{}, max(concurrent, 1))
			for i, t := range tasks {
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				go func() {
					defer func() { <-sem }()
					lc.list(ctx, t, batch, chans[i])
				}()
			}
		}()
		found := map[string]bool{}
		want := map[string]bool{}
		for _, n := range names {
			want[n] = true
		}
		for i := range tasks {
			for p := range chans[i] {
				if p.err != nil {
					fmt.Fprintln(stderr, "gavel apply: note:", p.err)
					continue
				}
				for _, obj := range p.items {
					if len(want) > 0 {
						md, _ := obj["metadata"].(map[string]any)
						name, _ := md["name"].(string)
						if !want[name] {
							continue
						}
						found[name] = true
					}
					if !emit(job{docs: []api.Document{{Source: "cluster", Object: obj}}, decoded: true}) {
						return nil
					}
				}
			}
		}
		for _, n := range names {
			if !found[n] {
				return fmt.Errorf("%s not found in cluster", n)
			}
		}
		return nil
	}
}

// clusterExceptions are the PolicyExceptions of the cluster (of the
// namespace, with --namespace), which --exceptions-with-resources takes
// with --cluster; none when the cluster does not serve the kind.
func (lc *liveCluster) clusterExceptions(ctx context.Context, namespace string) ([]*api.PolicyException, error) {
	objs, err := lc.client.List(ctx, "kyverno.io/v2", "PolicyException", namespace, nil)
	if err != nil {
		if meta.IsNoMatchError(errors.Unwrap(err)) || meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, err
	}
	var out []*api.PolicyException
	for _, obj := range objs {
		d := api.Document{Source: "cluster", Object: obj}
		x, err := api.DecodeObject(d)
		if err != nil {
			return nil, err
		}
		e, ok := x.(*api.PolicyException)
		if !ok {
			return nil, fmt.Errorf("%s: not a kyverno.io PolicyException", d)
		}
		out = append(out, e)
	}
	return out, nil
}

// connect is how a run reaches its cluster (fake clusters in tests).
var connect = connectCluster
