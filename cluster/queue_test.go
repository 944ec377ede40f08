package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/generate"
)

// provisioner generates a ConfigMap in every new Namespace.
func provisioner() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
		"metadata": map[string]any{"name": "provisioner", "generation": int64(1)},
		"spec": map[string]any{"rules": []any{map[string]any{
			"name":  "cm",
			"match": map[string]any{"any": []any{map[string]any{"resources": map[string]any{"kinds": []any{"Namespace"}}}}},
			"generate": map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "name": "defaults",
				"namespace":   "{{request.object.metadata.name}}",
				"synchronize": true,
				"data":        map[string]any{"data": map[string]any{"owner": "gavel"}},
			},
		}}},
	}}
}

func nsObject(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": name, "uid": "uid-" + name},
	}}
}

func TestQueueIsDurable(t *testing.T) {
	var src *PolicySource
	h, dyn := fakeHost(t, nil, []runtime.Object{provisioner(), nsObject("a"), nsObject("b"), nsObject("c")}, func(h *Host) {
		var err error
		if src, err = NewPolicySource(h, PolicySourceOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	eventually(t, "the policy", func() bool { return len(src.Set().Policies()) == 1 })
	ctx := t.Context()

	// admission: the engine writes one UpdateRequest per Namespace
	for _, ns := range []string{"a", "b", "c"} {
		resp, err := src.Set().Generate(ctx, &engine.Request{Operation: api.Create, Object: nsObject(ns).Object})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.UpdateRequests) != 1 {
			t.Fatalf("namespace %s: %d update requests", ns, len(resp.UpdateRequests))
		}
	}
	urs := func() int {
		l, err := dyn.Resource(UpdateRequests).Namespace("gavel").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	if n := urs(); n != 3 {
		t.Fatalf("UpdateRequests in the cluster = %d, want 3", n)
	}
	eventually(t, "3 pending", func() bool { return h.queue.Pending() == 3 })

	// a controller drains them: downstream created, requests deleted
	ctrl := generate.NewController(src.Set(), h.client)
	dctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { h.queue.Drain(dctx, ctrl, 2) })
	eventually(t, "the requests drained", func() bool { return urs() == 0 })
	stop()
	wg.Wait()
	for _, ns := range []string{"a", "b", "c"} {
		cm, err := h.client.Get(ctx, "v1", "ConfigMap", ns, "defaults")
		if err != nil {
			t.Fatalf("downstream in %s: %v", ns, err)
		}
		if cm["data"].(map[string]any)["owner"] != "gavel" {
			t.Errorf("downstream in %s: %v", ns, cm["data"])
		}
	}
}

func TestQueueRecordsFailures(t *testing.T) {
	var src *PolicySource
	h, dyn := fakeHost(t, nil, []runtime.Object{provisioner(), nsObject("a")}, func(h *Host) {
		var err error
		if src, err = NewPolicySource(h, PolicySourceOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	dyn.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("quota exceeded")
	})
	eventually(t, "the policy", func() bool { return len(src.Set().Policies()) == 1 })
	ctx := t.Context()
	if _, err := src.Set().Generate(ctx, &engine.Request{Operation: api.Create, Object: nsObject("a").Object}); err != nil {
		t.Fatal(err)
	}
	ctrl := generate.NewController(src.Set(), h.client, generate.WithMaxRetries(2))
	dctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { h.queue.Drain(dctx, ctrl, 1) })
	var status map[string]any
	eventually(t, "the request Failed", func() bool {
		l, err := dyn.Resource(UpdateRequests).Namespace("gavel").List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) != 1 {
			return false
		}
		status, _ = l.Items[0].Object["status"].(map[string]any)
		return status["state"] == string(api.URFailed)
	})
	stop()
	wg.Wait()
	if fmt.Sprint(status["retryCount"]) != "2" || !strings.Contains(fmt.Sprint(status["message"]), "quota exceeded") {
		t.Errorf("status %v, want 2 retries and the client's error", status)
	}
	if h.queue.Pending() != 0 {
		t.Errorf("a Failed request is still pending")
	}
}

// requestFor is the generate request of provisioner for a Namespace.
func requestFor(ns string) *api.UpdateRequest {
	ur := &api.UpdateRequest{}
	ur.Spec = api.UpdateRequestSpec{Type: api.URGenerate, Policy: "provisioner", RuleContext: []api.RuleContext{{
		Rule: "cm", Trigger: api.ResourceSpec{APIVersion: "v1", Kind: "Namespace", Name: ns}, Synchronize: true,
	}}}
	return ur
}

// A storm of equal requests makes one UpdateRequest; a Failed one is set
// Pending again by a new event, its retries reset.
func TestQueueCoalescesEqualRequests(t *testing.T) {
	kube, dyn := fakeClients(provisioner(), nsObject("a"), nsObject("b"))
	r := newReplica(t, kube, dyn)
	ctx := t.Context()
	for range 10 {
		if err := r.h.queue.Enqueue(ctx, requestFor("a")); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.h.queue.Enqueue(ctx, requestFor("b")); err != nil {
		t.Fatal(err)
	}
	urs := updateRequests(t, dyn)
	if len(urs) != 2 {
		t.Fatalf("%d UpdateRequests for 10 equal requests and another, want 2", len(urs))
	}
	var a *unstructured.Unstructured
	for i := range urs {
		if urs[i].Object["spec"].(map[string]any)["ruleContext"].([]any)[0].(map[string]any)["trigger"].(map[string]any)["name"] == "a" {
			a = &urs[i]
		}
	}
	if a == nil || a.GetAnnotations()[AnnotationURRequeued] != "9" || !pending(a) {
		t.Fatalf("request of a: %v", a)
	}

	// Failed after its retries, then a new event
	a.Object["status"] = map[string]any{"state": string(api.URFailed), "retryCount": int64(3), "message": "boom"}
	if _, err := dyn.Resource(UpdateRequests).Namespace("gavel").Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.h.queue.Enqueue(ctx, requestFor("a")); err != nil {
		t.Fatal(err)
	}
	cur, err := dyn.Resource(UpdateRequests).Namespace("gavel").Get(ctx, a.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := cur.Object["status"].(map[string]any); st["state"] != string(api.URPending) || st["retryCount"] != nil || st["message"] != nil {
		t.Errorf("status after a new event: %v, want Pending and no retries", st)
	}
}

// An equal request enqueued while the first is being processed is not
// lost: the worker finds the request changed, leaves it, and processes it
// again.
func TestQueueRequeueWhileProcessing(t *testing.T) {
	kube, dyn := fakeClients(provisioner(), nsObject("a"))
	r := newReplica(t, kube, dyn)
	ctx := t.Context()
	if err := r.h.queue.Enqueue(ctx, requestFor("a")); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	dyn.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		// an event while the downstream is written: the request is
		// requeued (as Enqueue does, on the tracker: the fake client is
		// locked while its reactors run)
		once.Do(func() {
			o, err := dyn.Tracker().List(UpdateRequests, schema.GroupVersionKind{Group: "kyverno.io", Version: "v2", Kind: "UpdateRequest"}, "gavel")
			if err != nil {
				t.Error(err)
				return
			}
			u := o.(*unstructured.UnstructuredList).Items[0]
			u.SetAnnotations(map[string]string{AnnotationURRequeued: "1"})
			u.SetResourceVersion("requeued")
			if err := dyn.Tracker().Update(UpdateRequests, &u, "gavel"); err != nil {
				t.Error(err)
			}
		})
		return false, nil, nil
	})
	var deletes atomic.Int64
	dyn.PrependReactor("delete", "updaterequests", func(k8stesting.Action) (bool, runtime.Object, error) {
		deletes.Add(1)
		return false, nil, nil
	})
	ctrl := generate.NewController(r.src.Set(), r.h.client)
	eventually(t, "the policy", func() bool { return len(r.src.Set().Policies()) == 1 })
	ctrl.SetPolicies(r.src.Set())
	dctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { r.h.queue.Drain(dctx, ctrl, 1) })
	eventually(t, "the request done", func() bool { return len(updateRequests(t, dyn)) == 0 })
	stop()
	wg.Wait()
	// one deletion refused (requeued meanwhile), one that succeeds; a
	// slow informer may show the request once more to the worker, whose
	// deletion then finds it gone
	if n := deletes.Load(); n < 2 {
		t.Errorf("%d deletions of the request, want 2 (one refused: requeued meanwhile)", n)
	}
	if owner(t, dyn, "a") != "gavel" {
		t.Errorf("downstream owner %s", owner(t, dyn, "a"))
	}
}

// An equal request deleted (done) between Create and its requeue is
// created again.
func TestQueueCreatesAgainARequestDoneMeanwhile(t *testing.T) {
	kube, dyn := fakeClients(provisioner(), nsObject("a"))
	r := newReplica(t, kube, dyn)
	var first atomic.Bool
	first.Store(true)
	dyn.PrependReactor("create", "updaterequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if first.CompareAndSwap(true, false) {
			u := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured)
			return true, nil, apierrors.NewAlreadyExists(UpdateRequests.GroupResource(), u.GetName())
		}
		return false, nil, nil
	})
	if err := r.h.queue.Enqueue(t.Context(), requestFor("a")); err != nil {
		t.Fatal(err)
	}
	if urs := updateRequests(t, dyn); len(urs) != 1 || !pending(&urs[0]) {
		t.Fatalf("UpdateRequests %v, want one Pending", urs)
	}
}

// At the configuration's updateRequestThreshold of UpdateRequests in the
// cluster, admission creates no more: the trigger's request is skipped,
// not an error, as upstream's.
func TestQueueThreshold(t *testing.T) {
	cases := []struct {
		name string
		data map[string]string // the ConfigMap's, nil: no ConfigMap
		want int               // requests created for three triggers
	}{
		{name: "default", data: nil, want: 3},
		{name: "two", data: map[string]string{ConfigURThreshold: "2"}, want: 2},
		{name: "zero skips all", data: map[string]string{ConfigURThreshold: "0"}, want: 0},
		{name: "malformed keeps the default", data: map[string]string{ConfigURThreshold: "many"}, want: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var src *PolicySource
			h, dyn := fakeHost(t, nil, []runtime.Object{provisioner(), nsObject("a"), nsObject("b"), nsObject("c")}, func(h *Host) {
				var err error
				if src, err = NewPolicySource(h, PolicySourceOptions{}); err != nil {
					t.Fatal(err)
				}
			})
			h.cfg.Store(ParseConfig(tc.data))
			eventually(t, "the policy", func() bool { return len(src.Set().Policies()) == 1 })
			ctx := t.Context()
			urs := func() int {
				l, err := dyn.Resource(UpdateRequests).Namespace("gavel").List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return len(l.Items)
			}
			for _, ns := range []string{"a", "b", "c"} {
				if _, err := src.Set().Generate(ctx, &engine.Request{Operation: api.Create, Object: nsObject(ns).Object}); err != nil {
					t.Fatalf("namespace %s: %v", ns, err)
				}
				// the threshold counts the informer's cache
				n := urs()
				eventually(t, "the informer", func() bool { return len(h.queue.informer().GetStore().ListKeys()) == n })
			}
			if n := urs(); n != tc.want {
				t.Errorf("UpdateRequests in the cluster = %d, want %d", n, tc.want)
			}
		})
	}
}
