package admission_test

import (
	"context"
	"encoding/json"
	"errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gavelpolicy/gavel/admission"
	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/loader"
)

// policies: an Enforce policy, an Audit one with emitWarning, an Audit
// one without, an Enforce one whose rule errors under failurePolicy
// Ignore, a mutate policy and a mutate policy whose rule errors.
const policies = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team
spec:
  validationFailureAction: Enforce
  rules:
  - name: check-team
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "label 'team' is required"
      pattern:
        metadata:
          labels:
            team: "?*"
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: audit-warned
spec:
  emitWarning: true
  rules:
  - name: check-owner
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "label 'owner' is recommended"
      pattern:
        metadata:
          labels:
            owner: "?*"
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: audit-silent
spec:
  rules:
  - name: check-tier
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "label 'tier' is recommended"
      pattern:
        metadata:
          labels:
            tier: "?*"
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: lenient-lookup
spec:
  validationFailureAction: Enforce
  webhookConfiguration:
    failurePolicy: Ignore
  rules:
  - name: lookup
    match:
      any:
      - resources:
          kinds: [Pod]
          names: [lookup-*]
    validate:
      message: "{{ request.object.metadata.annotations.missing }}"
      deny:
        conditions:
          any:
          - key: "{{ request.object.metadata.annotations.missing }}"
            operator: Equals
            value: x
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: add-env
spec:
  rules:
  - name: env-label
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            +(env): dev
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: copy-annotation
spec:
  rules:
  - name: copy
    match:
      any:
      - resources:
          kinds: [Pod]
          names: [broken-*]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            copied: "{{ request.object.metadata.annotations.source }}"
`

func compile(t *testing.T, src string) *engine.PolicySet {
	t.Helper()
	s := &loader.Set{}
	if err := s.Read(strings.NewReader(src), "policies.yaml"); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(s.Policies...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// pod is the AdmissionRequest of a Pod (without metadata.namespace in its
// object, as the API server sends objects created with kubectl -n).
func pod(op admissionv1.Operation, name string, labels, annotations map[string]string) *admissionv1.AdmissionRequest {
	obj := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name}}
	md := obj["metadata"].(map[string]any)
	if labels != nil {
		md["labels"] = labels
	}
	if annotations != nil {
		md["annotations"] = annotations
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	ar := &admissionv1.AdmissionRequest{
		UID:       "0df28fbd-5f5f-4aaf-8ad4-2d54e2c3d3a6",
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Name:      name,
		Namespace: "shop",
		Operation: op,
		UserInfo:  authenticationv1.UserInfo{Username: "alice", Groups: []string{"dev"}},
	}
	if op == admissionv1.Delete {
		ar.OldObject.Raw = raw
	} else {
		ar.Object.Raw = raw
	}
	return ar
}

func TestValidate(t *testing.T) {
	set := compile(t, policies)
	all := map[string]string{"team": "a", "owner": "b", "tier": "c"}
	for _, tt := range []struct {
		name     string
		req      *admissionv1.AdmissionRequest
		allowed  bool
		message  string
		warnings []string
	}{{
		name:    "compliant",
		req:     pod(admissionv1.Create, "web", all, nil),
		allowed: true,
	}, {
		name:    "Enforce failure: denied with upstream's message, no warnings",
		req:     pod(admissionv1.Create, "web", map[string]string{"owner": "b"}, nil),
		allowed: false,
		message: "\n\nresource Pod/shop/web was blocked due to the following policies \n\n" +
			"require-team:\n" +
			"  check-team: 'validation error: label ''team'' is required. rule check-team failed at path /metadata/labels/team/'\n",
	}, {
		name:     "Audit failures: a warning only with emitWarning",
		req:      pod(admissionv1.Create, "web", map[string]string{"team": "a"}, nil),
		allowed:  true,
		warnings: []string{"policy audit-warned.check-owner: validation error: label 'owner' is recommended. rule check-owner failed at path /metadata/labels/owner/"},
	}, {
		name:    "Enforce error under failurePolicy Ignore: allowed with a warning",
		req:     pod(admissionv1.Create, "lookup-1", all, nil),
		allowed: true,
		warnings: []string{"policy lenient-lookup.lookup: failed to check deny conditions: failed to substitute variables in condition key: failed to resolve " +
			`request.object.metadata.annotations.missing at path /any/0/key: JMESPath query failed: Unknown key "annotations" in path`},
	}, {
		name:    "denied: every Enforce policy's failures and errors, in name order",
		req:     pod(admissionv1.Create, "lookup-2", map[string]string{"owner": "b", "tier": "c"}, nil),
		allowed: false,
		message: "\n\nresource Pod/shop/lookup-2 was blocked due to the following policies \n\n" +
			"lenient-lookup:\n" +
			"  lookup: 'failed to check deny conditions: failed to substitute variables in condition key: failed to resolve request.object.metadata.annotations.missing at path /any/0/key: JMESPath query failed: Unknown key \"annotations\" in path'\n" +
			"require-team:\n" +
			"  check-team: 'validation error: label ''team'' is required. rule check-team failed at path /metadata/labels/team/'\n",
	}, {
		name:    "DELETE: validate rules do not apply to the old object",
		req:     pod(admissionv1.Delete, "old", nil, nil),
		allowed: true,
	}, {
		name:    "unknown operation",
		req:     pod("create", "web", all, nil),
		message: `admission: unknown operation "create"`,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := admission.Validate(context.Background(), set, tt.req)
			check(t, resp, tt.req, tt.allowed, tt.message, tt.warnings)
			if resp.Patch != nil {
				t.Errorf("patch %s from Validate", resp.Patch)
			}
		})
	}
}

func TestMutate(t *testing.T) {
	set := compile(t, policies)
	for _, tt := range []struct {
		name     string
		req      *admissionv1.AdmissionRequest
		allowed  bool
		message  string
		warnings []string
		patch    string
	}{{
		name:    "patched",
		req:     pod(admissionv1.Create, "web", map[string]string{"team": "a"}, nil),
		allowed: true,
		patch:   `[{"op":"add","path":"/metadata/labels/env","value":"dev"}]`,
	}, {
		name:    "nothing to patch",
		req:     pod(admissionv1.Create, "web", map[string]string{"env": "prod"}, nil),
		allowed: true,
	}, {
		name:    "mutate error under failurePolicy Fail: denied with upstream's message",
		req:     pod(admissionv1.Create, "broken-1", nil, nil),
		allowed: false,
		message: "mutation policy copy-annotation error: failed to apply policy copy-annotation rules " +
			"[copy: variable substitution failed: failed to resolve request.object.metadata.annotations.source " +
			`at path /mutate/patchStrategicMerge/metadata/labels/copied: JMESPath query failed: Unknown key "annotations" in path]`,
	}, {
		name:    "DELETE: allowed, nothing evaluated",
		req:     pod(admissionv1.Delete, "web", nil, nil),
		allowed: true,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := admission.Mutate(context.Background(), set, tt.req)
			check(t, resp, tt.req, tt.allowed, tt.message, tt.warnings)
			if string(resp.Patch) != tt.patch {
				t.Errorf("patch %s, want %s", resp.Patch, tt.patch)
			}
			if (resp.PatchType != nil) != (tt.patch != "") || (resp.PatchType != nil && *resp.PatchType != admissionv1.PatchTypeJSONPatch) {
				t.Errorf("patch type %v with patch %q", resp.PatchType, tt.patch)
			}
		})
	}
}

func TestMutateEmitWarning(t *testing.T) {
	set := compile(t, strings.Replace(policies, "  name: add-env\nspec:\n", "  name: add-env\nspec:\n  emitWarning: true\n", 1))
	resp, _ := admission.Mutate(context.Background(), set, pod(admissionv1.Create, "web", nil, nil))
	want := []string{"policy add-env.env-label: mutated Pod/web in namespace shop"}
	check(t, resp, nil, true, "", want)
}

func check(t *testing.T, resp *admissionv1.AdmissionResponse, req *admissionv1.AdmissionRequest, allowed bool, message string, warnings []string) {
	t.Helper()
	if req != nil && resp.UID != req.UID {
		t.Errorf("UID %q, want %q", resp.UID, req.UID)
	}
	if resp.Allowed != allowed {
		t.Errorf("allowed = %v, want %v", resp.Allowed, allowed)
	}
	got := ""
	if resp.Result != nil {
		got = resp.Result.Message
		if resp.Result.Status != metav1.StatusFailure || resp.Allowed {
			t.Errorf("result %+v on an allowed=%v response", resp.Result, resp.Allowed)
		}
	}
	if got != message {
		t.Errorf("message:\n%q\nwant\n%q", got, message)
	}
	if !reflect.DeepEqual(resp.Warnings, warnings) {
		t.Errorf("warnings:\n%q\nwant\n%q", resp.Warnings, warnings)
	}
}

func TestRequest(t *testing.T) {
	dry := true
	ar := pod(admissionv1.Update, "web", map[string]string{"team": "a"}, nil)
	ar.OldObject.Raw = ar.Object.Raw
	ar.SubResource = "status"
	ar.DryRun = &dry
	ar.UserInfo.UID = "42"
	ar.UserInfo.Extra = map[string]authenticationv1.ExtraValue{"scopes": {"a", "b"}}
	req, err := admission.Request(ar)
	if err != nil {
		t.Fatal(err)
	}
	want := &engine.Request{
		Operation:   api.Update,
		Object:      map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{"team": "a"}}},
		OldObject:   map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{"team": "a"}}},
		UserInfo:    api.UserInfoData{Username: "alice", UID: "42", Groups: []string{"dev"}, Extra: map[string][]string{"scopes": {"a", "b"}}},
		Kind:        schema.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:    schema.GroupVersionResource{Version: "v1", Resource: "pods"},
		SubResource: "status",
		Name:        "web",
		Namespace:   "shop",
		DryRun:      true,
		UID:         "0df28fbd-5f5f-4aaf-8ad4-2d54e2c3d3a6",
	}
	if !reflect.DeepEqual(req, want) {
		t.Errorf("Request:\n%#v\nwant\n%#v", req, want)
	}
}

// TestRequestObjects: an in-process host may put typed or unstructured
// objects in the request instead of raw JSON.
func TestRequestObjects(t *testing.T) {
	set := compile(t, policies)
	typed := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "shop"}, "spec": map[string]any{"priority": int64(3)}}}
	for _, obj := range []runtime.Object{typed, u} {
		ar := &admissionv1.AdmissionRequest{Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: "shop"}
		ar.Object.Object = obj
		req, err := admission.Request(ar)
		if err != nil {
			t.Fatalf("%T: %v", obj, err)
		}
		md, _ := req.Object["metadata"].(map[string]any)
		if md["name"] != "web" || req.Object["kind"] != "Pod" {
			t.Errorf("%T: object %v", obj, req.Object)
		}
		// the engine reads converted objects (int64 numbers included)
		resp, _ := admission.Validate(context.Background(), set, ar)
		if resp.Allowed || !strings.Contains(resp.Result.Message, "resource Pod/shop/web was blocked") {
			t.Errorf("%T: %+v", obj, resp.Result)
		}
	}
	// the unstructured object is copied, not shared
	ar := &admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "other"}
	u.SetNamespace("")
	ar.Object.Object = u
	if _, err := admission.Request(ar); err != nil {
		t.Fatal(err)
	}
	if u.GetNamespace() != "" {
		t.Error("Request changed the caller's object")
	}
	// values outside encoding/json's types (which runtime.DeepCopyJSON
	// panics on) are copied as leaves
	u.Object["spec"] = map[string]any{"priority": 3, "ports": []int32{80}}
	ar.Object.Object = u
	req, err := admission.Request(ar)
	if err != nil {
		t.Fatal(err)
	}
	if spec, _ := req.Object["spec"].(map[string]any); spec["priority"] != 3 {
		t.Errorf("spec %v", req.Object["spec"])
	}
}

func TestRequestErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		ar   *admissionv1.AdmissionRequest
		want string
	}{
		{"nil", nil, "admission: no request"},
		{"operation", &admissionv1.AdmissionRequest{Operation: "PATCH"}, `admission: unknown operation "PATCH"`},
		{"no object", &admissionv1.AdmissionRequest{Operation: admissionv1.Create}, "admission: the request has neither object nor oldObject"},
		{"not an object", &admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(`[1]`)}},
			"admission: request.object: json: cannot unmarshal array into Go value of type map[string]interface {}"},
	} {
		if _, err := admission.Request(tt.ar); err == nil || err.Error() != tt.want {
			t.Errorf("%s: error %v, want %s", tt.name, err, tt.want)
		}
	}
}

// TestResponses: a host that adds what an AdmissionRequest does not carry
// (RBAC roles) evaluates itself and builds the answer with the builders.
func TestResponses(t *testing.T) {
	set := compile(t, strings.Replace(strings.Replace(policies, `  - name: check-team
    match:
      any:
      - resources:
          kinds: [Pod]
`, `  - name: check-team
    match:
      any:
      - resources:
          kinds: [Pod]
    exclude:
      any:
      - clusterRoles: [cluster-admin]
`, 1), "  name: require-team\nspec:\n", "  name: require-team\nspec:\n  background: false\n", 1))
	ar := pod(admissionv1.Create, "web", map[string]string{"owner": "b"}, nil)
	if resp, _ := admission.Validate(context.Background(), set, ar); resp.Allowed {
		t.Fatal("allowed without the role")
	}
	req, err := admission.Request(ar)
	if err != nil {
		t.Fatal(err)
	}
	req.ClusterRoles = []string{"cluster-admin"}
	resp, err := set.Validate(context.Background(), req)
	check(t, admission.ValidateResponse(ar, resp, err), ar, true, "", nil)

	// an engine error denies with its text
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	resp, err = set.Validate(ctx, req)
	check(t, admission.ValidateResponse(ar, resp, err), ar, false, "gavel: validation failed: context canceled", nil)
	mresp, merr := set.Mutate(ctx, req)
	check(t, admission.MutateResponse(ar, mresp, merr), ar, false, "gavel: mutation failed: context canceled", nil)

	// DELETE needs no mutation: allowed without a patch whatever the response
	del := pod(admissionv1.Delete, "web", nil, nil)
	dreq, err := admission.Request(del)
	if err != nil {
		t.Fatal(err)
	}
	dresp, err := set.Mutate(context.Background(), dreq)
	out := admission.MutateResponse(del, dresp, err)
	check(t, out, del, true, "", nil)
	if out.Patch != nil {
		t.Errorf("patch %s for a DELETE", out.Patch)
	}
}

// unsigned is an ImageVerifier for which every image resolves and no
// signature verifies.
type unsigned struct{}

func (unsigned) ResolveDigest(context.Context, engine.ImageVerifyRequest) (string, error) {
	return "sha256:1111111111111111111111111111111111111111111111111111111111111111", nil
}

func (unsigned) VerifySignature(context.Context, engine.ImageVerifyRequest) error {
	return errors.New("no matching signatures")
}

func (unsigned) FetchAttestations(context.Context, engine.ImageVerifyRequest) ([]map[string]any, error) {
	return nil, errors.New("no matching attestations")
}

const verifyPolicies = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: signed-images
spec:
  validationFailureAction: Enforce
  rules:
  - name: check-signature
    match:
      any:
      - resources:
          kinds: [Pod]
    verifyImages:
    - imageReferences: ["registry.test/*"]
      attestors:
      - entries:
        - keys:
            publicKeys: |-
              -----BEGIN PUBLIC KEY-----
              MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEFhKunelBZgBkqVymHhqzkX5tk2CS
              utLhdC5iwilcRLBCs5YgqQRS47gHebUv0mBotgyrwxoo2WXzheGc5iUSTw==
              -----END PUBLIC KEY-----
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: audited-images
spec:
  rules:
  - name: audit-signature
    match:
      any:
      - resources:
          kinds: [Pod]
    verifyImages:
    - imageReferences: ["registry.test/*"]
      mutateDigest: false
      attestors:
      - entries:
        - keys:
            publicKeys: |-
              -----BEGIN PUBLIC KEY-----
              MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEFhKunelBZgBkqVymHhqzkX5tk2CS
              utLhdC5iwilcRLBCs5YgqQRS47gHebUv0mBotgyrwxoo2WXzheGc5iUSTw==
              -----END PUBLIC KEY-----
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: add-env
spec:
  rules:
  - name: env-label
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            +(env): dev
`

// TestMutateVerifyImagesBlocked checks that a verifyImages failure that
// blocks is answered as upstream's image verification handler answers it:
// the blocked-resource message with the verifyImages rules that did not
// pass, of every policy (Audit ones too), not a mutation error.
func TestMutateVerifyImagesBlocked(t *testing.T) {
	s := &loader.Set{}
	if err := s.Read(strings.NewReader(verifyPolicies), "policies.yaml"); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.WithImageVerifier(unsigned{}))
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(s.Policies...)
	if err != nil {
		t.Fatal(err)
	}
	raw := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"app","image":"registry.test/app:v1"}]}}`
	ar := &admissionv1.AdmissionRequest{
		UID:       "0df28fbd-5f5f-4aaf-8ad4-2d54e2c3d3a6",
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Name:      "web",
		Namespace: "shop",
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: []byte(raw)},
	}
	resp, _ := admission.Mutate(context.Background(), set, ar)
	check(t, resp, ar, false, "\n\nresource Pod/shop/web was blocked due to the following policies \n\n"+
		"audited-images:\n"+
		"  audit-signature: 'failed to verify image registry.test/app:v1: .attestors[0].entries[0].keys: no matching signatures'\n"+
		"signed-images:\n"+
		"  check-signature: 'failed to verify image registry.test/app:v1: .attestors[0].entries[0].keys: no matching signatures'\n", nil)
	if resp.Patch != nil {
		t.Errorf("patch %s on a denied request", resp.Patch)
	}
}
