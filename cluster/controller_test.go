package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/generate"
)

var (
	schemaConfigMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	mutatingPolicies = schema.GroupVersionResource{Group: "policies.kyverno.io", Version: "v1", Resource: "mutatingpolicies"}
)

// replica is one process of gavel: a host with its policy source and
// controller, on clients it may share with other replicas.
type replica struct {
	h    *Host
	src  *PolicySource
	ctrl *Controller
	stop func()
}

// newReplica starts a host on the clients, with a controller that does no
// background scans.
func newReplica(t *testing.T, kube kubernetes.Interface, dyn *dynfake.FakeDynamicClient) *replica {
	t.Helper()
	return newReplicaOn(t, kube, dyn, ControllerOptions{ScanInterval: -1})
}

// newReplicaOn starts a host on the clients with a controller of the
// options; r.stop ends it (called at the test's end too).
func newReplicaOn(t *testing.T, kube kubernetes.Interface, dyn *dynfake.FakeDynamicClient, opts ControllerOptions) *replica {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	mapper.AddSpecific(schema.GroupVersionKind{Group: "policies.kyverno.io", Version: "v1", Kind: "MutatingPolicy"}, mutatingPolicies, mutatingPolicies, meta.RESTScopeRoot)
	h, err := NewForClients(kube, dyn, mapper, Options{Namespace: "gavel", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{h: h}
	if r.src, err = NewPolicySource(h, PolicySourceOptions{}); err != nil {
		t.Fatal(err)
	}
	r.ctrl = NewController(h, r.src, opts)
	ctx, cancel := context.WithCancel(t.Context())
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			h.Shutdown()
		})
	}
	t.Cleanup(r.stop)
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if !r.src.WaitForSync(ctx) {
		t.Fatal("policies not synced")
	}
	return r
}

// lead runs the replica's controller until the returned stop is called;
// stop waits for Run to return.
func (r *replica) lead(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	wait := r.leadUntil(t, ctx)
	return func() { cancel(); wait() }
}

// leadUntil runs the replica's controller until ctx is done; wait waits
// for Run to return.
func (r *replica) leadUntil(t *testing.T, ctx context.Context) (wait func()) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Go(func() { r.ctrl.Run(ctx) })
	t.Cleanup(wg.Wait)
	return wg.Wait
}

// fakeClients returns the clients of a test cluster holding objs, with
// generateName and the delete preconditions the fakes lack.
func fakeClients(objs ...runtime.Object) (*kubefake.Clientset, *dynfake.FakeDynamicClient) {
	listKinds := map[schema.GroupVersionResource]string{
		ClusterPolicies: "ClusterPolicyList", Policies: "PolicyList", PolicyExceptions: "PolicyExceptionList",
		UpdateRequests: "UpdateRequestList", PolicyReports: "PolicyReportList", ClusterPolicyReports: "ClusterPolicyReportList",
		schemaConfigMaps: "ConfigMapList", {Version: "v1", Resource: "namespaces"}: "NamespaceList",
		crds: "CustomResourceDefinitionList", EphemeralReports: "EphemeralReportList", ClusterEphemeralReports: "ClusterEphemeralReportList",
		mutatingPolicies: "MutatingPolicyList",
	}
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)
	var seq, rv atomic.Int64
	dyn.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if u, ok := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured); ok && u.GetName() == "" && u.GetGenerateName() != "" {
			u.SetName(fmt.Sprintf("%s%d", u.GetGenerateName(), seq.Add(1)))
		}
		return false, nil, nil
	})
	// the status subresource writes the status alone, as the API
	// server's does: the tracker would replace the whole object, and a
	// status write racing with an update of the spec would undo it (runs
	// after the resourceVersion reactor below)
	dyn.PrependReactor("update", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u, ok := a.(k8stesting.UpdateAction).GetObject().(*unstructured.Unstructured)
		if !ok || a.GetSubresource() != "status" {
			return false, nil, nil
		}
		cur, err := dyn.Tracker().Get(a.GetResource(), a.GetNamespace(), u.GetName())
		if err != nil {
			return false, nil, nil
		}
		out := cur.(*unstructured.Unstructured).DeepCopy()
		out.Object["status"] = runtime.DeepCopyJSONValue(u.Object["status"])
		out.SetResourceVersion(u.GetResourceVersion())
		if err := dyn.Tracker().Update(a.GetResource(), out, a.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, out.DeepCopy(), nil
	})
	// resourceVersions, which the tracker keeps apart from the objects
	for _, verb := range []string{"create", "update"} {
		dyn.PrependReactor(verb, "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			var o runtime.Object
			switch a := a.(type) {
			case k8stesting.CreateAction:
				o = a.GetObject()
			case k8stesting.UpdateAction:
				o = a.GetObject()
			}
			if u, ok := o.(*unstructured.Unstructured); ok {
				u.SetResourceVersion(strconv.FormatInt(rv.Add(1), 10))
			}
			return false, nil, nil
		})
	}
	dyn.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		pre := d.GetDeleteOptions().Preconditions
		if pre == nil || pre.ResourceVersion == nil {
			return false, nil, nil
		}
		cur, err := dyn.Tracker().Get(d.GetResource(), d.GetNamespace(), d.GetName())
		if err != nil {
			return false, nil, nil
		}
		if m, _ := meta.Accessor(cur); m != nil && m.GetResourceVersion() != *pre.ResourceVersion {
			return true, nil, apierrors.NewConflict(d.GetResource().GroupResource(), d.GetName(), errors.New("resourceVersion changed"))
		}
		return false, nil, nil
	})
	return kubefake.NewClientset(), dyn
}

// policyWith is provisioner with the owner value, generateExisting, and
// synchronize.
func policyWith(owner string, existing bool) *unstructured.Unstructured {
	p := provisioner()
	rule := p.Object["spec"].(map[string]any)["rules"].([]any)[0].(map[string]any)
	g := rule["generate"].(map[string]any)
	g["data"] = map[string]any{"data": map[string]any{"owner": owner}}
	if existing {
		g["generateExisting"] = true
	}
	return p
}

func downstream(t *testing.T, dyn *dynfake.FakeDynamicClient, ns string) map[string]any {
	t.Helper()
	u, err := dyn.Resource(schemaConfigMaps).Namespace(ns).Get(t.Context(), "defaults", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	d, _ := u.Object["data"].(map[string]any)
	return d
}

func owner(t *testing.T, dyn *dynfake.FakeDynamicClient, ns string) string {
	t.Helper()
	d := downstream(t, dyn, ns)
	if d == nil {
		return "<absent>"
	}
	s, _ := d["owner"].(string)
	return s
}

// watching waits until a watch of the resource was opened: the fake
// client drops the events between an informer's list and its watch.
func watching(t *testing.T, dyn *dynfake.FakeDynamicClient, resource string) {
	t.Helper()
	eventually(t, "a watch of "+resource, func() bool {
		for _, a := range dyn.Actions() {
			if a.GetVerb() == "watch" && a.GetResource().Resource == resource {
				return true
			}
		}
		return false
	})
	time.Sleep(10 * time.Millisecond)
}

func tamper(t *testing.T, dyn *dynfake.FakeDynamicClient, ns string) {
	t.Helper()
	ri := dyn.Resource(schemaConfigMaps).Namespace(ns)
	u, err := ri.Get(t.Context(), "defaults", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.Object["data"] = map[string]any{"owner": "tampered"}
	if _, err := ri.Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func updateRequests(t *testing.T, dyn *dynfake.FakeDynamicClient) []unstructured.Unstructured {
	t.Helper()
	l, err := dyn.Resource(UpdateRequests).Namespace("gavel").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// admit runs admission of a new Namespace on a replica: the engine queues
// its UpdateRequest.
func (r *replica) admit(t *testing.T, ns string) {
	t.Helper()
	if _, err := r.src.Set().Generate(t.Context(), &engine.Request{Operation: api.Create, Object: nsObject(ns).Object}); err != nil {
		t.Fatal(err)
	}
}

// An edit or a deletion of a synchronized downstream resource becomes an
// UpdateRequest object, which the leader processes: the change is
// reverted and the request deleted.
func TestDownstreamEventsGoThroughTheQueue(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, dyn *dynfake.FakeDynamicClient)
	}{
		{"edit", func(t *testing.T, dyn *dynfake.FakeDynamicClient) { tamper(t, dyn, "a") }},
		{"deletion", func(t *testing.T, dyn *dynfake.FakeDynamicClient) {
			if err := dyn.Resource(schemaConfigMaps).Namespace("a").Delete(t.Context(), "defaults", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kube, dyn := fakeClients(provisioner(), nsObject("a"))
			var mu sync.Mutex
			var created []map[string]any
			dyn.PrependReactor("create", "updaterequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
				mu.Lock()
				defer mu.Unlock()
				created = append(created, a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy().Object)
				return false, nil, nil
			})
			r := newReplica(t, kube, dyn)
			r.lead(t)
			r.admit(t, "a")
			eventually(t, "the downstream", func() bool { return owner(t, dyn, "a") == "gavel" })
			eventually(t, "the admission request done", func() bool { return len(updateRequests(t, dyn)) == 0 })
			watching(t, dyn, "configmaps")
			mu.Lock()
			created = nil
			mu.Unlock()

			tt.change(t, dyn)
			eventually(t, "the downstream restored", func() bool { return owner(t, dyn, "a") == "gavel" })
			eventually(t, "the requests done", func() bool { return len(updateRequests(t, dyn)) == 0 })
			mu.Lock()
			defer mu.Unlock()
			// one request, perhaps created again after it was done (the
			// controller's own write is an event too)
			if len(created) == 0 {
				t.Fatal("no UpdateRequest created for the event")
			}
			for _, c := range created {
				if name := c["metadata"].(map[string]any)["name"]; name != created[0]["metadata"].(map[string]any)["name"] {
					t.Errorf("requests %v and %v for one rule and trigger", name, created[0]["metadata"].(map[string]any)["name"])
				}
			}
			spec := created[0]["spec"].(map[string]any)
			rc := spec["ruleContext"].([]any)[0].(map[string]any)
			if spec["policy"] != "provisioner" || rc["rule"] != "cm" || rc["trigger"].(map[string]any)["name"] != "a" {
				t.Errorf("request spec %v", spec)
			}
		})
	}
}

// A controller that dies after the event, in the middle of processing its
// request, leaves the request Pending; the next leader processes it.
func TestDownstreamEventSurvivesTheLeader(t *testing.T) {
	kube, dyn := fakeClients(provisioner(), nsObject("a"))
	ctx, die := context.WithCancel(t.Context())
	var armed atomic.Bool
	var pendingThen []unstructured.Unstructured
	dyn.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if !armed.CompareAndSwap(true, false) {
			return false, nil, nil
		}
		// the leader dies as it recreates the downstream
		l, _ := dyn.Tracker().List(UpdateRequests, schema.GroupVersionKind{Group: "kyverno.io", Version: "v2", Kind: "UpdateRequest"}, "gavel")
		if ul, ok := l.(*unstructured.UnstructuredList); ok {
			pendingThen = ul.Items
		}
		die()
		return true, nil, errors.New("the process died")
	})
	first := newReplica(t, kube, dyn)
	wait := first.leadUntil(t, ctx)
	first.admit(t, "a")
	eventually(t, "the downstream", func() bool { return owner(t, dyn, "a") == "gavel" })
	eventually(t, "the admission request done", func() bool { return len(updateRequests(t, dyn)) == 0 })

	watching(t, dyn, "configmaps")
	armed.Store(true)
	if err := dyn.Resource(schemaConfigMaps).Namespace("a").Delete(t.Context(), "defaults", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait()
	if len(pendingThen) != 1 || !pending(&pendingThen[0]) {
		t.Fatalf("UpdateRequests while the leader processed the event: %v", pendingThen)
	}
	if urs := updateRequests(t, dyn); len(urs) != 1 || !pending(&urs[0]) || owner(t, dyn, "a") != "<absent>" {
		t.Fatalf("after the leader died: %d requests, downstream %s", len(urs), owner(t, dyn, "a"))
	}

	second := newReplica(t, kube, dyn)
	second.lead(t)
	eventually(t, "the downstream recreated by the next leader", func() bool { return owner(t, dyn, "a") == "gavel" })
	eventually(t, "the request done", func() bool { return len(updateRequests(t, dyn)) == 0 })
}

// An edit made while no controller ran is reverted when one starts: the
// downstream informer's initial list is handled as updates.
func TestEditWhileNoLeaderIsReverted(t *testing.T) {
	kube, dyn := fakeClients(provisioner(), nsObject("a"), nsObject("b"))
	r := newReplica(t, kube, dyn)
	stop := r.lead(t)
	r.admit(t, "a")
	r.admit(t, "b")
	eventually(t, "the downstream", func() bool { return owner(t, dyn, "a") == "gavel" && owner(t, dyn, "b") == "gavel" })
	stop()
	tamper(t, dyn, "b")
	r.lead(t)
	eventually(t, "the edit reverted", func() bool { return owner(t, dyn, "b") == "gavel" })
	if got := owner(t, dyn, "a"); got != "gavel" {
		t.Errorf("untouched downstream: owner %s", got)
	}
}

// The state the controller records of the policies it applied.
// state returns the controller's records, by policy key.
// state returns the controller's records, by policy key.
func state(t *testing.T, kube kubernetes.Interface) map[string]policyRecord {
	t.Helper()
	l, err := kube.CoreV1().ConfigMaps("gavel").List(t.Context(), metav1.ListOptions{LabelSelector: LabelControllerState})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]policyRecord{}
	for _, cm := range l.Items {
		var rec policyRecord
		if err := json.Unmarshal([]byte(cm.Data[stateDataKey]), &rec); err != nil {
			t.Fatal(err)
		}
		key := cm.Annotations[AnnotationStatePolicy]
		if cm.Name != stateConfigMapName(key) {
			t.Errorf("record of %s named %s", key, cm.Name)
		}
		out[key] = rec
	}
	return out
}

func applyPolicy(t *testing.T, dyn *dynfake.FakeDynamicClient, p *unstructured.Unstructured) {
	t.Helper()
	ri := dyn.Resource(ClusterPolicies)
	cur, err := ri.Get(t.Context(), p.GetName(), metav1.GetOptions{})
	if err != nil {
		if _, err := ri.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	p.SetResourceVersion(cur.GetResourceVersion())
	p.SetGeneration(cur.GetGeneration() + 1)
	if _, err := ri.Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Policy changes made while no controller ran are applied by the next
// leader, from the record the last one kept.
func TestNewLeaderReplaysPolicyChanges(t *testing.T) {
	for _, tt := range []struct {
		name string
		// initial is the policy before, nil for none
		initial *unstructured.Unstructured
		// change happens while no controller runs
		change func(t *testing.T, dyn *dynfake.FakeDynamicClient)
		// owners of the downstream in a and b after the next leader started
		wantA, wantB string
		recorded     bool
	}{
		{
			name:   "generateExisting policy created",
			change: func(t *testing.T, dyn *dynfake.FakeDynamicClient) { applyPolicy(t, dyn, policyWith("gavel", true)) },
			wantA:  "gavel", wantB: "gavel", recorded: true,
		},
		{
			name:    "synchronized rule changed",
			initial: policyWith("gavel", false),
			change:  func(t *testing.T, dyn *dynfake.FakeDynamicClient) { applyPolicy(t, dyn, policyWith("team", false)) },
			wantA:   "team", wantB: "<absent>", recorded: true,
		},
		{
			name:    "synchronized policy deleted",
			initial: policyWith("gavel", false),
			change: func(t *testing.T, dyn *dynfake.FakeDynamicClient) {
				if err := dyn.Resource(ClusterPolicies).Delete(t.Context(), "provisioner", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			wantA: "<absent>", wantB: "<absent>", recorded: false,
		},
		{
			name:    "nothing changed",
			initial: policyWith("gavel", true),
			change:  func(*testing.T, *dynfake.FakeDynamicClient) {},
			wantA:   "gavel", wantB: "gavel", recorded: true,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kube, dyn := fakeClients(nsObject("a"), nsObject("b"))
			r := newReplica(t, kube, dyn)
			if tt.initial != nil {
				stop := r.lead(t)
				applyPolicy(t, dyn, tt.initial)
				eventually(t, "the record", func() bool { return len(state(t, kube)) == 1 })
				r.admit(t, "a")
				eventually(t, "the downstream in a", func() bool { return owner(t, dyn, "a") == "gavel" })
				stop()
			}
			var writes atomic.Int64
			kube.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
				writes.Add(1)
				return false, nil, nil
			})
			tt.change(t, dyn)
			eventually(t, "the policy source", func() bool {
				_, err := dyn.Resource(ClusterPolicies).Get(t.Context(), "provisioner", metav1.GetOptions{})
				return (len(r.src.Set().Policies()) == 1) == (err == nil)
			})
			r.lead(t)
			eventually(t, "the downstream in a and b", func() bool {
				return owner(t, dyn, "a") == tt.wantA && owner(t, dyn, "b") == tt.wantB
			})
			eventually(t, "the requests done", func() bool { return len(updateRequests(t, dyn)) == 0 })
			eventually(t, "the record", func() bool {
				rec, ok := state(t, kube)["provisioner"]
				if !ok || !tt.recorded {
					return ok == tt.recorded
				}
				want, _ := recordOf(r.src.Set().Policies()[0])
				return rec.SpecHash == want.SpecHash && len(rec.Policy) > 0
			})
			if tt.name == "nothing changed" && writes.Load() != 0 {
				t.Errorf("%d writes of the state with nothing to replay", writes.Load())
			}
		})
	}
}

// The record is written as the leader applies a change.
func TestLeaderRecordsPolicyChanges(t *testing.T) {
	kube, dyn := fakeClients(nsObject("a"))
	r := newReplica(t, kube, dyn)
	r.lead(t)
	applyPolicy(t, dyn, policyWith("gavel", true))
	eventually(t, "the policy applied to the existing namespace", func() bool { return owner(t, dyn, "a") == "gavel" })
	eventually(t, "the record", func() bool { return len(state(t, kube)) == 1 })
	first := state(t, kube)["provisioner"]
	applyPolicy(t, dyn, policyWith("team", true))
	eventually(t, "the change synchronized", func() bool { return owner(t, dyn, "a") == "team" })
	eventually(t, "the new record", func() bool { return state(t, kube)["provisioner"].SpecHash != first.SpecHash })
	if err := dyn.Resource(ClusterPolicies).Delete(t.Context(), "provisioner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the downstream deleted with the policy", func() bool { return owner(t, dyn, "a") == "<absent>" })
	eventually(t, "the record removed", func() bool { return len(state(t, kube)) == 0 })
}

// clonePolicy clones the ConfigMap gavel-src/settings into every
// Namespace, synchronized.
func clonePolicy() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
		"metadata": map[string]any{"name": "cloner", "generation": int64(1)},
		"spec": map[string]any{"rules": []any{map[string]any{
			"name":  "settings",
			"match": map[string]any{"any": []any{map[string]any{"resources": map[string]any{"kinds": []any{"Namespace"}}}}},
			"generate": map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "name": "settings",
				"namespace":   "{{request.object.metadata.name}}",
				"synchronize": true,
				"clone":       map[string]any{"namespace": "gavel-src", "name": "settings"},
			},
		}}},
	}}
}

func settings(level string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "gavel-src"},
		"data":     map[string]any{"level": level},
	}}
}

// A clone source changed while no controller ran reaches its copies when
// one starts: the source informer's initial list is handled as updates.
func TestSourceChangedWhileNoLeaderIsSynced(t *testing.T) {
	kube, dyn := fakeClients(clonePolicy(), settings("1"), nsObject("a"))
	r := newReplica(t, kube, dyn)
	level := func() string {
		u, err := dyn.Resource(schemaConfigMaps).Namespace("a").Get(t.Context(), "settings", metav1.GetOptions{})
		if err != nil {
			return "<absent>"
		}
		s, _, _ := unstructured.NestedString(u.Object, "data", "level")
		return s
	}
	stop := r.lead(t)
	r.admit(t, "a")
	eventually(t, "the clone", func() bool { return level() == "1" })
	eventually(t, "the source labelled", func() bool {
		u, err := dyn.Resource(schemaConfigMaps).Namespace("gavel-src").Get(t.Context(), "settings", metav1.GetOptions{})
		if err != nil {
			return false
		}
		_, ok := u.GetLabels()[generate.LabelCloneSource]
		return ok
	})
	stop()
	ri := dyn.Resource(schemaConfigMaps).Namespace("gavel-src")
	src, err := ri.Get(t.Context(), "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src.Object["data"] = map[string]any{"level": "2"}
	if _, err := ri.Update(t.Context(), src, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if got := level(); got != "1" {
		t.Fatalf("the clone changed with no controller: %s", got)
	}
	r.lead(t)
	eventually(t, "the clone synchronized by the next leader", func() bool { return level() == "2" })
}

// The single ConfigMap of earlier versions becomes one ConfigMap per
// policy when a leader starts, and is deleted; a policy its record shows
// applied is not applied again.
func TestStateMigratedFromTheSingleConfigMap(t *testing.T) {
	kube, dyn := fakeClients(policyWith("gavel", true), nsObject("a"))
	r := newReplica(t, kube, dyn)
	p := r.src.Set().Policies()[0]
	rec, err := recordOf(p)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(rec)
	old := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultStateConfigMap, Namespace: "gavel"},
		Data:       map[string]string{"provisioner": string(data), "ns_gone": `{"specHash":"x"}`},
	}
	if _, err := kube.CoreV1().ConfigMaps("gavel").Create(t.Context(), old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.lead(t)
	eventually(t, "the old ConfigMap deleted", func() bool {
		_, err := kube.CoreV1().ConfigMaps("gavel").Get(t.Context(), DefaultStateConfigMap, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	eventually(t, "one record per policy", func() bool {
		st := state(t, kube)
		_, gone := st["ns/gone"]
		return len(st) == 1 && st["provisioner"].SpecHash == rec.SpecHash && !gone
	})
	// recorded as applied: generateExisting did not run again
	if owner(t, dyn, "a") != "<absent>" {
		t.Errorf("the policy was applied again: downstream owner %s", owner(t, dyn, "a"))
	}
}

// labelConfigMaps is a MutatingPolicy that labels the ConfigMaps of the
// cluster when a Namespace is created, and when it is created or changed
// itself (mutateExisting).
func labelConfigMaps(t *testing.T, value string) *unstructured.Unstructured {
	return objectOf(t, `apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: label-configmaps, uid: mpol-1}
spec:
  evaluation:
    mutateExisting: {enabled: true}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [namespaces]}
  targetMatchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'checked': '`+value+`'}}}"
`)
}

func checkedLabel(t *testing.T, dyn *dynfake.FakeDynamicClient, ns, name string) string {
	t.Helper()
	u, err := dyn.Resource(schemaConfigMaps).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u.GetLabels()["checked"]
}

// A MutatingPolicy with mutateExisting in the cluster: the leader applies
// it to the existing targets when it starts (and records it), again when
// the policy changes, and the UpdateRequests queued at admission are
// processed by the leader's generate controller.
func TestMutatingPolicyMutatesExisting(t *testing.T) {
	kube, dyn := fakeClients(labelConfigMaps(t, "v1"), configMap("a", "one", nil), configMap("b", "two", nil))
	r := newReplica(t, kube, dyn)
	stop := r.lead(t)
	defer stop()
	eventually(t, "the existing ConfigMaps labelled", func() bool {
		return checkedLabel(t, dyn, "a", "one") == "v1" && checkedLabel(t, dyn, "b", "two") == "v1"
	})
	eventually(t, "the policy's record", func() bool {
		_, err := kube.CoreV1().ConfigMaps("gavel").Get(t.Context(), stateConfigMapName("MutatingPolicy.label-configmaps"), metav1.GetOptions{})
		return err == nil
	})

	// a new version is applied to the existing targets again
	p := labelConfigMaps(t, "v2")
	p.SetGeneration(2)
	if _, err := dyn.Resource(mutatingPolicies).Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ConfigMaps labelled by the new version", func() bool {
		return checkedLabel(t, dyn, "a", "one") == "v2" && checkedLabel(t, dyn, "b", "two") == "v2"
	})

	// admission of a trigger queues an UpdateRequest, which the leader
	// processes
	if _, err := dyn.Resource(schemaConfigMaps).Namespace("c").Create(t.Context(), configMap("c", "three", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(t.Context(), nsObject("c"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err := r.src.WebhookSet(api.Fail, "").Generate(t.Context(), &engine.Request{Operation: api.Create, Object: nsObject("c").Object})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.UpdateRequests) != 1 || resp.UpdateRequests[0].Spec.Type != api.URMutate {
		t.Fatalf("admission queued %+v, want one mutate request", resp.UpdateRequests)
	}
	eventually(t, "the new ConfigMap labelled through the UpdateRequest", func() bool {
		return checkedLabel(t, dyn, "c", "three") == "v2" && len(updateRequests(t, dyn)) == 0
	})
}
