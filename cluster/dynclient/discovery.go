package dynclient

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// Discovery reads the API server's discovery documents (GET /api, /apis,
// /api/v1 and /apis/GROUP/VERSION) with a plain REST client and decodes
// them with encoding/json into metav1 types, remembering what it read
// until Reset. It stands in for client-go's discovery package, restmapper
// and discovery/cached/memory, which the CLI does not link: discovery
// imports k8s.io/client-go/kubernetes/scheme, which registers every
// built-in API group, and its OpenAPI clients; with them the CLI binary
// was 52.4 MB, without them it is back under 40 MB (measured with
// `go build ./cmd/gavel`). Resource lists are read per group version, only
// for the groups asked about. Discovery is safe for concurrent use.
type Discovery struct {
	rc rest.Interface

	mu     sync.Mutex
	groups []metav1.APIGroup // nil until read; the core group has Name ""
	lists  map[string][]metav1.APIResource
	errs   map[string]error
}

// NewRESTClient returns an unversioned REST client on cfg that serves
// every path of the API server: discovery documents and apiCall paths.
// Its serializer knows only metav1 (Status errors), not the built-in kinds;
// requests time out after 32 s unless cfg says otherwise, as with
// client-go's discovery client.
func NewRESTClient(cfg *rest.Config) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = nil
	c.APIPath = ""
	if c.NegotiatedSerializer == nil {
		s := runtime.NewScheme()
		metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
		c.NegotiatedSerializer = serializer.NewCodecFactory(s).WithoutConversion()
	}
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	// the defaults of client-go's discovery client, whose REST client
	// this replaces
	if c.Timeout == 0 {
		c.Timeout = 32 * time.Second
	}
	if c.Burst == 0 && c.QPS < 100 {
		c.Burst = 300
	}
	return rest.UnversionedRESTClientFor(c)
}

// NewDiscovery returns a Discovery reading through rc, a REST client
// rooted at the API server (NewRESTClient).
func NewDiscovery(rc rest.Interface) *Discovery { return &Discovery{rc: rc} }

func (d *Discovery) get(ctx context.Context, path string, into any) error {
	raw, err := d.rc.Get().AbsPath(path).SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("cluster: discovery %s: %w", path, err)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("cluster: discovery %s: %w", path, err)
	}
	return nil
}

// Groups returns the API groups of the server, the core group (Name "")
// first, each with its versions and preferred version.
func (d *Discovery) Groups(ctx context.Context) ([]metav1.APIGroup, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.groupsLocked(ctx)
}

func (d *Discovery) groupsLocked(ctx context.Context) ([]metav1.APIGroup, error) {
	if d.groups != nil {
		return d.groups, nil
	}
	var core metav1.APIVersions
	if err := d.get(ctx, "/api", &core); err != nil {
		return nil, err
	}
	groups := []metav1.APIGroup{}
	if len(core.Versions) > 0 {
		g := metav1.APIGroup{}
		for _, v := range core.Versions {
			g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: v, Version: v})
		}
		g.PreferredVersion = g.Versions[0]
		groups = append(groups, g)
	}
	var list metav1.APIGroupList
	if err := d.get(ctx, "/apis", &list); err != nil {
		return nil, err
	}
	d.groups = append(groups, list.Groups...)
	return d.groups, nil
}

// Resources returns the resources of a group version ("v1",
// "apps/v1"), without subresources ("pods/status").
func (d *Discovery) Resources(ctx context.Context, gv schema.GroupVersion) ([]metav1.APIResource, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.resourcesLocked(ctx, gv)
}

func (d *Discovery) resourcesLocked(ctx context.Context, gv schema.GroupVersion) ([]metav1.APIResource, error) {
	key := gv.String()
	if l, ok := d.lists[key]; ok {
		return l, nil
	}
	if err, ok := d.errs[key]; ok {
		return nil, err
	}
	p := "/apis/" + key
	if gv.Group == "" {
		p = "/api/" + gv.Version
	}
	var list metav1.APIResourceList
	err := d.get(ctx, p, &list)
	if ctx.Err() != nil {
		return nil, err // not the server's answer: not remembered
	}
	if err != nil {
		if d.errs == nil {
			d.errs = map[string]error{}
		}
		d.errs[key] = err
		return nil, err
	}
	var out []metav1.APIResource
	for _, r := range list.APIResources {
		if !strings.Contains(r.Name, "/") {
			out = append(out, r)
		}
	}
	if d.lists == nil {
		d.lists = map[string][]metav1.APIResource{}
	}
	d.lists[key] = out
	return out, nil
}

// versions returns the versions of g, the preferred one first.
func versions(g metav1.APIGroup) []schema.GroupVersion {
	out := []schema.GroupVersion{{Group: g.Name, Version: g.PreferredVersion.Version}}
	for _, v := range g.Versions {
		if v.Version != g.PreferredVersion.Version {
			out = append(out, schema.GroupVersion{Group: g.Name, Version: v.Version})
		}
	}
	if out[0].Version == "" {
		out = out[1:]
	}
	return out
}

// PreferredResources returns, as client-go's ServerPreferredResources
// does, the resources of the groups for which want returns true (all
// groups if want is nil), each under the preferred version of its group,
// or the first version that serves it when the preferred one does not.
// Group versions that cannot be read (a 404 of a stale aggregated API)
// are left out; the error says which, and is returned with what could be
// read.
func (d *Discovery) PreferredResources(ctx context.Context, want func(group string) bool) ([]*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	groups, err := d.groupsLocked(ctx)
	if err != nil {
		return nil, err
	}
	var out []*metav1.APIResourceList
	var failed []string
	var firstErr error
	for _, g := range groups {
		if want != nil && !want(g.Name) {
			continue
		}
		seen := map[string]bool{}
		for _, gv := range versions(g) {
			rs, err := d.resourcesLocked(ctx, gv)
			if err != nil {
				if ctx.Err() != nil {
					return out, err
				}
				failed = append(failed, gv.String())
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			l := &metav1.APIResourceList{GroupVersion: gv.String()}
			for _, r := range rs {
				if !seen[r.Name] {
					seen[r.Name] = true
					l.APIResources = append(l.APIResources, r)
				}
			}
			if len(l.APIResources) > 0 {
				out = append(out, l)
			}
		}
	}
	if failed != nil {
		return out, fmt.Errorf("cluster: discovery failed for %s: %w", strings.Join(failed, ", "), firstErr)
	}
	return out, nil
}

// Reset forgets what was read, so that the next call reads the server
// again (a CRD may have been installed since).
func (d *Discovery) Reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.groups, d.lists, d.errs = nil, nil, nil
}

// Mapper is a meta.RESTMapper on a Discovery that reads the resource lists
// of a group the first time a kind or resource of that group is asked
// about (all groups for a resource without a group). Reset forgets them.
// It is safe for concurrent use.
type Mapper struct {
	d   *Discovery
	ctx context.Context

	mu     sync.Mutex
	m      *meta.DefaultRESTMapper
	loaded map[string]bool
}

var _ meta.ResettableRESTMapper = (*Mapper)(nil)

// NewMapper returns a Mapper on d whose discovery reads run under ctx.
func NewMapper(ctx context.Context, d *Discovery) *Mapper {
	return &Mapper{d: d, ctx: ctx}
}

// Reset implements meta.ResettableRESTMapper: the discovery documents are
// read again.
func (m *Mapper) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.d.Reset()
	m.m, m.loaded = nil, nil
}

// with runs f on the mapper once the given groups are loaded (every
// group when all is set). Group versions that cannot be read are left
// out: their kinds are then no match.
func (m *Mapper) with(all bool, groups []string, f func(meta.RESTMapper)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	gs, err := m.d.Groups(m.ctx)
	if err != nil {
		return err
	}
	if m.m == nil {
		var order []schema.GroupVersion
		for _, g := range gs {
			order = append(order, versions(g)...)
		}
		m.m = meta.NewDefaultRESTMapper(order)
		m.loaded = map[string]bool{}
	}
	for _, g := range gs {
		if m.loaded[g.Name] || (!all && !slices.Contains(groups, g.Name)) {
			continue
		}
		for _, gv := range versions(g) {
			rs, err := m.d.Resources(m.ctx, gv)
			if err != nil {
				if m.ctx.Err() != nil {
					return err
				}
				continue
			}
			for _, r := range rs {
				scope := meta.RESTScopeRoot
				if r.Namespaced {
					scope = meta.RESTScopeNamespace
				}
				singular := r.SingularName
				if singular == "" {
					singular = strings.ToLower(r.Kind)
				}
				m.m.AddSpecific(gv.WithKind(r.Kind), gv.WithResource(r.Name), gv.WithResource(singular), scope)
			}
		}
		m.loaded[g.Name] = true
	}
	f(m.m)
	return nil
}

func resourceGroups(r schema.GroupVersionResource) (bool, []string) {
	return r.Group == "", []string{r.Group}
}

// KindFor implements meta.RESTMapper.
func (m *Mapper) KindFor(r schema.GroupVersionResource) (out schema.GroupVersionKind, err error) {
	all, gs := resourceGroups(r)
	if e := m.with(all, gs, func(rm meta.RESTMapper) { out, err = rm.KindFor(r) }); e != nil {
		return out, e
	}
	return out, err
}

// KindsFor implements meta.RESTMapper.
func (m *Mapper) KindsFor(r schema.GroupVersionResource) (out []schema.GroupVersionKind, err error) {
	all, gs := resourceGroups(r)
	if e := m.with(all, gs, func(rm meta.RESTMapper) { out, err = rm.KindsFor(r) }); e != nil {
		return nil, e
	}
	return out, err
}

// ResourceFor implements meta.RESTMapper.
func (m *Mapper) ResourceFor(r schema.GroupVersionResource) (out schema.GroupVersionResource, err error) {
	all, gs := resourceGroups(r)
	if e := m.with(all, gs, func(rm meta.RESTMapper) { out, err = rm.ResourceFor(r) }); e != nil {
		return out, e
	}
	return out, err
}

// ResourcesFor implements meta.RESTMapper.
func (m *Mapper) ResourcesFor(r schema.GroupVersionResource) (out []schema.GroupVersionResource, err error) {
	all, gs := resourceGroups(r)
	if e := m.with(all, gs, func(rm meta.RESTMapper) { out, err = rm.ResourcesFor(r) }); e != nil {
		return nil, e
	}
	return out, err
}

// RESTMapping implements meta.RESTMapper.
func (m *Mapper) RESTMapping(gk schema.GroupKind, versions ...string) (out *meta.RESTMapping, err error) {
	if e := m.with(false, []string{gk.Group}, func(rm meta.RESTMapper) { out, err = rm.RESTMapping(gk, versions...) }); e != nil {
		return nil, e
	}
	return out, err
}

// RESTMappings implements meta.RESTMapper.
func (m *Mapper) RESTMappings(gk schema.GroupKind, versions ...string) (out []*meta.RESTMapping, err error) {
	if e := m.with(false, []string{gk.Group}, func(rm meta.RESTMapper) { out, err = rm.RESTMappings(gk, versions...) }); e != nil {
		return nil, e
	}
	return out, err
}

// ResourceSingularizer implements meta.RESTMapper.
func (m *Mapper) ResourceSingularizer(resource string) (out string, err error) {
	if e := m.with(true, nil, func(rm meta.RESTMapper) { out, err = rm.ResourceSingularizer(resource) }); e != nil {
		return "", e
	}
	return out, err
}
