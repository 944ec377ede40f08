package cluster

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// objectKey names one object of one resource in a changeWatcher's queue.
type objectKey struct {
	gvr schema.GroupVersionResource
	key string // namespace/name
}

// changeWatcher watches the objects of some resources that carry a label
// and hands each change to a function as (old, new) objects, in the
// sample-controller shape: the informers' handlers only note the version
// the change starts from and queue the object's key; a worker reads the
// object from the informer's cache and calls the function, which does
// the I/O, retrying failures with backoff. Changes of one object not yet
// processed coalesce (from the version last processed to the latest one).
// An object of the informer's initial list is handled as an update of
// itself (a change made while nothing watched); an object created later
// is not a change.
type changeWatcher struct {
	h       *Host
	name    string
	handle  func(ctx context.Context, old, cur map[string]any) error
	factory dynamicinformer.DynamicSharedInformerFactory
	queue   workqueue.TypedRateLimitingInterface[objectKey]

	mu      sync.Mutex
	infs    map[schema.GroupVersionResource]cache.SharedIndexInformer
	last    map[objectKey]*unstructured.Unstructured // the version a pending change starts from; initial marks a listed object
	deleted map[objectKey]*unstructured.Unstructured // deleted objects not processed yet
}

// initial marks an object of an informer's initial list in last.
var initial = &unstructured.Unstructured{}

func newChangeWatcher(h *Host, name, label string, handle func(ctx context.Context, old, cur map[string]any) error) *changeWatcher {
	return &changeWatcher{
		h: h, name: name, handle: handle,
		factory: dynamicinformer.NewFilteredDynamicSharedInformerFactory(h.dyn, 0, metav1.NamespaceAll, labelSelector(label)),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[objectKey](),
			workqueue.TypedRateLimitingQueueConfig[objectKey]{Name: name, MetricsProvider: h.metrics.queueMetrics()}),
		infs: map[schema.GroupVersionResource]cache.SharedIndexInformer{},
		last: map[objectKey]*unstructured.Unstructured{}, deleted: map[objectKey]*unstructured.Unstructured{},
	}
}

// watch starts the informer of a resource, once.
func (w *changeWatcher) watch(ctx context.Context, gvr schema.GroupVersionResource) {
	w.mu.Lock()
	if w.infs[gvr] != nil {
		w.mu.Unlock()
		return
	}
	inf := w.factory.ForResource(gvr).Informer()
	w.infs[gvr] = inf
	w.mu.Unlock()
	_ = inf.SetTransform(dropManagedFields)
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(o any, isInitial bool) {
			u, ok := o.(*unstructured.Unstructured)
			if !ok {
				return
			}
			k := objectKey{gvr, keyOf(u)}
			w.mu.Lock()
			if isInitial {
				w.last[k] = initial
			} else if _, ok := w.last[k]; !ok {
				w.last[k] = u
			}
			w.mu.Unlock()
			if isInitial {
				w.queue.Add(k)
			}
		},
		UpdateFunc: func(old, cur any) {
			ou, _ := old.(*unstructured.Unstructured)
			nu, _ := cur.(*unstructured.Unstructured)
			if ou == nil || nu == nil || ou.GetResourceVersion() == nu.GetResourceVersion() {
				return
			}
			k := objectKey{gvr, keyOf(nu)}
			w.mu.Lock()
			if _, ok := w.last[k]; !ok {
				w.last[k] = ou
			}
			w.mu.Unlock()
			w.queue.Add(k)
		},
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			u, ok := o.(*unstructured.Unstructured)
			if !ok {
				return
			}
			k := objectKey{gvr, keyOf(u)}
			w.mu.Lock()
			w.deleted[k] = u
			if _, ok := w.last[k]; !ok {
				w.last[k] = u
			}
			w.mu.Unlock()
			w.queue.Add(k)
		},
	})
	if err != nil {
		w.h.log.Error("watching", "watcher", w.name, "resource", gvr.String(), "err", err)
	}
	w.factory.Start(ctx.Done())
}

func keyOf(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}

// run processes the changes until ctx is done, then stops the informers
// and returns once they and the worker have stopped.
func (w *changeWatcher) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() {
		<-ctx.Done()
		w.queue.ShutDown()
	})
	wg.Go(func() {
		for w.processNext(ctx) {
		}
	})
	wg.Wait()
	w.factory.Shutdown()
}

func (w *changeWatcher) processNext(ctx context.Context) bool {
	k, shutdown := w.queue.Get()
	if shutdown {
		return false
	}
	defer w.queue.Done(k)
	w.h.metrics.reconcile(w.name)
	w.mu.Lock()
	inf := w.infs[k.gvr]
	old := w.last[k]
	gone := w.deleted[k]
	w.mu.Unlock()
	var cur *unstructured.Unstructured
	if o, ok, _ := inf.GetStore().GetByKey(k.key); ok {
		cur, _ = o.(*unstructured.Unstructured)
	}
	if old == initial {
		old = cur
	}
	if old == nil {
		old = gone
	}
	var err error
	if old != nil || cur != nil {
		var om, cm map[string]any
		if old != nil {
			om = old.Object
		}
		if cur != nil {
			cm = cur.Object
		}
		err = w.handle(ctx, om, cm)
	}
	if err != nil && ctx.Err() == nil && w.queue.NumRequeues(k) < maxRetries {
		w.h.metrics.requeue(w.name, w.queue.NumRequeues(k))
		w.queue.AddRateLimited(k)
		return true
	}
	if err != nil && ctx.Err() == nil {
		w.h.metrics.drop(w.name)
	}
	w.queue.Forget(k)
	w.mu.Lock()
	// the next change starts from what was just handled (unless an
	// event came in meanwhile and noted its own starting version)
	if w.last[k] == old || w.last[k] == initial {
		if cur != nil {
			w.last[k] = cur
		} else {
			delete(w.last, k)
		}
	}
	if w.deleted[k] == gone {
		delete(w.deleted, k)
	}
	w.mu.Unlock()
	return true
}
