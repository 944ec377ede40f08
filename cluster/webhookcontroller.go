package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	admv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// annotationWebhookHash holds a hash of the webhooks gavel wrote: a
// configuration is updated only when what it should hold changes (the API
// server defaults fields, so the live object never equals the desired one).
const annotationWebhookHash = "webhook.gavel.io/hash"

// crds is the resource of CustomResourceDefinitions, watched so that a
// policy on a custom resource gets its webhook once the CRD is installed.
var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// WebhookController keeps the cluster's MutatingWebhookConfiguration and
// ValidatingWebhookConfiguration (WebhookOptions.Name) what the policies
// serving now need (WebhookConfigurations): it reconciles when a policy
// changes, when a CRD is installed or removed, and every resync period. It
// is a controller in client-go's sample-controller shape: event handlers
// only add the one key to a rate-limited queue; the worker reads
// discovery and writes the configurations, retrying with backoff. Run it
// on the leader.
type WebhookController struct {
	h     *Host
	src   *PolicySource
	opts  WebhookOptions
	disc  discovery.CachedDiscoveryInterface
	queue workqueue.TypedRateLimitingInterface[string]
	log   *slog.Logger

	resync        time.Duration
	crdChanged    atomic.Bool // a CRD changed since discovery was last read again
	mu            sync.Mutex
	lastMissing   string
	invalidatedAt time.Time
}

// webhookKey is the queue's one key: everything is rebuilt each time.
const webhookKey = "webhooks"

// NewWebhookController returns the controller of the webhook
// configurations of src's policies; resync is the period of the full
// reconciliation (default 1m). Call it before Host.Start.
func NewWebhookController(h *Host, src *PolicySource, opts WebhookOptions, resync time.Duration) *WebhookController {
	opts.defaults()
	if resync <= 0 {
		resync = time.Minute
	}
	c := &WebhookController{
		h: h, src: src, opts: opts, disc: h.disc, resync: resync, log: h.log.With("controller", "webhooks"),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "webhooks", MetricsProvider: h.metrics.queueMetrics()}),
	}
	src.Subscribe(func(PolicyChange) { c.queue.Add(webhookKey) })
	// the configuration's webhook keys are in the configurations
	h.onConfigChange(func() { c.queue.Add(webhookKey) })
	src.gateReadyOnServed()
	return c
}

// Run reconciles until ctx is done; it returns once its goroutines have
// stopped.
func (c *WebhookController) Run(ctx context.Context) {
	defer c.queue.ShutDown()
	crdInf := dynamicinformer.NewDynamicSharedInformerFactory(c.h.dyn, 0)
	enqueue := func(any) {
		c.crdChanged.Store(true)
		c.queue.Add(webhookKey)
	}
	if _, err := crdInf.ForResource(crds).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, DeleteFunc: enqueue,
		UpdateFunc: func(_, o any) { enqueue(o) },
	}); err != nil {
		c.log.Error("watching CRDs", "err", err)
	}
	crdInf.Start(ctx.Done())
	defer crdInf.Shutdown()
	c.queue.Add(webhookKey)
	var wg sync.WaitGroup
	wg.Go(func() {
		<-ctx.Done()
		c.queue.ShutDown()
	})
	wg.Go(func() {
		wait.UntilWithContext(ctx, func(context.Context) { c.queue.Add(webhookKey) }, c.resync)
	})
	wg.Go(func() {
		for c.processNext(ctx) {
		}
	})
	wg.Wait()
}

func (c *WebhookController) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	c.h.metrics.reconcile("webhooks")
	missing, err := c.reconcile(ctx)
	if err != nil && ctx.Err() == nil {
		c.log.Error("writing the webhook configurations", "err", err, "requeues", c.queue.NumRequeues(key))
		c.h.metrics.requeue("webhooks", c.queue.NumRequeues(key))
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	if missing {
		// a CRD may come: look again soon rather than at the resync
		c.queue.AddAfter(key, missingRetry)
	}
	return true
}

// missingRetry is how soon the webhooks are built again while a kind of
// the policies is not served.
const missingRetry = 5 * time.Second

// Reconcile writes the webhook configurations the policies serving now
// need, if they differ from those in the cluster.
func (c *WebhookController) Reconcile(ctx context.Context) error {
	_, err := c.reconcile(ctx)
	return err
}

// reconcile is Reconcile, telling whether kinds of the policies are not
// served.
func (c *WebhookController) reconcile(ctx context.Context) (bool, error) {
	set := c.src.Set()
	opts := c.opts
	opts.Config = c.h.Config()
	_, lists, err := c.disc.ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return false, fmt.Errorf("discovery: %w", err)
	}
	mwc, vwc, missing := WebhookConfigurations(set, lists, opts)
	if len(missing) > 0 && c.invalidate() {
		// a kind may be new: read discovery again once
		if _, lists, err = c.disc.ServerGroupsAndResources(); err == nil || len(lists) > 0 {
			mwc, vwc, missing = WebhookConfigurations(set, lists, opts)
		}
	}
	c.noteMissing(missing)
	owner, err := c.owner(ctx)
	if err != nil {
		return len(missing) > 0, err
	}
	mwc.OwnerReferences, vwc.OwnerReferences = owner, owner
	if err := writeConfig(ctx, c.h.kube.AdmissionregistrationV1().MutatingWebhookConfigurations(), mwc, mwc.Webhooks); err != nil {
		return len(missing) > 0, fmt.Errorf("MutatingWebhookConfiguration %s: %w", mwc.Name, err)
	}
	if err := writeConfig(ctx, c.h.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations(), vwc, vwc.Webhooks); err != nil {
		return len(missing) > 0, fmt.Errorf("ValidatingWebhookConfiguration %s: %w", vwc.Name, err)
	}
	// the policies of set are served: their Ready condition may be written
	c.src.markServed(set)
	return len(missing) > 0, nil
}

// invalidate drops the discovery cache when a CRD changed since it was
// last dropped (a new CRD is served a moment after its events: the
// retries every missingRetry see it), or at most every minute otherwise
// (an aggregated API server's kinds).
func (c *WebhookController) invalidate() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.crdChanged.Swap(false) && time.Since(c.invalidatedAt) < time.Minute {
		return false
	}
	c.invalidatedAt = time.Now()
	c.disc.Invalidate()
	return true
}

func (c *WebhookController) noteMissing(missing []string) {
	key := fmt.Sprint(missing)
	c.mu.Lock()
	changed := key != c.lastMissing
	c.lastMissing = key
	c.mu.Unlock()
	if changed && len(missing) > 0 {
		c.log.Warn("kinds of the policies that the API server does not serve: no webhook for them yet", "kinds", missing)
	}
}

// owner returns the owner reference to OwnerClusterRole (none when not
// set or not found).
func (c *WebhookController) owner(ctx context.Context) ([]metav1.OwnerReference, error) {
	if c.opts.OwnerClusterRole == "" {
		return nil, nil
	}
	cr, err := c.h.kube.RbacV1().ClusterRoles().Get(ctx, c.opts.OwnerClusterRole, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("owner ClusterRole %s: %w", c.opts.OwnerClusterRole, err)
	}
	return []metav1.OwnerReference{{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: cr.Name, UID: cr.UID}}, nil
}

// webhookConfig is a Mutating or ValidatingWebhookConfiguration.
type webhookConfig interface {
	*admv1.MutatingWebhookConfiguration | *admv1.ValidatingWebhookConfiguration
	metav1.Object
}

// configClient is the typed client of one of them.
type configClient[T webhookConfig] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// writeConfig creates the configuration, or updates it when its hash of
// (webhooks, labels, annotations, owners) differs; want is updated in
// place with the live resourceVersion. The labels and annotations of
// others (a Helm release's) stay; those gavel wrote before and no longer
// wants (a key removed from webhookLabels) are removed, found by the
// keys annotation.
func writeConfig[T webhookConfig](ctx context.Context, client configClient[T], want T, webhooks any) error {
	wantLabels, wantAnn := want.GetLabels(), want.GetAnnotations()
	data, err := json.Marshal(struct {
		W any                     `json:"w"`
		L map[string]string       `json:"l"`
		A map[string]string       `json:"a,omitempty"`
		O []metav1.OwnerReference `json:"o"`
	}{webhooks, wantLabels, wantAnn, want.GetOwnerReferences()})
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:12])
	ours := map[string]string{annotationWebhookHash: hash}
	if k := ownKeys(wantLabels, wantAnn); k != "" {
		ours[annotationWebhookKeys] = k
	}
	want.SetAnnotations(mergedMeta(nil, wantAnn, ours))
	cur, err := client.Get(ctx, want.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = client.Create(ctx, want, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if cur.GetAnnotations()[annotationWebhookHash] == hash {
		return nil
	}
	want.SetResourceVersion(cur.GetResourceVersion())
	oldLabels, oldAnn := parseOwnKeys(cur.GetAnnotations()[annotationWebhookKeys])
	labels := maps.Clone(cur.GetLabels())
	for _, k := range oldLabels {
		delete(labels, k)
	}
	want.SetLabels(mergedMeta(labels, wantLabels, nil))
	if len(want.GetOwnerReferences()) == 0 {
		want.SetOwnerReferences(cur.GetOwnerReferences())
	}
	ann := maps.Clone(cur.GetAnnotations())
	for _, k := range oldAnn {
		delete(ann, k)
	}
	delete(ann, annotationWebhookKeys)
	want.SetAnnotations(mergedMeta(ann, wantAnn, ours))
	_, err = client.Update(ctx, want, metav1.UpdateOptions{})
	return err
}

// annotationWebhookKeys lists the label and annotation keys gavel wrote
// on a webhook configuration (JSON {"l": [...], "a": [...]}), so that an
// update removes those it no longer wants.
const annotationWebhookKeys = "webhook.gavel.io/keys"

type ownKeysJSON struct {
	L []string `json:"l,omitempty"`
	A []string `json:"a,omitempty"`
}

// ownKeys encodes the keys of labels and annotations ("" when none).
func ownKeys(labels, annotations map[string]string) string {
	k := ownKeysJSON{L: slices.Sorted(maps.Keys(labels)), A: slices.Sorted(maps.Keys(annotations))}
	if len(k.L) == 0 && len(k.A) == 0 {
		return ""
	}
	data, err := json.Marshal(k)
	if err != nil {
		return ""
	}
	return string(data)
}

// parseOwnKeys decodes ownKeys (none when malformed: nothing is removed).
func parseOwnKeys(s string) (labels, annotations []string) {
	var k ownKeysJSON
	if s == "" || json.Unmarshal([]byte(s), &k) != nil {
		return nil, nil
	}
	return k.L, k.A
}

// mergedMeta returns base with the entries of each of more added.
func mergedMeta(base map[string]string, more ...map[string]string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	for _, m := range more {
		maps.Copy(out, m)
	}
	return out
}

// WebhookRules returns, for logs and tests, the names of the webhooks of
// the two configurations with their rules in one line each.
func WebhookRules(mwc *admv1.MutatingWebhookConfiguration, vwc *admv1.ValidatingWebhookConfiguration) []string {
	var out []string
	for _, w := range mwc.Webhooks {
		out = append(out, w.Name+": "+describeRules(w.Rules))
	}
	for _, w := range vwc.Webhooks {
		out = append(out, w.Name+": "+describeRules(w.Rules))
	}
	slices.Sort(out)
	return out
}
