package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/gavelpolicy/gavel/admission"
	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// celPolicies use each CEL input the host serves: the authorizer
// (SubjectAccessReviews), parameter objects (a ConfigMap by name, a
// namespaced custom resource by selector, a cluster-scoped one by name)
// and namespaceObject, all read through the host's Client.
const celPolicies = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: tier-label
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: creators-only
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      cel:
        expressions:
        - expression: "!('tier' in object.metadata.?labels.orValue({})) || authorizer.group('').resource('pods').namespace(object.metadata.namespace).check('create').allowed()"
          message: only users who may create Pods here may set the tier label
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: image-prefix
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: prefix-from-configmap
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      cel:
        paramKind:
          apiVersion: v1
          kind: ConfigMap
        paramRef:
          name: image-rules
          parameterNotFoundAction: Deny
        expressions:
        - expression: "object.spec.containers.all(c, c.image.startsWith(params.data.prefix))"
          messageExpression: "'images must start with ' + params.data.prefix"
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: container-limits
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: per-namespace
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      cel:
        paramKind:
          apiVersion: gavel.io/v1
          kind: Limit
        paramRef:
          selector:
            matchLabels:
              gavel.io/limit: "true"
          parameterNotFoundAction: Allow
        expressions:
        - expression: "object.spec.containers.size() <= params.spec.maxContainers"
          messageExpression: "'at most ' + string(params.spec.maxContainers) + ' containers (' + params.metadata.name + ')'"
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: namespace-names
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: prefix
    match:
      any:
      - resources:
          kinds: [Namespace]
    validate:
      cel:
        paramKind:
          apiVersion: gavel.io/v1
          kind: ClusterLimit
        paramRef:
          name: global
        expressions:
        - expression: "object.metadata.name.startsWith(params.spec.namespacePrefix)"
          messageExpression: "'namespaces start with ' + params.spec.namespacePrefix"
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: frozen-namespaces
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: not-frozen
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      cel:
        expressions:
        - expression: "namespaceObject.metadata.?labels.?state.orValue('') != 'frozen'"
          messageExpression: "'namespace ' + namespaceObject.metadata.name + ' is frozen'"
`

func unstr(obj map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: obj}
}

func celFixtures() []runtime.Object {
	ns := func(name string, labels map[string]any) runtime.Object {
		return unstr(map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": name, "labels": labels}})
	}
	cm := func(ns, prefix string) runtime.Object {
		return unstr(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "image-rules", "namespace": ns},
			"data":     map[string]any{"prefix": prefix}})
	}
	limit := func(ns, name string, max int64, selected bool) runtime.Object {
		return unstr(map[string]any{"apiVersion": "gavel.io/v1", "kind": "Limit",
			"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"gavel.io/limit": map[bool]string{true: "true", false: "false"}[selected]}},
			"spec":     map[string]any{"maxContainers": max}})
	}
	return []runtime.Object{
		ns("team-a", nil), ns("team-b", nil), ns("ice", map[string]any{"state": "frozen"}),
		cm("team-a", "registry.a/"), cm("team-b", "registry.b/"), cm("ice", "registry.a/"),
		limit("team-a", "two", 2, true), limit("team-a", "one", 1, false), limit("team-b", "one", 1, true),
		unstr(map[string]any{"apiVersion": "gavel.io/v1", "kind": "ClusterLimit",
			"metadata": map[string]any{"name": "global"}, "spec": map[string]any{"namespacePrefix": "team-"}}),
	}
}

func celHost(t *testing.T) (*engine.PolicySet, *sarReactor) {
	t.Helper()
	h, _ := fakeHost(t, nil, celFixtures(), nil)
	r := &sarReactor{}
	h.kube.(*kubefake.Clientset).PrependReactor("create", "subjectaccessreviews", r.react)
	eng, err := h.hostEngine()
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(decodePolicies(t, celPolicies)...)
	if err != nil {
		t.Fatal(err)
	}
	return set, r
}

func podRequest(t *testing.T, user, ns, name string, labels map[string]any, images ...string) *admissionv1.AdmissionRequest {
	t.Helper()
	var containers []any
	for i, img := range images {
		containers = append(containers, map[string]any{"name": string(rune('a' + i)), "image": img})
	}
	md := map[string]any{"name": name, "namespace": ns}
	if labels != nil {
		md["labels"] = labels
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": map[string]any{"containers": containers}}
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return &admissionv1.AdmissionRequest{
		UID: "1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Name:     name, Namespace: ns, Operation: admissionv1.Create,
		UserInfo: authenticationv1.UserInfo{Username: user, Groups: []string{"system:authenticated"}},
		Object:   runtime.RawExtension{Raw: raw},
	}
}

func TestCELThroughTheHost(t *testing.T) {
	set, r := celHost(t)
	ctx := t.Context()
	tests := []struct {
		name string
		req  *admissionv1.AdmissionRequest
		deny string // the denial's policy lines; "" allows
	}{
		{name: "allowed everywhere", req: podRequest(t, "bob", "team-a", "p", nil, "registry.a/x")},
		{name: "the authorizer allows the label",
			req: podRequest(t, "alice", "team-a", "p", map[string]any{"tier": "gold"}, "registry.a/x")},
		{name: "the authorizer denies the label",
			req:  podRequest(t, "bob", "team-a", "p", map[string]any{"tier": "gold"}, "registry.a/x"),
			deny: "tier-label:\n  creators-only: only users who may create Pods here may set the tier label\n"},
		{name: "the namespace's ConfigMap",
			req:  podRequest(t, "bob", "team-b", "p", nil, "registry.a/x"),
			deny: "image-prefix:\n  prefix-from-configmap: images must start with registry.b/\n"},
		{name: "no ConfigMap, Deny",
			req:  podRequest(t, "bob", "nowhere", "p", nil, "registry.a/x"),
			deny: "image-prefix:\n  prefix-from-configmap: 'error in parameterized resource: configmaps \"image-rules\" not found'\n"},
		{name: "the selected Limit",
			req:  podRequest(t, "bob", "team-a", "p", nil, "registry.a/x", "registry.a/y", "registry.a/z"),
			deny: "container-limits:\n  per-namespace: at most 2 containers (two)\n"},
		{name: "another namespace's Limit",
			req:  podRequest(t, "bob", "team-b", "p", nil, "registry.b/x", "registry.b/y"),
			deny: "container-limits:\n  per-namespace: at most 1 containers (one)\n"},
		{name: "namespaceObject",
			req:  podRequest(t, "bob", "ice", "p", nil, "registry.a/x"),
			deny: "frozen-namespaces:\n  not-frozen: namespace ice is frozen\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := admission.Validate(ctx, set, tt.req)
			if tt.deny == "" {
				if !resp.Allowed {
					t.Fatalf("denied: %s", resp.Result.Message)
				}
				return
			}
			if resp.Allowed {
				t.Fatalf("allowed, want a denial with %q", tt.deny)
			}
			if !strings.Contains(resp.Result.Message, tt.deny) {
				t.Errorf("message\n%s\nwant it to contain\n%s", resp.Result.Message, tt.deny)
			}
		})
	}
	if r.count() == 0 {
		t.Fatal("no SubjectAccessReview was made")
	}
	got := r.reviews[0]
	if got.User != "alice" || got.ResourceAttributes == nil || got.ResourceAttributes.Namespace != "team-a" ||
		got.ResourceAttributes.Verb != "create" || got.ResourceAttributes.Resource != "pods" {
		t.Errorf("review %+v", got)
	}

	// a cluster-scoped paramKind for a cluster-scoped resource: the
	// Client tells its scope
	nsReq := func(name string) *admissionv1.AdmissionRequest {
		raw, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}})
		return &admissionv1.AdmissionRequest{UID: "2", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Namespace"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Name: name,
			Operation: admissionv1.Create, UserInfo: authenticationv1.UserInfo{Username: "bob"}, Object: runtime.RawExtension{Raw: raw}}
	}
	if resp, _ := admission.Validate(ctx, set, nsReq("team-c")); !resp.Allowed {
		t.Errorf("namespace team-c denied: %s", resp.Result.Message)
	}
	if resp, _ := admission.Validate(ctx, set, nsReq("scratch")); resp.Allowed ||
		!strings.Contains(resp.Result.Message, "namespace-names:\n  prefix: namespaces start with team-\n") {
		t.Errorf("namespace scratch: allowed %v, %v", resp.Allowed, resp.Result)
	}
}

func TestClientIsNamespaced(t *testing.T) {
	h, _ := fakeHost(t, nil, nil, nil)
	for _, tt := range []struct {
		apiVersion, kind string
		want             bool
	}{{"v1", "ConfigMap", true}, {"v1", "Namespace", false}, {"gavel.io/v1", "Limit", true}, {"gavel.io/v1", "ClusterLimit", false}} {
		got, err := h.client.IsNamespaced(tt.apiVersion, tt.kind)
		if err != nil || got != tt.want {
			t.Errorf("IsNamespaced(%s, %s) = %v, %v; want %v", tt.apiVersion, tt.kind, got, err, tt.want)
		}
	}
	if _, err := h.client.IsNamespaced("gavel.io/v1", "Unknown"); err == nil {
		t.Error("an unknown kind: no error")
	}
}

// The request's deadline reaches the SubjectAccessReview through the
// engine and the CEL library.
func TestAuthorizerHonoursTheRequestDeadline(t *testing.T) {
	p := decodePolicies(t, celPolicies)[0] // tier-label
	eng, err := engine.New(engine.WithAuthorizer(NewAuthorizer(slowReviews{}, AuthorizerOptions{Timeout: 10 * time.Second})))
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	resp, err := set.Validate(ctx, &engine.Request{Operation: api.Create,
		UserInfo: api.UserInfoData{Username: "bob"},
		Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p", "namespace": "team-a", "labels": map[string]any{"tier": "gold"}}}})
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Validate took %s: the deadline did not reach the review", d)
	}
	if err == nil {
		for _, r := range resp.Policies[0].Rules {
			if r.Status == engine.StatusPass {
				t.Errorf("rule %s passed without an answer", r.Name)
			}
		}
	}
}
