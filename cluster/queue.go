package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/generate"
)

// LabelURPolicy is set on every UpdateRequest to the policy it runs.
const LabelURPolicy = "generate.kyverno.io/policy-name"

// AnnotationURRequeued counts the events an UpdateRequest stands for
// beyond the first: Enqueue bumps it when an equal request is already in
// the queue.
const AnnotationURRequeued = "gavel.io/requeued"

// queue is a durable UpdateRequest queue: Enqueue writes each request as a
// kyverno.io/v2 UpdateRequest custom resource in the host's namespace,
// with status Pending, and Drain processes the pending ones with a
// generate.Controller. A request stays in the cluster until it was
// processed: one that Completed or was Skipped is deleted, one that still
// Failed after its retries is kept with status Failed, its message and its
// retry count. A controller that stops, or dies, in the middle leaves the
// rest Pending, and the next one to Drain (a restarted process, a new
// leader) finishes them: nothing queued is lost.
//
// Equal requests coalesce: a request is named after a hash of its spec, so
// a storm of events for one rule and trigger (edits of a synchronized
// downstream resource, say) makes one UpdateRequest. Enqueueing a request
// that exists sets it Pending again with its retries reset and bumps its
// AnnotationURRequeued; a worker processing the earlier version then finds
// the resourceVersion changed, leaves the request in place and it is
// processed once more, so that no event is lost to coalescing.
type queue struct {
	h *Host

	once sync.Once
	inf  cache.SharedIndexInformer

	mu sync.Mutex
	wq workqueue.TypedRateLimitingInterface[string] // while draining
}

var _ engine.UpdateRequestQueue = (*queue)(nil)

func newQueue(h *Host) *queue {
	return &queue{h: h}
}

// informer registers the UpdateRequest informer of the host's namespace
// (started with the host).
func (q *queue) informer() cache.SharedIndexInformer {
	q.once.Do(func() {
		q.inf = q.h.dynFactory.ForResource(UpdateRequests).Informer()
		add := func(o any) {
			q.mu.Lock()
			defer q.mu.Unlock()
			if q.wq != nil {
				q.add(q.wq, o)
			}
		}
		_, _ = q.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    add,
			UpdateFunc: func(_, o any) { add(o) },
		})
	})
	return q.inf
}

func (q *queue) add(wq workqueue.TypedRateLimitingInterface[string], o any) {
	if u, ok := o.(*unstructured.Unstructured); ok && u.GetNamespace() == q.h.opts.Namespace && pending(u) {
		if key, err := cache.MetaNamespaceKeyFunc(u); err == nil {
			wq.Add(key)
		}
	}
}

// pending reports whether an UpdateRequest still has work: Pending, or no
// state yet.
func pending(u *unstructured.Unstructured) bool {
	state, _, _ := unstructured.NestedString(u.Object, "status", "state")
	return state == "" || state == string(api.URPending)
}

// Enqueue implements engine.UpdateRequestQueue: it creates the
// UpdateRequest in the cluster, Pending, or sets Pending again the equal
// request that is there. When the cluster holds the configuration's
// UpdateRequestThreshold of them (in the informer's cache) the request is
// skipped and logged, not an error, as upstream skips it.
func (q *queue) Enqueue(ctx context.Context, ur *api.UpdateRequest) error {
	if ur == nil {
		return errors.New("cluster: nil update request")
	}
	if n, limit := len(q.informer().GetStore().ListKeys()), q.h.Config().urThreshold(); int64(n) >= limit {
		// upstream's generator skips the request, logs and admits
		q.h.log.Error("UpdateRequest creation skipped: the number of UpdateRequests reached the threshold, raise updateRequestThreshold in the configuration ConfigMap",
			"count", n, "threshold", limit, "type", ur.Spec.Type, "policy", ur.Spec.Policy)
		return nil
	}
	obj, err := toObject(ur)
	if err != nil {
		return err
	}
	requiredFields(obj)
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion("kyverno.io/v2")
	u.SetKind("UpdateRequest")
	u.SetNamespace(q.h.opts.Namespace)
	if u.GetName() == "" {
		name, err := requestName(ur)
		if err != nil {
			return err
		}
		u.SetName(name)
		u.SetGenerateName("")
	}
	u.SetResourceVersion("")
	u.SetUID("")
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	if name := policyName(ur.Spec.Policy); name != "" {
		labels[LabelURPolicy] = name
	}
	u.SetLabels(labels)
	_ = unstructured.SetNestedField(u.Object, string(api.URPending), "status", "state")
	unstructured.RemoveNestedField(u.Object, "status", "retryCount")
	unstructured.RemoveNestedField(u.Object, "status", "message")
	ri := q.h.dyn.Resource(UpdateRequests).Namespace(q.h.opts.Namespace)
	// created, or requeued; the equal request may be deleted (done) in
	// between: then create again
	err = errors.New("the equal UpdateRequest kept being deleted")
	for range 5 {
		_, cerr := ri.Create(ctx, u, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(cerr) {
			err = cerr
			break
		}
		gone, rerr := q.requeue(ctx, u)
		if !gone {
			err = rerr
			break
		}
	}
	if err != nil {
		return fmt.Errorf("cluster: writing UpdateRequest: %w", err)
	}
	return nil
}

// requiredFields writes the fields upstream's UpdateRequest schema
// requires that the spec leaves out when empty: deleteDownstream, rule,
// context, resource.
func requiredFields(obj map[string]any) {
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		obj["spec"] = spec
	}
	for k, v := range map[string]any{"deleteDownstream": false, "rule": "", "context": map[string]any{}, "resource": map[string]any{}} {
		if _, ok := spec[k]; !ok {
			spec[k] = v
		}
	}
}

// requeue sets the existing request named as u Pending again with u's spec
// and status, bumping its AnnotationURRequeued so that its resourceVersion
// changes even when nothing else does. gone reports that the request was
// deleted in between (create it again).
func (q *queue) requeue(ctx context.Context, u *unstructured.Unstructured) (gone bool, err error) {
	ri := q.h.dyn.Resource(UpdateRequests).Namespace(u.GetNamespace())
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		ann := cur.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		n, _ := strconv.Atoi(ann[AnnotationURRequeued])
		ann[AnnotationURRequeued] = strconv.Itoa(n + 1)
		cur.SetAnnotations(ann)
		cur.Object["spec"] = u.Object["spec"]
		cur.Object["status"] = u.Object["status"]
		out, err := ri.Update(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		// upstream's CRD has a status subresource: the status is
		// written on its own (a CRD without one took it above)
		out.Object["status"] = u.Object["status"]
		_, err = ri.UpdateStatus(ctx, out, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			if _, gerr := ri.Get(ctx, u.GetName(), metav1.GetOptions{}); gerr == nil {
				return nil // no status subresource: Update wrote it
			}
		}
		return err
	})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// requestName names an UpdateRequest after a hash of its type, policy,
// rules, triggers and admission context: equal requests have equal names.
func requestName(ur *api.UpdateRequest) (string, error) {
	data, err := json.Marshal(ur.Spec)
	if err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	sum := sha256.Sum256(data)
	return "ur-" + hex.EncodeToString(sum[:10]), nil
}

// policyName is the name part of a policy key, which fits a label value.
func policyName(key string) string {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			return key[i+1:]
		}
	}
	return key
}

func toObject(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return obj, nil
}

func fromObject(obj map[string]any, out any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// Pending returns the number of UpdateRequests of the host's namespace
// that are still Pending in the informer's cache.
func (q *queue) Pending() int {
	n := 0
	for _, o := range q.informer().GetStore().List() {
		if u, ok := o.(*unstructured.Unstructured); ok && u.GetNamespace() == q.h.opts.Namespace && pending(u) {
			n++
		}
	}
	return n
}

// Drain processes the pending UpdateRequests with ctrl, on the given
// number of workers, until ctx is done; it returns when every worker has
// stopped. The host must have been started. Drain must not run twice at
// the same time (a leader runs it, and again when it leads again).
func (q *queue) Drain(ctx context.Context, ctrl *generate.Controller, workers int) {
	q.informer()
	if workers < 1 {
		workers = 1
	}
	wq := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "updaterequests", MetricsProvider: q.h.metrics.queueMetrics()})
	q.mu.Lock()
	q.wq = wq
	// the informer saw requests before Drain: queue them all
	for _, o := range q.inf.GetStore().List() {
		q.add(wq, o)
	}
	q.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() {
		<-ctx.Done()
		q.mu.Lock()
		q.wq = nil
		q.mu.Unlock()
		wq.ShutDown()
	})
	for range workers {
		wg.Go(func() {
			for {
				key, shutdown := wq.Get()
				if shutdown {
					return
				}
				q.h.metrics.reconcile("updaterequests")
				if err := q.process(ctx, ctrl, key); err != nil && ctx.Err() == nil {
					q.h.log.Warn("update request, will retry", "key", key, "err", err)
					q.h.metrics.requeue("updaterequests", wq.NumRequeues(key))
					wq.AddRateLimited(key)
				} else {
					wq.Forget(key)
				}
				wq.Done(key)
			}
		})
	}
	wg.Wait()
}

// process runs one UpdateRequest and records its outcome in the cluster.
// An error means the outcome could not be recorded: the request is tried
// again.
func (q *queue) process(ctx context.Context, ctrl *generate.Controller, key string) error {
	o, exists, err := q.inf.GetStore().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	u := o.(*unstructured.Unstructured)
	if !pending(u) {
		return nil
	}
	ur := &api.UpdateRequest{}
	if err := fromObject(u.Object, ur); err != nil {
		return q.record(ctx, u, &api.UpdateRequestStatus{State: api.URFailed, Message: "cannot decode: " + err.Error()})
	}
	perr := ctrl.Process(ctx, ur)
	if ctx.Err() != nil {
		return nil // stopped: the request stays Pending for the next controller
	}
	if perr != nil && ur.Status.State != api.URFailed {
		ur.Status.State, ur.Status.Message = api.URFailed, perr.Error()
	}
	return q.record(ctx, u, &ur.Status)
}

// record deletes a Completed or Skipped request and writes the status of a
// Failed one, unless the request changed since u was read (Enqueue set it
// Pending again for a new event): then it is left for its next round.
func (q *queue) record(ctx context.Context, u *unstructured.Unstructured, st *api.UpdateRequestStatus) error {
	ri := q.h.dyn.Resource(UpdateRequests).Namespace(u.GetNamespace())
	switch st.State {
	case api.URCompleted, api.URSkip:
		pre := &metav1.Preconditions{UID: ptr(u.GetUID()), ResourceVersion: ptr(u.GetResourceVersion())}
		err := ri.Delete(ctx, u.GetName(), metav1.DeleteOptions{Preconditions: pre})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	status, err := toObject(st)
	if err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		if cur.GetUID() != u.GetUID() || cur.GetResourceVersion() != u.GetResourceVersion() {
			return nil // requeued meanwhile
		}
		cur.Object["status"] = status
		_, err = ri.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			// a CRD without the status subresource
			_, err = ri.Update(ctx, cur, metav1.UpdateOptions{})
		}
		return err
	})
}

func ptr[T any](v T) *T { return &v }
