package cluster

import (
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stesting "k8s.io/client-go/testing"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/gavelpolicy/gavel/api"
)

// fakeHost returns a started Host on fake clients holding objs (typed
// objects go to the clientset, unstructured ones to the dynamic client).
func fakeHost(t *testing.T, kubeObjs []runtime.Object, dynObjs []runtime.Object, before func(h *Host)) (*Host, *dynfake.FakeDynamicClient) {
	t.Helper()
	return fakeHostWith(t, Options{}, kubeObjs, dynObjs, before)
}

// fakeHostWith is fakeHost with options (Namespace and Logger set).
func fakeHostWith(t *testing.T, opts Options, kubeObjs []runtime.Object, dynObjs []runtime.Object, before func(h *Host)) (*Host, *dynfake.FakeDynamicClient) {
	t.Helper()
	kube := kubefake.NewClientset(kubeObjs...)
	// gavel may read everything but Secrets (its status conditions)
	kube.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		rev := a.(k8stesting.CreateAction).GetObject().(*authzv1.SelfSubjectAccessReview).DeepCopy()
		rev.Status.Allowed = rev.Spec.ResourceAttributes.Resource != "secrets"
		return true, rev, nil
	})
	scheme := runtime.NewScheme()
	listKinds := map[schema.GroupVersionResource]string{
		ClusterPolicies:                         "ClusterPolicyList",
		Policies:                                "PolicyList",
		PolicyExceptions:                        "PolicyExceptionList",
		UpdateRequests:                          "UpdateRequestList",
		PolicyReports:                           "PolicyReportList",
		ClusterPolicyReports:                    "ClusterPolicyReportList",
		EphemeralReports:                        "EphemeralReportList",
		ClusterEphemeralReports:                 "ClusterEphemeralReportList",
		OpenReports:                             "ReportList",
		OpenClusterReports:                      "ClusterReportList",
		{Version: "v1", Resource: "configmaps"}: "ConfigMapList",
		{Version: "v1", Resource: "namespaces"}: "NamespaceList",
		{Version: "v1", Resource: "pods"}:       "PodList",
		paramLimits:                             "LimitList",
		paramClusterLimits:                      "ClusterLimitList",
	}
	for _, k := range fakeCELKinds {
		listKinds[k.gvr] = k.kind + "List"
	}
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(scheme, listKinds, dynObjs...)
	// the fake does not implement generateName
	var seq atomic.Int64
	dyn.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if u, ok := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured); ok && u.GetName() == "" && u.GetGenerateName() != "" {
			u.SetName(fmt.Sprintf("%s%d", u.GetGenerateName(), seq.Add(1)))
		}
		return false, nil, nil
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	// parameter objects of CEL rules, namespaced and not
	mapper.Add(schema.GroupVersionKind{Group: "gavel.io", Version: "v1", Kind: "Limit"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "gavel.io", Version: "v1", Kind: "ClusterLimit"}, meta.RESTScopeRoot)
	// the CEL kinds the cluster serves
	for _, k := range fakeCELKinds {
		scope := meta.RESTScopeRoot
		if k.namespaced {
			scope = meta.RESTScopeNamespace
		}
		mapper.AddSpecific(schema.GroupVersionKind{Group: k.gvr.Group, Version: k.gvr.Version, Kind: k.kind}, k.gvr, k.gvr, scope)
	}
	opts.Namespace, opts.Logger = "gavel", testLogger(t)
	h, err := NewForClients(kube, dyn, mapper, opts)
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(h)
	}
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(func() {
		cancel()
		h.Shutdown()
	})
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return h, dyn
}

// fakeCELKinds are the kinds of policy beyond ClusterPolicy and Policy
// that the fake cluster serves (not MutatingAdmissionPolicy), and Jobs
// for the deleting policies.
var fakeCELKinds = []struct {
	kind       string
	gvr        schema.GroupVersionResource
	namespaced bool
}{
	{"ValidatingPolicy", schema.GroupVersionResource{Group: "policies.kyverno.io", Version: "v1", Resource: "validatingpolicies"}, false},
	{"NamespacedValidatingPolicy", schema.GroupVersionResource{Group: "policies.kyverno.io", Version: "v1", Resource: "namespacedvalidatingpolicies"}, true},
	{"MutatingPolicy", schema.GroupVersionResource{Group: "policies.kyverno.io", Version: "v1", Resource: "mutatingpolicies"}, false},
	{"PolicyException", schema.GroupVersionResource{Group: "policies.kyverno.io", Version: "v1", Resource: "policyexceptions"}, true},
	{"DeletingPolicy", schema.GroupVersionResource{Group: "policies.kyverno.io", Version: "v1", Resource: "deletingpolicies"}, false},
	{"CleanupPolicy", schema.GroupVersionResource{Group: "kyverno.io", Version: "v2", Resource: "cleanuppolicies"}, true},
	{"Job", jobs, true},
	{"ValidatingAdmissionPolicy", schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}, false},
	{"ValidatingAdmissionPolicyBinding", schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}, false},
}

var (
	schemaPods         = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	paramLimits        = schema.GroupVersionResource{Group: "gavel.io", Version: "v1", Resource: "limits"}
	paramClusterLimits = schema.GroupVersionResource{Group: "gavel.io", Version: "v1", Resource: "clusterlimits"}
)

// testLogger logs through t.Log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// eventually polls cond for up to 5 seconds.
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

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// decodePolicies decodes the policies of a YAML stream.
func decodePolicies(t testing.TB, yaml string) []api.PolicyObject {
	t.Helper()
	docs, err := api.ReadDocuments(strings.NewReader(yaml), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	pols := make([]api.PolicyObject, len(docs))
	for i, d := range docs {
		if pols[i], err = api.DecodePolicy(d); err != nil {
			t.Fatal(err)
		}
	}
	return pols
}
