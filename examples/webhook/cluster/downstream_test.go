package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cluster"
	"github.com/gavelpolicy/gavel/engine"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// provisioner generates the ConfigMap defaults, synchronized, in every
// Namespace.
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

// replica is the example's process on fake clients: a webhook, and a
// controller that runs while lead's stop is not called.
type replica struct {
	wh   *webhook
	ctrl *cluster.Controller
	src  *cluster.PolicySource
	dyn  *dynfake.FakeDynamicClient
	// events counts the Events written
	events *atomic.Int64
}

func newReplica(t *testing.T) *replica {
	t.Helper()
	return newReplicaWith(t, provisioner())
}

// newReplicaWith is newReplica with the given policies.
func newReplicaWith(t testing.TB, policies ...*unstructured.Unstructured) *replica {
	t.Helper()
	return newReplicaOpts(t, cluster.Options{}, policies...)
}

// newReplicaOpts is newReplicaWith with the host's options (its
// Namespace set).
func newReplicaOpts(t testing.TB, opts cluster.Options, policies ...*unstructured.Unstructured) *replica {
	t.Helper()
	listKinds := map[schema.GroupVersionResource]string{
		cluster.ClusterPolicies: "ClusterPolicyList", cluster.Policies: "PolicyList", cluster.PolicyExceptions: "PolicyExceptionList",
		cluster.UpdateRequests: "UpdateRequestList", configMaps: "ConfigMapList", {Version: "v1", Resource: "namespaces"}: "NamespaceList",
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-a", "uid": "uid-a"}}}
	plain := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "plain", "namespace": "team-a"}}}
	objs := []runtime.Object{ns, plain}
	for _, p := range policies {
		objs = append(objs, p)
	}
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	// events are accepted and counted, not stored: the fake's tracker
	// makes a RESTMapper for each object it stores (about a millisecond),
	// a real API server takes them over the network
	kube := kubefake.NewClientset()
	events := new(atomic.Int64)
	kube.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		events.Add(1)
		return true, a.(k8stesting.CreateAction).GetObject(), nil
	})
	opts.Namespace = "gavel"
	h, err := cluster.NewForClients(kube, dyn, mapper, opts)
	if err != nil {
		t.Fatal(err)
	}
	src, err := cluster.NewPolicySource(h, cluster.PolicySourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctrl := cluster.NewController(h, src, cluster.ControllerOptions{ScanInterval: -1})
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(func() {
		cancel()
		h.Shutdown()
	})
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if !src.WaitForSync(ctx) {
		t.Fatal("policies not synced")
	}
	wh := &webhook{src: src, host: h, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		downstream: cluster.NewDownstreamAdmission(h, cluster.DownstreamAdmissionOptions{ControllerUsername: "system:serviceaccount:gavel:gavel"})}
	return &replica{wh: wh, ctrl: ctrl, src: src, dyn: dyn, events: events}
}

func (r *replica) lead(t *testing.T) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { r.ctrl.Run(ctx) })
	t.Cleanup(wg.Wait)
	return func() { cancel(); wg.Wait() }
}

func (r *replica) configMap(name string) *unstructured.Unstructured {
	u, err := r.dyn.Resource(configMaps).Namespace("team-a").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return u
}

func (r *replica) owner() string {
	u := r.configMap("defaults")
	if u == nil {
		return "<absent>"
	}
	s, _, _ := unstructured.NestedString(u.Object, "data", "owner")
	return s
}

func (r *replica) updateRequests(t *testing.T) []unstructured.Unstructured {
	t.Helper()
	l, err := r.dyn.Resource(cluster.UpdateRequests).Namespace("gavel").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// review posts an AdmissionReview to the handler's path and returns the
// response.
func (r *replica) review(t *testing.T, path string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	body, _ := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req,
	})
	rec := httptest.NewRecorder()
	r.wh.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
		t.Fatalf("%s: %d %s", path, rec.Code, rec.Body.String())
	}
	return out.Response
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func raw(t *testing.T, u *unstructured.Unstructured) runtime.RawExtension {
	t.Helper()
	data, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: data}
}

// The /downstream path: a change of a synchronized downstream admitted
// while no controller runs becomes a Pending UpdateRequest, and the
// controller that starts later restores the downstream; what is not such
// a change writes nothing. Every request is admitted.
func TestDownstreamWebhook(t *testing.T) {
	dry := true
	for _, tt := range []struct {
		name string
		// request builds the admission request; apply makes the change as
		// the API server would once admitted
		request func(t *testing.T, r *replica) *admissionv1.AdmissionRequest
		apply   func(t *testing.T, r *replica)
		urs     int
	}{
		{"delete", func(t *testing.T, r *replica) *admissionv1.AdmissionRequest {
			return &admissionv1.AdmissionRequest{Operation: admissionv1.Delete, OldObject: raw(t, r.configMap("defaults"))}
		}, func(t *testing.T, r *replica) {
			if err := r.dyn.Resource(configMaps).Namespace("team-a").Delete(t.Context(), "defaults", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"update", func(t *testing.T, r *replica) *admissionv1.AdmissionRequest {
			old := r.configMap("defaults")
			cur := old.DeepCopy()
			cur.Object["data"] = map[string]any{"owner": "someone"}
			return &admissionv1.AdmissionRequest{Operation: admissionv1.Update, Object: raw(t, cur), OldObject: raw(t, old)}
		}, func(t *testing.T, r *replica) {
			cur := r.configMap("defaults")
			cur.Object["data"] = map[string]any{"owner": "someone"}
			if _, err := r.dyn.Resource(configMaps).Namespace("team-a").Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"object without the labels", func(t *testing.T, r *replica) *admissionv1.AdmissionRequest {
			return &admissionv1.AdmissionRequest{Operation: admissionv1.Delete, OldObject: raw(t, r.configMap("plain"))}
		}, nil, 0},
		{"dry run", func(t *testing.T, r *replica) *admissionv1.AdmissionRequest {
			return &admissionv1.AdmissionRequest{Operation: admissionv1.Delete, OldObject: raw(t, r.configMap("defaults")), DryRun: &dry}
		}, nil, 0},
		{"undecodable", func(t *testing.T, r *replica) *admissionv1.AdmissionRequest {
			return &admissionv1.AdmissionRequest{Operation: admissionv1.Delete}
		}, nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newReplica(t)
			stop := r.lead(t)
			if _, err := r.src.Set().Generate(t.Context(), &engine.Request{Operation: api.Create, Object: map[string]any{
				"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-a", "uid": "uid-a"}}}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the downstream", func() bool { return r.owner() == "gavel" })
			eventually(t, "the admission request done", func() bool { return len(r.updateRequests(t)) == 0 })
			stop()
			// the leader's watch of ConfigMaps may have started after it
			// created the downstream: it then lists the downstream as a
			// change made while nothing watched and queues its resync,
			// which can come after the wait above and which the stopped
			// leader leaves Pending; what is counted below is what the
			// webhook writes
			for _, u := range r.updateRequests(t) {
				if p := u.GetLabels()[cluster.LabelURPolicy]; p != "provisioner" {
					t.Fatalf("UpdateRequest %s of policy %q left by the leader", u.GetName(), p)
				}
				if err := r.dyn.Resource(cluster.UpdateRequests).Namespace("gavel").Delete(t.Context(), u.GetName(), metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}

			req := tt.request(t, r)
			req.UID = "uid-1"
			req.Kind = metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
			req.Resource = metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"}
			req.Namespace, req.Name = "team-a", "defaults"
			req.UserInfo.Username = "alice"
			resp := r.review(t, "/downstream", req)
			if !resp.Allowed || resp.UID != "uid-1" {
				t.Fatalf("response %+v, want admitted", resp)
			}
			urs := r.updateRequests(t)
			if len(urs) != tt.urs {
				t.Fatalf("%d UpdateRequests, want %d", len(urs), tt.urs)
			}
			if tt.urs == 0 {
				return
			}
			if state, _, _ := unstructured.NestedString(urs[0].Object, "status", "state"); state != "Pending" {
				t.Errorf("state %q, want Pending", state)
			}
			tt.apply(t, r)
			time.Sleep(50 * time.Millisecond)
			if r.owner() == "gavel" {
				t.Fatal("the change did not stick with no controller")
			}
			r.lead(t)
			eventually(t, "the downstream restored by the controller started later", func() bool { return r.owner() == "gavel" })
			eventually(t, "the request done", func() bool { return len(r.updateRequests(t)) == 0 })
		})
	}
}

// A trigger admitted while the cluster refuses the UpdateRequest is still
// admitted, and the failure is an event on the policy, as upstream's
// generate handler records it.
func TestGenerateQueueFailureEvent(t *testing.T) {
	r := newReplica(t)
	r.dyn.PrependReactor("create", "updaterequests", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("forbidden")
	})
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-b", "uid": "uid-b"}}}
	resp := r.review(t, "/validate/fail", &admissionv1.AdmissionRequest{
		UID: "uid-1", Operation: admissionv1.Create, Name: "team-b", Object: raw(t, ns),
		Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Namespace"},
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "namespaces"},
	})
	if !resp.Allowed {
		t.Fatalf("response %+v, want admitted", resp)
	}
	eventually(t, "the PolicyError event", func() bool { return r.events.Load() == 1 })
	if urs := r.updateRequests(t); len(urs) != 0 {
		t.Fatalf("%d UpdateRequests written through a refusing client", len(urs))
	}
}
