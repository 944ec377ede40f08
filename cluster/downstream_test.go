package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// generated runs a controller until the downstream of the provisioner
// exists in namespace a, then stops it: from then on no controller runs.
func generated(t *testing.T) (*replica, *dynfake.FakeDynamicClient) {
	t.Helper()
	kube, dyn := fakeClients(provisioner(), nsObject("a"), configMap("default", "plain", nil))
	r := newReplica(t, kube, dyn)
	stop := r.lead(t)
	r.admit(t, "a")
	eventually(t, "the downstream", func() bool { return owner(t, dyn, "a") == "gavel" })
	eventually(t, "the admission request done", func() bool { return len(updateRequests(t, dyn)) == 0 })
	stop()
	// the leader's informers may have queued a resync of the downstream
	// (their initial list counts as updates) after the check above and
	// before they stopped: the tests start from an empty queue
	for _, u := range updateRequests(t, dyn) {
		if err := dyn.Resource(UpdateRequests).Namespace("gavel").Delete(t.Context(), u.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return r, dyn
}

func configMap(ns, name string, labels map[string]any) *unstructured.Unstructured {
	md := map[string]any{"name": name, "namespace": ns}
	if labels != nil {
		md["labels"] = labels
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": map[string]any{"owner": "x"}}}
}

func getConfigMap(t *testing.T, dyn *dynfake.FakeDynamicClient, ns, name string) map[string]any {
	t.Helper()
	u, err := dyn.Resource(schemaConfigMaps).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u.Object
}

// A DELETE or an UPDATE of a synchronized downstream admitted while no
// controller runs writes a Pending UpdateRequest; the API server then
// applies the change; a controller that starts later processes the
// request and the downstream comes back.
func TestDownstreamAdmissionWhileNoController(t *testing.T) {
	for _, tt := range []struct {
		name   string
		op     api.AdmissionOperation
		change func(t *testing.T, dyn *dynfake.FakeDynamicClient)
	}{
		{"delete", api.Delete, func(t *testing.T, dyn *dynfake.FakeDynamicClient) {
			if err := dyn.Resource(schemaConfigMaps).Namespace("a").Delete(t.Context(), "defaults", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{"update", api.Update, func(t *testing.T, dyn *dynfake.FakeDynamicClient) { tamper(t, dyn, "a") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, dyn := generated(t)
			old := getConfigMap(t, dyn, "a", "defaults")
			req := &engine.Request{Operation: tt.op, Namespace: "a", Name: "defaults", OldObject: old,
				UserInfo: api.UserInfoData{Username: "alice"}}
			if tt.op == api.Update {
				cur := (&unstructured.Unstructured{Object: old}).DeepCopy().Object
				cur["data"] = map[string]any{"owner": "tampered"}
				req.Object = cur
			} else {
				req.Object = old // as admission.Request leaves it; Handle reads oldObject
			}
			d := NewDownstreamAdmission(r.h, DownstreamAdmissionOptions{ControllerUsername: "system:serviceaccount:gavel:gavel"})
			urs, err := d.Handle(t.Context(), r.src.Set(), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(urs) != 1 || urs[0].Status.State != api.URPending || urs[0].Spec.Policy != "provisioner" ||
				urs[0].Spec.Rule != "cm" || urs[0].Spec.Resource.Name != "a" || urs[0].Spec.DeleteDownstream {
				t.Fatalf("requests %+v", urs)
			}
			stored := updateRequests(t, dyn)
			if len(stored) != 1 || !pending(&stored[0]) {
				t.Fatalf("UpdateRequests in the cluster: %v", stored)
			}
			if d.Enqueued() != 1 || d.Failed() != 0 {
				t.Errorf("enqueued %d, failed %d", d.Enqueued(), d.Failed())
			}
			// admitted: the API server applies the change
			tt.change(t, dyn)
			time.Sleep(50 * time.Millisecond)
			if got, want := owner(t, dyn, "a"), map[api.AdmissionOperation]string{api.Delete: "<absent>", api.Update: "tampered"}[tt.op]; got != want {
				t.Fatalf("with no controller: owner %s, want %s", got, want)
			}
			r.lead(t)
			eventually(t, "the downstream restored by the controller that started later", func() bool { return owner(t, dyn, "a") == "gavel" })
			eventually(t, "the request done", func() bool { return len(updateRequests(t, dyn)) == 0 })
		})
	}
}

// Requests that are not changes of a tracked resource by someone else
// write nothing.
func TestDownstreamAdmissionIgnores(t *testing.T) {
	r, dyn := generated(t)
	down := getConfigMap(t, dyn, "a", "defaults")
	plain := getConfigMap(t, dyn, "default", "plain")
	const ctrlUser = "system:serviceaccount:gavel:gavel"
	alice := api.UserInfoData{Username: "alice"}
	for _, tt := range []struct {
		name string
		req  *engine.Request
	}{
		{"object without the labels", &engine.Request{Operation: api.Delete, OldObject: plain, Object: plain, UserInfo: alice}},
		{"update of an object without the labels", &engine.Request{Operation: api.Update, OldObject: plain, Object: plain, UserInfo: alice}},
		{"dry run", &engine.Request{Operation: api.Delete, OldObject: down, Object: down, DryRun: true, UserInfo: alice}},
		{"create", &engine.Request{Operation: api.Create, Object: down, UserInfo: alice}},
		{"the controller's own deletion", &engine.Request{Operation: api.Delete, OldObject: down, Object: down, UserInfo: api.UserInfoData{Username: ctrlUser}}},
		{"subresource", &engine.Request{Operation: api.Update, OldObject: down, Object: down, SubResource: "status", UserInfo: alice}},
		{"labels of another manager", &engine.Request{Operation: api.Delete, UserInfo: alice, OldObject: configMap("a", "x", map[string]any{
			"app.kubernetes.io/managed-by": "helm", "generate.kyverno.io/policy-name": "provisioner", "generate.kyverno.io/rule-name": "cm"}).Object}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDownstreamAdmission(r.h, DownstreamAdmissionOptions{ControllerUsername: ctrlUser})
			urs, err := d.Handle(t.Context(), r.src.Set(), tt.req)
			if err != nil || len(urs) != 0 {
				t.Fatalf("Handle: %v, %v", urs, err)
			}
			if stored := updateRequests(t, dyn); len(stored) != 0 {
				t.Fatalf("UpdateRequests written: %v", stored)
			}
			if d.Enqueued() != 0 || d.Failed() != 0 {
				t.Errorf("enqueued %d, failed %d", d.Enqueued(), d.Failed())
			}
		})
	}
}

// Equal requests coalesce: a storm of edits of one downstream is one
// UpdateRequest.
func TestDownstreamAdmissionCoalesces(t *testing.T) {
	r, dyn := generated(t)
	down := getConfigMap(t, dyn, "a", "defaults")
	d := NewDownstreamAdmission(r.h, DownstreamAdmissionOptions{})
	for range 5 {
		if _, err := d.Handle(t.Context(), r.src.Set(), &engine.Request{Operation: api.Update, OldObject: down, Object: down}); err != nil {
			t.Fatal(err)
		}
	}
	stored := updateRequests(t, dyn)
	if len(stored) != 1 {
		t.Fatalf("%d UpdateRequests, want 1", len(stored))
	}
	if got := stored[0].GetAnnotations()[AnnotationURRequeued]; got != "4" {
		t.Errorf("requeued %q, want 4", got)
	}
}

// An update of a clone source writes the request that syncs its copies;
// a failure to write is returned and counted, never a panic.
func TestDownstreamAdmissionCloneSource(t *testing.T) {
	kube, dyn := fakeClients(clonePolicy(), settings("1"), nsObject("a"))
	r := newReplica(t, kube, dyn)
	stop := r.lead(t)
	r.admit(t, "a")
	var src map[string]any
	eventually(t, "the source labelled", func() bool {
		u, err := dyn.Resource(schemaConfigMaps).Namespace("gavel-src").Get(t.Context(), "settings", metav1.GetOptions{})
		if err != nil {
			return false
		}
		src = u.Object
		_, ok := u.GetLabels()["generate.kyverno.io/clone-source"]
		return ok
	})
	eventually(t, "the requests done", func() bool { return len(updateRequests(t, dyn)) == 0 })
	stop()
	d := NewDownstreamAdmission(r.h, DownstreamAdmissionOptions{})
	cur := (&unstructured.Unstructured{Object: src}).DeepCopy().Object
	cur["data"] = map[string]any{"level": "2"}
	urs, err := d.Handle(t.Context(), r.src.Set(), &engine.Request{Operation: api.Update, OldObject: src, Object: cur})
	if err != nil {
		t.Fatal(err)
	}
	if len(urs) != 1 || urs[0].Spec.Policy != "cloner" || urs[0].Spec.Resource.Name != "a" || len(updateRequests(t, dyn)) != 1 {
		t.Fatalf("requests %+v", urs)
	}

	// the queue's namespace refuses writes: the error is returned
	dyn.PrependReactor("create", "updaterequests", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("forbidden")
	})
	urs, err = d.Handle(t.Context(), r.src.Set(), &engine.Request{Operation: api.Delete, OldObject: src, Object: src})
	if err == nil || d.Failed() != 1 {
		t.Fatalf("Handle with a failing queue: %v, %v (failed %d)", urs, err, d.Failed())
	}
	// and recorded on the policy, as upstream's webhook records it
	eventually(t, "the PolicyError event", func() bool {
		for _, ev := range listEvents(t, r.h) {
			if ev.Reason == EventReasonPolicyError && ev.Regarding.Name == "cloner" && ev.Related != nil && ev.Related.Name == "settings" &&
				strings.Contains(ev.Note, "forbidden") {
				return true
			}
		}
		return false
	})
}
