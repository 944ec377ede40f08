// Package inmem is an in-memory Kubernetes cluster that implements the
// engine's host interfaces: a resource client, ConfigMap lookups,
// Kubernetes API GET/list paths and namespace labels. Tests, examples and
// the gavel CLI use it as the cluster; the UpdateRequests of generate and
// mutate-existing rules go to a generate.MemoryQueue.
//
// The cluster emits no events: it has no watch, and changing an object
// (Add, Create, Update, Delete) tells nobody. A host or test that drives a
// generate.Controller with it calls the controller's On* handlers itself
// after each change (OnTriggerUpdate, OnDownstreamChange, ...), and
// runs the controller on the engine's queue (Controller.Run).
package inmem

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/internal/deepcopy"
)

// Cluster is a concurrency-safe in-memory object store.
type Cluster struct {
	mu      sync.RWMutex
	objects map[key]map[string]any
	names   resourceNames
	rv      int
	// Deny, when set, is consulted before every write; a non-nil error
	// refuses the write (to simulate missing permissions).
	Deny func(verb string, obj map[string]any) error
}

type key struct {
	apiVersion, kind, namespace, name string
}

// New returns a cluster holding copies of the given objects.
func New(objs ...map[string]any) *Cluster {
	c := &Cluster{objects: map[key]map[string]any{}}
	for _, o := range objs {
		c.put(deepcopy.Object(o))
	}
	return c
}

// AddOwned is Add without the deep copies, for many large objects: the
// cluster keeps the objects themselves (only each object's top level and
// metadata are copied, for resourceVersion), so the caller hands them over
// and must not modify them afterwards (reading them stays fine). The
// cluster never modifies a stored object in place and hands out copies.
func (c *Cluster) AddOwned(objs ...map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range objs {
		if o == nil {
			c.put(deepcopy.Object(o))
			continue
		}
		top := make(map[string]any, len(o)+1)
		for k, v := range o {
			top[k] = v
		}
		if md, ok := o["metadata"].(map[string]any); ok {
			cp := make(map[string]any, len(md)+1)
			for k, v := range md {
				cp[k] = v
			}
			top["metadata"] = cp
		}
		c.put(top)
	}
}

var (
	_ engine.Client            = (*Cluster)(nil)
	_ engine.ConfigMapResolver = (*Cluster)(nil)
	_ engine.APIClient         = (*Cluster)(nil)
	_ engine.NamespaceLabeler  = (*Cluster)(nil)
)

func keyOf(obj map[string]any) key {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	return key{av, kind, ns, name}
}

func (c *Cluster) put(obj map[string]any) {
	c.rv++
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		md = map[string]any{}
		obj["metadata"] = md
	}
	md["resourceVersion"] = fmt.Sprint(c.rv)
	c.objects[keyOf(obj)] = obj
	c.names.learn(obj)
}

// Add stores (or replaces) objects.
func (c *Cluster) Add(objs ...map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range objs {
		c.put(deepcopy.Object(o))
	}
}

// Objects returns copies of every stored object in a stable order.
func (c *Cluster) Objects() []map[string]any {
	c.mu.RLock()
	defer c.mu.RUnlock()
	keys := make([]key, 0, len(c.objects))
	for k := range c.objects {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		if a.namespace != b.namespace {
			return a.namespace < b.namespace
		}
		return a.name < b.name
	})
	out := make([]map[string]any, len(keys))
	for i, k := range keys {
		out[i] = deepcopy.Object(c.objects[k])
	}
	return out
}

// Get implements engine.Client.
func (c *Cluster) Get(_ context.Context, apiVersion, kind, namespace, name string) (map[string]any, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if o, ok := c.objects[key{apiVersion, kind, namespace, name}]; ok {
		return deepcopy.Object(o), nil
	}
	// match any version of the same group when the exact one is absent
	g, _ := splitAPIVersion(apiVersion)
	for k, o := range c.objects {
		kg, _ := splitAPIVersion(k.apiVersion)
		if kg == g && k.kind == kind && k.namespace == namespace && k.name == name {
			return deepcopy.Object(o), nil
		}
	}
	return nil, fmt.Errorf("%s %s/%s: %w", kind, namespace, name, engine.ErrNotFound)
}

// List implements engine.Client. An empty namespace lists all namespaces;
// an empty apiVersion matches any version.
func (c *Cluster) List(_ context.Context, apiVersion, kind, namespace string, selector *metav1.LabelSelector) ([]map[string]any, error) {
	var sel labels.Selector = labels.Everything()
	if selector != nil {
		s, err := metav1.LabelSelectorAsSelector(selector)
		if err != nil {
			return nil, err
		}
		sel = s
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []map[string]any
	for k, o := range c.objects {
		if k.kind != kind || (apiVersion != "" && k.apiVersion != apiVersion) || (namespace != "" && k.namespace != namespace) {
			continue
		}
		md, _ := o["metadata"].(map[string]any)
		if !sel.Matches(labels.Set(stringMap(md["labels"]))) {
			continue
		}
		out = append(out, deepcopy.Object(o))
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := keyOf(out[i]), keyOf(out[j])
		if a.namespace != b.namespace {
			return a.namespace < b.namespace
		}
		return a.name < b.name
	})
	return out, nil
}

// Create implements engine.Client.
func (c *Cluster) Create(_ context.Context, obj map[string]any) (map[string]any, error) {
	if c.Deny != nil {
		if err := c.Deny("create", obj); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := keyOf(obj)
	if _, ok := c.objects[k]; ok {
		return nil, fmt.Errorf("%s %s/%s already exists", k.kind, k.namespace, k.name)
	}
	cp := deepcopy.Object(obj)
	c.put(cp)
	return deepcopy.Object(cp), nil
}

// Update implements engine.Client.
func (c *Cluster) Update(_ context.Context, obj map[string]any) (map[string]any, error) {
	if c.Deny != nil {
		if err := c.Deny("update", obj); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := keyOf(obj)
	if _, ok := c.objects[k]; !ok {
		return nil, fmt.Errorf("%s %s/%s: %w", k.kind, k.namespace, k.name, engine.ErrNotFound)
	}
	cp := deepcopy.Object(obj)
	c.put(cp)
	return deepcopy.Object(cp), nil
}

// Delete implements engine.Client.
func (c *Cluster) Delete(_ context.Context, apiVersion, kind, namespace, name string) error {
	if c.Deny != nil {
		if err := c.Deny("delete", map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "namespace": namespace}}); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key{apiVersion, kind, namespace, name}
	if _, ok := c.objects[k]; !ok {
		return fmt.Errorf("%s %s/%s: %w", kind, namespace, name, engine.ErrNotFound)
	}
	delete(c.objects, k)
	return nil
}

// GetConfigMap implements engine.ConfigMapResolver.
func (c *Cluster) GetConfigMap(ctx context.Context, namespace, name string) (map[string]any, error) {
	return c.Get(ctx, "v1", "ConfigMap", namespace, name)
}

// NamespaceLabels implements engine.NamespaceLabeler.
func (c *Cluster) NamespaceLabels(ctx context.Context, namespace string) (map[string]string, error) {
	ns, err := c.Get(ctx, "v1", "Namespace", "", namespace)
	if err != nil {
		return nil, err
	}
	md, _ := ns["metadata"].(map[string]any)
	return stringMap(md["labels"]), nil
}

// RawAbsPath implements engine.APIClient for GET requests on the paths
// of the Kubernetes API: /api/v1[/namespaces/NS]/RESOURCE[/NAME] and
// /apis/GROUP/VERSION[/namespaces/NS]/RESOURCE[/NAME]. RESOURCE is a
// built-in kind's plural, one a stored CustomResourceDefinition declares,
// or the plural of a stored object's kind. A list takes a labelSelector and
// a fieldSelector on metadata.name and metadata.namespace (=, == and !=),
// the fields every kind's objects are selected by; another field is an
// error, as the API server's for most kinds.
func (c *Cluster) RawAbsPath(ctx context.Context, path, method string, _ []byte) ([]byte, error) {
	if method != "" && method != "GET" {
		return nil, fmt.Errorf("in-memory cluster: method %s not supported on %s", method, path)
	}
	p := path
	query := ""
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p, query = p[:i], p[i+1:]
	}
	parts := strings.Split(strings.Trim(p, "/"), "/")
	var apiVersion string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		apiVersion, parts = parts[1], parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		apiVersion, parts = parts[1]+"/"+parts[2], parts[3:]
	default:
		return nil, fmt.Errorf("in-memory cluster: unsupported path %s", path)
	}
	namespace := ""
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) != 2 {
		namespace, parts = parts[1], parts[2:]
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("in-memory cluster: unsupported path %s", path)
	}
	kind := c.kindOf(apiVersion, parts[0])
	var selector *metav1.LabelSelector
	var fields []fieldTest
	for _, kv := range strings.Split(query, "&") {
		if v, ok := strings.CutPrefix(kv, "labelSelector="); ok {
			sel, err := metav1.ParseToLabelSelector(unescape(v))
			if err != nil {
				return nil, err
			}
			selector = sel
		}
		if v, ok := strings.CutPrefix(kv, "fieldSelector="); ok {
			fs, err := parseFieldSelector(unescape(v))
			if err != nil {
				return nil, fmt.Errorf("in-memory cluster: %s: %w", path, err)
			}
			fields = append(fields, fs...)
		}
	}
	if len(parts) >= 2 {
		obj, err := c.Get(ctx, apiVersion, kind, namespace, parts[1])
		if err != nil {
			return nil, err
		}
		return json.Marshal(obj)
	}
	items, err := c.List(ctx, apiVersion, kind, namespace, selector)
	if err != nil {
		return nil, err
	}
	list := make([]any, 0, len(items))
	for _, it := range items {
		if selectsFields(fields, it) {
			list = append(list, it)
		}
	}
	return json.Marshal(map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind + "List",
		"metadata":   map[string]any{},
		"items":      list,
	})
}

// fieldTest is one requirement of a field selector.
type fieldTest struct {
	field, value string
	equal        bool
}

// parseFieldSelector parses a field selector on metadata.name and
// metadata.namespace.
func parseFieldSelector(s string) ([]fieldTest, error) {
	var out []fieldTest
	for _, req := range strings.Split(s, ",") {
		if req == "" {
			continue
		}
		var t fieldTest
		switch {
		case strings.Contains(req, "!="):
			t.field, t.value, _ = strings.Cut(req, "!=")
		case strings.Contains(req, "=="):
			t.field, t.value, _ = strings.Cut(req, "==")
			t.equal = true
		case strings.Contains(req, "="):
			t.field, t.value, _ = strings.Cut(req, "=")
			t.equal = true
		default:
			return nil, fmt.Errorf("field selector %q: no operator", req)
		}
		if t.field != "metadata.name" && t.field != "metadata.namespace" {
			return nil, fmt.Errorf("field selector %q: field %s not supported (metadata.name and metadata.namespace are)", req, t.field)
		}
		out = append(out, t)
	}
	return out, nil
}

// selectsFields tells whether obj meets every requirement.
func selectsFields(tests []fieldTest, obj map[string]any) bool {
	md, _ := obj["metadata"].(map[string]any)
	for _, t := range tests {
		v, _ := md[strings.TrimPrefix(t.field, "metadata.")].(string)
		if (v == t.value) != t.equal {
			return false
		}
	}
	return true
}

func unescape(s string) string {
	r := strings.NewReplacer("%3D", "=", "%2C", ",", "%21", "!", "%20", " ", "+", " ")
	return r.Replace(s)
}

func splitAPIVersion(av string) (string, string) {
	if i := strings.IndexByte(av, '/'); i >= 0 {
		return av[:i], av[i+1:]
	}
	return "", av
}

func stringMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	out := make(map[string]string, len(m))
	for k, x := range m {
		if s, ok := x.(string); ok {
			out[k] = s
		}
	}
	return out
}
