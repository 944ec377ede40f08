package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	eventsclient "k8s.io/client-go/kubernetes/typed/events/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cluster/dynclient"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
)

// The resources of the custom resources the host reads and writes.
var (
	ClusterPolicies      = schema.GroupVersionResource{Group: "kyverno.io", Version: "v1", Resource: "clusterpolicies"}
	Policies             = schema.GroupVersionResource{Group: "kyverno.io", Version: "v1", Resource: "policies"}
	PolicyExceptions     = schema.GroupVersionResource{Group: "kyverno.io", Version: "v2", Resource: "policyexceptions"}
	UpdateRequests       = schema.GroupVersionResource{Group: "kyverno.io", Version: "v2", Resource: "updaterequests"}
	PolicyReports        = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}
	ClusterPolicyReports = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "clusterpolicyreports"}
)

// Options configure a Host.
type Options struct {
	// Namespace is where the host keeps its UpdateRequests, its Lease and
	// its events: the namespace the controller runs in. Required.
	Namespace string
	// ExceptionNamespaces are the namespaces whose PolicyExceptions are
	// honoured ("*" or empty: all), as upstream's --exceptionNamespace.
	ExceptionNamespaces []string
	// Resync is the informers' resync period (default none).
	Resync time.Duration
	// Authorizer configures the Authorizer of CEL expressions.
	Authorizer AuthorizerOptions
	// EngineOptions are added after the host's own when the host builds its
	// engine (limits, clock, registry client...).
	EngineOptions []engine.Option
	// Logger receives the structured logs of the host and of what runs on
	// it (default slog.Default()).
	Logger *slog.Logger
	// Metrics, when set, receive the host's Prometheus metrics (see
	// Metrics); the engine then times each policy (engine.WithPolicyTiming).
	Metrics *Metrics
	// ConfigMap is the configuration ConfigMap, "namespace/name"
	// (upstream's is kyverno/kyverno): its resourceFilters and user
	// exclusions (see Config) apply from the moment it changes, without
	// a restart; a missing one filters nothing. Empty: none.
	ConfigMap string
	// Events configure the events.k8s.io/v1 Events the host records
	// (upstream's omitEvents, maxQueuedEvents and event rate limits).
	Events EventOptions
}

// Host implements gavel's host interfaces on a Kubernetes cluster:
// engine.ConfigMapResolver and engine.NamespaceLabeler from informers,
// engine.ExceptionSource from PolicyExceptions compiled when they change,
// engine.APIClient through the REST client, engine.Client through Client
// (which also serves the parameter objects and namespaceObject of CEL
// rules), engine.Authorizer through Authorizer (SubjectAccessReviews),
// and engine.UpdateRequestQueue through Queue. Start its informers before
// serving requests. A Host is safe for concurrent use.
type Host struct {
	opts   Options
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	mapper meta.RESTMapper
	disc   discovery.CachedDiscoveryInterface
	log    *slog.Logger
	// metrics may be nil: its methods then record nothing
	metrics *Metrics
	events  *eventRecorder
	client  *dynclient.Client
	queue   *queue
	authz   *Authorizer

	factory    informers.SharedInformerFactory
	dynFactory dynamicinformer.DynamicSharedInformerFactory
	configMaps corelisters.ConfigMapLister
	namespaces corelisters.NamespaceLister
	excInf     cache.SharedIndexInformer
	// celExcInf watches the policies.kyverno.io PolicyExceptions (nil
	// when the cluster does not serve them)
	celExcInf cache.SharedIndexInformer

	excMu  sync.Mutex // serializes recompilations
	excSet atomic.Pointer[exceptions.Set]
	excErr atomic.Pointer[error]

	// ctx is Start's context; wg joins the workers Start starts
	ctx     context.Context
	wg      sync.WaitGroup
	workers []func(context.Context)

	// cfgNS and cfgName locate the configuration ConfigMap (empty: none);
	// cfg is its latest parse
	cfgNS, cfgName string
	cfg            atomic.Pointer[Config]
	cfgMu          sync.Mutex // serializes the stores of cfg
	cfgVersion     string     // resourceVersion of cfg's ConfigMap
	cfgSubs        []func()   // run after each change of cfg, under cfgMu

	engOnce sync.Once
	eng     *engine.Engine
	engErr  error
}

var (
	_ engine.ConfigMapResolver = (*Host)(nil)
	_ engine.NamespaceLabeler  = (*Host)(nil)
	_ engine.ExceptionSource   = (*Host)(nil)
	_ engine.APIClient         = (*Host)(nil)
)

// New returns a Host for the cluster of cfg; its RESTMapper reads the API
// server's discovery documents (cached, refreshed when a kind is unknown).
func New(cfg *rest.Config, opts Options) (*Host, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	// events are written through a client of their own, apart from the
	// rate limits of the others: the event writers apply their own
	// (EventOptions.QPS and Burst, upstream's eventsRateLimitQPS and
	// eventsRateLimitBurst)
	ecfg := rest.CopyConfig(cfg)
	ecfg.QPS, ecfg.RateLimiter = -1, nil
	events, err := eventsclient.NewForConfig(ecfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	cached := memory.NewMemCacheClient(disc)
	h, err := newHost(kube, dyn, restmapper.NewDeferredDiscoveryRESTMapper(cached), opts)
	if err != nil {
		return nil, err
	}
	h.events.client = events
	h.disc = cached
	return h, nil
}

// NewForClients returns a Host on the given clients (fakes in tests); its
// discovery reads kube.Discovery(), cached in memory, and its events are
// written through kube.
func NewForClients(kube kubernetes.Interface, dyn dynamic.Interface, mapper meta.RESTMapper, opts Options) (*Host, error) {
	h, err := newHost(kube, dyn, mapper, opts)
	if err != nil {
		return nil, err
	}
	h.disc = memory.NewMemCacheClient(kube.Discovery())
	return h, nil
}

func newHost(kube kubernetes.Interface, dyn dynamic.Interface, mapper meta.RESTMapper, opts Options) (*Host, error) {
	if opts.Namespace == "" {
		return nil, errors.New("cluster: Options.Namespace is required")
	}
	var cfgNS, cfgName string
	if opts.ConfigMap != "" {
		var ok bool
		cfgNS, cfgName, ok = strings.Cut(opts.ConfigMap, "/")
		if !ok || cfgNS == "" || cfgName == "" || strings.Contains(cfgName, "/") {
			return nil, fmt.Errorf("cluster: Options.ConfigMap %q is not namespace/name", opts.ConfigMap)
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	h := &Host{opts: opts, kube: kube, dyn: dyn, mapper: mapper, client: dynclient.New(dyn, mapper),
		log: opts.Logger, metrics: opts.Metrics,
		authz: NewAuthorizer(kube.AuthorizationV1().SubjectAccessReviews(), opts.Authorizer)}
	h.events = newEventRecorder(kube.EventsV1(), opts.Events, h.Config, h.log)
	h.events.exceptionUID = h.exceptionUID
	h.factory = informers.NewSharedInformerFactory(kube, opts.Resync)
	h.configMaps = h.factory.Core().V1().ConfigMaps().Lister()
	h.cfg.Store(&Config{})
	if opts.ConfigMap != "" {
		h.cfgNS, h.cfgName = cfgNS, cfgName
		if err := h.watchConfig(); err != nil {
			return nil, err
		}
	}
	h.namespaces = h.factory.Core().V1().Namespaces().Lister()
	h.dynFactory = dynamicinformer.NewDynamicSharedInformerFactory(dyn, opts.Resync)
	h.excInf = h.dynFactory.ForResource(PolicyExceptions).Informer()
	infs := []cache.SharedIndexInformer{h.excInf}
	if m, err := mapper.RESTMapping(schema.GroupKind{Group: api.GroupPolicies, Kind: api.KindPolicyException}, policiesVersions...); err == nil {
		h.celExcInf = h.dynFactory.ForResource(m.Resource).Informer()
		infs = append(infs, h.celExcInf)
	}
	recompile := func(any) { h.compileExceptions() }
	for _, inf := range infs {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    recompile,
			UpdateFunc: func(_, _ any) { h.compileExceptions() },
			DeleteFunc: recompile,
		}); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	empty, _ := exceptions.Compile(nil)
	h.excSet.Store(empty)
	h.queue = newQueue(h)
	return h, nil
}

// goWorker registers a worker that Start runs until its context is done
// (the policy source's); call it before Start.
func (h *Host) goWorker(f func(context.Context)) { h.workers = append(h.workers, f) }

// Start starts the informers (ConfigMaps, Namespaces, PolicyExceptions,
// UpdateRequests, and those of the PolicySource) and the workers of what
// was built on the host, and waits until the caches are filled. When ctx
// is done they stop; Shutdown waits for them.
func (h *Host) Start(ctx context.Context) error {
	h.ctx = ctx
	h.events.start(ctx)
	for _, w := range h.workers {
		h.wg.Go(func() { w(ctx) })
	}
	h.factory.Core().V1().ConfigMaps().Informer()
	h.factory.Core().V1().Namespaces().Informer()
	h.queue.informer()
	h.factory.Start(ctx.Done())
	h.dynFactory.Start(ctx.Done())
	for typ, ok := range h.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("cluster: informer of %v did not sync", typ)
		}
	}
	for gvr, ok := range h.dynFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("cluster: informer of %v did not sync", gvr)
		}
	}
	h.compileExceptions()
	h.loadConfig()
	return nil
}

// Shutdown waits, once Start's context is done, for every goroutine the
// host started (informers, workers, the event writers); the events not
// written yet are dropped.
func (h *Host) Shutdown() {
	h.factory.Shutdown()
	h.dynFactory.Shutdown()
	h.wg.Wait()
	h.events.shutdown()
}

// engineOptions returns the engine options of every host interface.
func (h *Host) engineOptions() []engine.Option {
	return []engine.Option{
		engine.WithConfigMapResolver(h),
		engine.WithNamespaceLabeler(h),
		engine.WithAPIClient(h),
		engine.WithExceptions(h),
		engine.WithClient(h.client),
		engine.WithUpdateRequestQueue(h.queue),
		engine.WithAuthorizer(h.authz),
		engine.WithResourceFilter(h.filtered),
	}
}

// engine returns the host's engine, built once with engineOptions and
// then Options.EngineOptions.
func (h *Host) hostEngine() (*engine.Engine, error) {
	h.engOnce.Do(func() {
		opts := h.engineOptions()
		if h.metrics != nil {
			opts = append(opts, engine.WithPolicyTiming())
		}
		h.eng, h.engErr = engine.New(append(opts, h.opts.EngineOptions...)...)
	})
	return h.eng, h.engErr
}

// GetConfigMap implements engine.ConfigMapResolver from the informer's
// cache; a missing ConfigMap is an error wrapping engine.ErrNotFound.
func (h *Host) GetConfigMap(_ context.Context, namespace, name string) (map[string]any, error) {
	cm, err := h.configMaps.ConfigMaps(namespace).Get(name)
	if err != nil {
		return nil, wrap(err)
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cm)
	if err != nil {
		return nil, err
	}
	obj["apiVersion"], obj["kind"] = "v1", "ConfigMap"
	return obj, nil
}

// NamespaceLabels implements engine.NamespaceLabeler from the informer's
// cache.
func (h *Host) NamespaceLabels(_ context.Context, namespace string) (map[string]string, error) {
	ns, err := h.namespaces.Get(namespace)
	if err != nil {
		return nil, wrap(err)
	}
	return ns.Labels, nil
}

// SetResourceKind sets, for a subresource request, req.ResourceKind to
// the kind of its resource as the RESTMapper knows it (pods/exec: v1 Pod,
// whose request Kind is PodExecOptions), so that match blocks such as
// "Pod/exec" select it as upstream's webhooks do (they read the top-level
// kind from discovery). Other requests, and resources the mapper does not
// know, are left as they are.
func (h *Host) SetResourceKind(req *engine.Request) {
	if req == nil || req.SubResource == "" || req.Resource.Resource == "" {
		return
	}
	gvk, err := h.mapper.KindFor(schema.GroupVersionResource{Group: req.Resource.Group, Version: req.Resource.Version, Resource: req.Resource.Resource})
	if err != nil {
		return
	}
	req.ResourceKind = schema.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}
}

// SecretData returns the data of a Secret, read from the API server on
// each call (no informer: gavel does not keep the cluster's Secrets in
// memory, and needs only get on them, not list). It is the SecretReader
// of image verification (verify.WithSecrets): the keys of attestors given
// as Secrets and the resources' imagePullSecrets. A missing Secret is an
// error wrapping engine.ErrNotFound.
func (h *Host) SecretData(ctx context.Context, namespace, name string) (map[string][]byte, error) {
	s, err := h.kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, wrap(err)
	}
	return s.Data, nil
}

// RawAbsPath implements engine.APIClient through the REST client: GET or
// POST (with body) on an absolute path such as
// "/api/v1/namespaces/default/pods".
func (h *Host) RawAbsPath(ctx context.Context, path, method string, body []byte) ([]byte, error) {
	rc := h.kube.Discovery().RESTClient()
	if rc == nil {
		return nil, fmt.Errorf("cluster: REST client %w", engine.ErrNotConfigured)
	}
	return dynclient.NewAPIClient(rc).RawAbsPath(ctx, path, method, body)
}

// Exceptions implements engine.ExceptionSource: the PolicyExceptions of the
// allowed namespaces, compiled when they last changed. Invalid exceptions
// are left out (and logged); the others stay in force.
func (h *Host) Exceptions(context.Context) (*exceptions.Set, error) {
	return h.excSet.Load(), nil
}

// exceptionsError returns the error of the latest compilation of the
// PolicyExceptions (invalid exceptions), or nil.
func (h *Host) exceptionsError() error {
	if p := h.excErr.Load(); p != nil {
		return *p
	}
	return nil
}

// decodeAs decodes a document (api.DecodeObject) that must be a T.
func decodeAs[T any](d api.Document) (T, error) {
	obj, err := api.DecodeObject(d)
	t, ok := obj.(T)
	if err == nil && !ok {
		err = fmt.Errorf("%s: a %s, not a %T", d, d.Kind(), t)
	}
	return t, err
}

func (h *Host) compileExceptions() {
	h.excMu.Lock()
	defer h.excMu.Unlock()
	var list []*api.PolicyException
	var cel []*api.CELPolicyException
	var errs []error
	for _, u := range h.exceptionObjects(h.excInf) {
		pe, err := decodeAs[*api.PolicyException](document(u))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		list = append(list, pe)
	}
	for _, u := range h.exceptionObjects(h.celExcInf) {
		pe, err := decodeAs[*api.CELPolicyException](document(u))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cel = append(cel, pe)
	}
	set, err := exceptions.Compile(list, exceptions.CEL(cel...))
	if err != nil {
		// leave out the invalid exceptions, keep the others in force
		errs = append(errs, err)
		var valid []*api.PolicyException
		for _, pe := range list {
			if _, err := exceptions.Compile([]*api.PolicyException{pe}); err == nil {
				valid = append(valid, pe)
			}
		}
		var validCEL []*api.CELPolicyException
		for _, pe := range cel {
			if _, err := exceptions.Compile(nil, exceptions.CEL(pe)); err == nil {
				validCEL = append(validCEL, pe)
			}
		}
		if set, err = exceptions.Compile(valid, exceptions.CEL(validCEL...)); err != nil {
			errs = append(errs, err)
		}
	}
	if set != nil {
		h.excSet.Store(set)
	}
	if err := errors.Join(errs...); err != nil {
		h.excErr.Store(&err)
		h.log.Warn("invalid policy exceptions are left out", "err", err)
	} else {
		h.excErr.Store(nil)
	}
}

// exceptionObjects returns the exceptions of an informer (none for nil)
// in the allowed namespaces.
func (h *Host) exceptionObjects(inf cache.SharedIndexInformer) []*unstructured.Unstructured {
	if inf == nil {
		return nil
	}
	var out []*unstructured.Unstructured
	for _, o := range inf.GetStore().List() {
		u, ok := o.(*unstructured.Unstructured)
		if ok && namespaceAllowed(h.opts.ExceptionNamespaces, u.GetNamespace()) {
			out = append(out, u)
		}
	}
	return out
}

func namespaceAllowed(allowed []string, ns string) bool {
	if len(allowed) == 0 {
		return true
	}
	for _, a := range allowed {
		if a == "*" || a == ns {
			return true
		}
	}
	return false
}

// document turns a cluster object into an api.Document for decoding,
// without the fields the API server adds that gavel's strict decoding does
// not know (managedFields, status).
func document(u *unstructured.Unstructured) api.Document {
	obj := u.DeepCopy().Object
	unstructured.RemoveNestedField(obj, "metadata", "managedFields")
	delete(obj, "status")
	return api.Document{Object: obj, Source: "cluster"}
}
