package webhook_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/examples/webhook/internal/webhook"
	"github.com/gavelpolicy/gavel/generate"
)

// testServer is a webhook serving over HTTPS on a loopback port.
type testServer struct {
	srv    *webhook.Server
	dir    string
	url    string
	client *http.Client
}

// start copies the sample policies to a temporary folder and serves them
// with a fresh self-signed certificate. The server stops at the end of the
// test, and the test fails if it does not stop in time.
func start(t *testing.T) *testServer {
	t.Helper()
	dir := t.TempDir()
	copyDir(t, filepath.Join("..", "..", "testdata", "policies"), dir)
	srv, err := webhook.New(webhook.Options{
		PolicyDir:    dir,
		PollInterval: 20 * time.Millisecond,
		Logf:         t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	cert, certPEM, err := webhook.SelfSignedCert("127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, cert) }()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}},
	}
	t.Cleanup(func() {
		client.CloseIdleConnections()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("server did not stop after cancel")
		}
	})
	return &testServer{srv: srv, dir: dir, url: "https://" + ln.Addr().String(), client: client}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func pod(name string, labels map[string]string, image string) map[string]any {
	md := map[string]any{"name": name, "namespace": "shop"}
	if len(labels) > 0 {
		l := map[string]any{}
		for k, v := range labels {
			l[k] = v
		}
		md["labels"] = l
	}
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   md,
		"spec": map[string]any{
			"containers": []any{map[string]any{"name": "app", "image": image}},
		},
	}
}

// review sends one AdmissionReview to path and returns the response.
func (ts *testServer) review(t *testing.T, path string, op admissionv1.Operation, obj map[string]any) *admissionv1.AdmissionResponse {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	resource := strings.ToLower(kind) + "s"
	uid := types.UID("uid-" + name)
	in := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       uid,
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: kind},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: resource},
			Name:      name,
			Namespace: ns,
			Operation: op,
			UserInfo:  authenticationv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}},
			Object:    k8sruntime.RawExtension{Raw: raw},
		},
	}
	body, err := json.Marshal(&in)
	if err != nil {
		t.Fatal(err)
	}
	status, out := ts.post(t, path, "application/json", body)
	if status != http.StatusOK {
		t.Fatalf("POST %s: HTTP %d: %s", path, status, out)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(out, &review); err != nil {
		t.Fatalf("decoding response review: %v\n%s", err, out)
	}
	if review.APIVersion != "admission.k8s.io/v1" || review.Kind != "AdmissionReview" || review.Response == nil {
		t.Fatalf("bad response review: %s", out)
	}
	if review.Response.UID != uid {
		t.Fatalf("response UID %q, want %q", review.Response.UID, uid)
	}
	return review.Response
}

func (ts *testServer) post(t *testing.T, path, contentType string, body []byte) (int, []byte) {
	t.Helper()
	resp, err := ts.client.Post(ts.url+path, contentType, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

func TestValidate(t *testing.T) {
	ts := start(t)
	team := map[string]string{"team": "shop"}
	tests := []struct {
		name     string
		obj      map[string]any
		allowed  bool
		message  string
		warnings []string
	}{
		{
			name:    "pass",
			obj:     pod("web", team, "nginx:1.27"),
			allowed: true,
		},
		{
			name:    "deny",
			obj:     pod("nolabel", nil, "nginx:1.27"),
			allowed: false,
			message: "\n\nresource Pod/shop/nolabel was blocked due to the following policies \n\n" +
				"require-team-label:\n" +
				"  check-team: 'validation error: label ''team'' is required. rule check-team failed at path /metadata/labels/'\n",
		},
		{
			name:    "warning from an Audit policy with emitWarning",
			obj:     pod("latest", team, "nginx:latest"),
			allowed: true,
			warnings: []string{
				"policy disallow-latest-tag.validate-image-tag: validation error: Using a mutable image tag e.g. 'latest' is not allowed. rule validate-image-tag failed at path /spec/containers/0/image/",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ts.review(t, "/validate", admissionv1.Create, tt.obj)
			if resp.Allowed != tt.allowed {
				t.Fatalf("allowed = %v, want %v (%+v)", resp.Allowed, tt.allowed, resp.Result)
			}
			msg := ""
			if resp.Result != nil {
				msg = resp.Result.Message
				if !tt.allowed && resp.Result.Status != metav1.StatusFailure {
					t.Errorf("status = %q, want Failure", resp.Result.Status)
				}
			}
			if msg != tt.message {
				t.Errorf("message:\n%q\nwant\n%q", msg, tt.message)
			}
			if !reflect.DeepEqual(resp.Warnings, tt.warnings) {
				t.Errorf("warnings:\n%q\nwant\n%q", resp.Warnings, tt.warnings)
			}
			if resp.Patch != nil {
				t.Errorf("validate answered a patch: %s", resp.Patch)
			}
		})
	}
}

func TestMutate(t *testing.T) {
	ts := start(t)
	obj := pod("web", map[string]string{"team": "shop"}, "nginx:1.27")
	resp := ts.review(t, "/mutate", admissionv1.Create, obj)
	if !resp.Allowed {
		t.Fatalf("denied: %+v", resp.Result)
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("patchType = %v, want JSONPatch", resp.PatchType)
	}
	want := `[{"op":"add","path":"/spec/securityContext","value":{"runAsNonRoot":true,"runAsUser":1000}}]`
	if string(resp.Patch) != want {
		t.Errorf("patch = %s\nwant   %s", resp.Patch, want)
	}
	// the patch applies to the original object and yields the mutation
	orig, _ := json.Marshal(obj)
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := patch.Apply(orig)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(patched, &got); err != nil {
		t.Fatal(err)
	}
	sc := got["spec"].(map[string]any)["securityContext"]
	if !reflect.DeepEqual(sc, map[string]any{"runAsNonRoot": true, "runAsUser": float64(1000)}) {
		t.Errorf("patched securityContext = %v", sc)
	}

	// an object the policy leaves alone gets no patch
	obj["spec"].(map[string]any)["securityContext"] = map[string]any{"runAsNonRoot": false, "runAsUser": 5}
	resp = ts.review(t, "/mutate", admissionv1.Create, obj)
	if !resp.Allowed || resp.Patch != nil || resp.PatchType != nil {
		t.Errorf("unchanged object: allowed=%v patch=%s", resp.Allowed, resp.Patch)
	}
}

func TestRawPatchIsBase64OnTheWire(t *testing.T) {
	ts := start(t)
	obj := pod("web", map[string]string{"team": "shop"}, "nginx:1.27")
	raw, _ := json.Marshal(obj)
	body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"shop","name":"web","operation":"CREATE","userInfo":{"username":"alice"},"object":` + string(raw) + `}}`
	status, out := ts.post(t, "/mutate", "application/json", []byte(body))
	if status != http.StatusOK {
		t.Fatalf("HTTP %d: %s", status, out)
	}
	var generic struct {
		Response struct {
			UID       string `json:"uid"`
			Allowed   bool   `json:"allowed"`
			Patch     string `json:"patch"`
			PatchType string `json:"patchType"`
		} `json:"response"`
	}
	if err := json.Unmarshal(out, &generic); err != nil {
		t.Fatal(err)
	}
	r := generic.Response
	if r.UID != "u1" || !r.Allowed || r.PatchType != "JSONPatch" {
		t.Fatalf("response = %s", out)
	}
	// base64 of `[{"op":"add","path":"/spec/securityContext",...`
	if !strings.HasPrefix(r.Patch, "W3sib3AiOiJhZGQiLCJwYXRoIjoiL3NwZWMvc2VjdXJpdHlDb250ZXh0Ii") {
		t.Errorf("patch is not the base64 JSON patch: %s", r.Patch)
	}
}

// TestGenerateRequestsAreProcessed: an allowed request's UpdateRequest is
// queued and the background controller Serve runs applies it to the
// cluster.
func TestGenerateRequestsAreProcessed(t *testing.T) {
	ts := start(t)
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-a"}}
	// the controller reads the trigger from the cluster, where the API
	// server stores it once admitted (stored first here, so that the
	// controller never runs before it is there)
	ts.srv.Cluster().Add(ns)
	resp := ts.review(t, "/validate", admissionv1.Create, ns)
	if !resp.Allowed {
		t.Fatalf("denied: %+v", resp.Result)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var netpol map[string]any
	for netpol == nil {
		obj, err := ts.srv.Cluster().Get(ctx, "networking.k8s.io/v1", "NetworkPolicy", "team-a", "default-deny-ingress")
		switch {
		case err == nil:
			netpol = obj
		case !errors.Is(err, engine.ErrNotFound):
			t.Fatal(err)
		default:
			select {
			case <-ctx.Done():
				t.Fatal("the NetworkPolicy was never generated")
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	labels, _, _ := unstructured.NestedStringMap(netpol, "metadata", "labels")
	if labels[generate.LabelPolicyName] != "default-networkpolicy" {
		t.Errorf("generated labels = %v", labels)
	}
}

func TestReload(t *testing.T) {
	ts := start(t)
	frozen := pod("frozen", map[string]string{"team": "shop", "frozen": "true"}, "nginx:1.27")
	if resp := ts.review(t, "/validate", admissionv1.Create, frozen); !resp.Allowed {
		t.Fatalf("denied before the policy exists: %+v", resp.Result)
	}
	gen := ts.srv.Generation()
	policy := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: deny-frozen
spec:
  validationFailureAction: Enforce
  rules:
  - name: not-frozen
    match:
      any:
      - resources:
          kinds: [Pod]
          selector:
            matchLabels:
              frozen: "true"
    validate:
      message: "frozen workloads cannot be created"
      deny: {}
`
	if err := os.WriteFile(filepath.Join(ts.dir, "deny-frozen.yaml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return ts.srv.Generation() > gen })
	resp := ts.review(t, "/validate", admissionv1.Create, frozen)
	if resp.Allowed || !strings.Contains(resp.Result.Message, "deny-frozen:\n  not-frozen: frozen workloads cannot be created\n") {
		t.Fatalf("after reload: allowed=%v result=%+v", resp.Allowed, resp.Result)
	}

	// a broken file keeps the last good set serving and fails readiness
	gen = ts.srv.Generation()
	if err := os.WriteFile(filepath.Join(ts.dir, "broken.yaml"), []byte("apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: broken}\nspec:\n  rules: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return ts.srv.LastReloadError() != nil })
	if ts.srv.Generation() != gen {
		t.Errorf("generation changed on a failed reload")
	}
	if resp := ts.review(t, "/validate", admissionv1.Create, frozen); resp.Allowed {
		t.Errorf("old set no longer serving after a failed reload")
	}
	if code := ts.get(t, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("readyz = %d while the folder is broken", code)
	}

	// removing the broken file and the new policy restores the start state
	for _, f := range []string{"broken.yaml", "deny-frozen.yaml"} {
		if err := os.Remove(filepath.Join(ts.dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return ts.srv.Generation() > gen })
	if code := ts.get(t, "/readyz"); code != http.StatusOK {
		t.Errorf("readyz = %d after the folder was fixed", code)
	}
	if resp := ts.review(t, "/validate", admissionv1.Create, frozen); !resp.Allowed {
		t.Errorf("denied after the policy was removed: %+v", resp.Result)
	}
}

func (ts *testServer) get(t *testing.T, path string) int {
	t.Helper()
	resp, err := ts.client.Get(ts.url + path)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// waitFor polls cond for up to 5 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBadRequests(t *testing.T) {
	ts := start(t)
	tests := []struct {
		name, contentType, body string
		status                  int
	}{
		{"not JSON", "application/json", "{", http.StatusBadRequest},
		{"wrong kind", "application/json", `{"apiVersion":"v1","kind":"Pod"}`, http.StatusBadRequest},
		{"no request", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, http.StatusBadRequest},
		{"content type", "text/plain", `{}`, http.StatusUnsupportedMediaType},
		{"too large", "application/json", `{"apiVersion":"` + strings.Repeat("x", 4<<20) + `"}`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if status, out := ts.post(t, "/validate", tt.contentType, []byte(tt.body)); status != tt.status {
				t.Errorf("HTTP %d, want %d: %s", status, tt.status, out)
			}
		})
	}
	// a review whose object is not an object is denied, not a crash
	body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u2","kind":{"version":"v1","kind":"Pod"},"operation":"CREATE","object":[1,2]}}`
	status, out := ts.post(t, "/validate", "application/json", []byte(body))
	var review admissionv1.AdmissionReview
	if status != http.StatusOK || json.Unmarshal(out, &review) != nil || review.Response == nil {
		t.Fatalf("HTTP %d: %s", status, out)
	}
	if review.Response.Allowed || review.Response.Result.Status != metav1.StatusFailure || review.Response.UID != "u2" {
		t.Errorf("response = %s", out)
	}
	if code := ts.get(t, "/healthz"); code != http.StatusOK {
		t.Errorf("healthz = %d", code)
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := webhook.New(webhook.Options{}); err == nil {
		t.Error("no PolicyDir: no error")
	}
	if _, err := webhook.New(webhook.Options{PolicyDir: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("missing folder: no error")
	}
}

// TestNoGoroutineLeak starts and stops servers and checks that every
// goroutine they started has ended.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for i := 0; i < 3; i++ {
		t.Run("server", func(t *testing.T) {
			ts := start(t)
			ts.review(t, "/validate", admissionv1.Create, pod("web", map[string]string{"team": "a"}, "nginx:1.27"))
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines after stop, %d before:\n%s", runtime.NumGoroutine(), before, buf[:n])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMutateErrors(t *testing.T) {
	ts := start(t)
	const broken = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: copy-owner-label
spec:
  failurePolicy: %s
  rules:
  - name: copy-owner
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            owner: "{{ request.object.metadata.annotations.owner }}"
`
	tests := []struct {
		failurePolicy string
		allowed       bool
	}{
		{"Fail", false},
		{"Ignore", true},
	}
	for _, tt := range tests {
		t.Run(tt.failurePolicy, func(t *testing.T) {
			src := strings.Replace(broken, "%s", tt.failurePolicy, 1)
			if err := os.WriteFile(filepath.Join(ts.dir, "copy-owner-label.yaml"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := ts.srv.Reload(); err != nil {
				t.Fatal(err)
			}
			resp := ts.review(t, "/mutate", admissionv1.Create, pod("web", map[string]string{"team": "a"}, "nginx:1.27"))
			if resp.Allowed != tt.allowed {
				t.Fatalf("allowed = %v, want %v: %+v", resp.Allowed, tt.allowed, resp.Result)
			}
			if !tt.allowed {
				want := "mutation policy copy-owner-label error: failed to apply policy copy-owner-label rules " +
					"[copy-owner: variable substitution failed: failed to resolve request.object.metadata.annotations.owner " +
					`at path /mutate/patchStrategicMerge/metadata/labels/owner: JMESPath query failed: Unknown key "annotations" in path]`
				if resp.Result.Message != want {
					t.Errorf("message = %q\nwant      %q", resp.Result.Message, want)
				}
				if resp.Patch != nil {
					t.Errorf("denied response carries a patch")
				}
				return
			}
			if len(resp.Warnings) != 1 || !strings.HasPrefix(resp.Warnings[0], "policy copy-owner-label.copy-owner: variable substitution failed") {
				t.Errorf("warnings = %q", resp.Warnings)
			}
			if resp.Patch == nil {
				t.Errorf("the other policies' patch is missing")
			}
		})
	}
}

// TestExceptionsFromTheFolder reloads a PolicyException placed beside the
// policies: the engine reads it through the server's ExceptionSource.
func TestExceptionsFromTheFolder(t *testing.T) {
	ts := start(t)
	legacy := pod("legacy-web", nil, "nginx:1.27")
	if resp := ts.review(t, "/validate", admissionv1.Create, legacy); resp.Allowed {
		t.Fatal("allowed before the exception exists")
	}
	exc := `apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: legacy
  namespace: shop
spec:
  exceptions:
  - policyName: require-team-label
    ruleNames: [check-team]
  match:
    any:
    - resources:
        kinds: [Pod]
        namespaces: [shop]
        names: ["legacy-*"]
`
	if err := os.WriteFile(filepath.Join(ts.dir, "exception.yaml"), []byte(exc), 0o644); err != nil {
		t.Fatal(err)
	}
	// the poller may have picked the file up already: Reload then has
	// nothing to do
	if _, err := ts.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	if resp := ts.review(t, "/validate", admissionv1.Create, legacy); !resp.Allowed {
		t.Errorf("denied despite the exception: %+v", resp.Result)
	}
	if resp := ts.review(t, "/validate", admissionv1.Create, pod("web", nil, "nginx:1.27")); resp.Allowed {
		t.Error("the exception applies to a resource it does not match")
	}
}
