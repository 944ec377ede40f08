package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gavelpolicy/gavel/admission"
	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cluster"
	"github.com/gavelpolicy/gavel/engine"
)

func TestRunUsage(t *testing.T) {
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"-no-such-flag"}, &stderr); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), "-kubeconfig") {
		t.Errorf("usage does not name -kubeconfig:\n%s", stderr.String())
	}
	for _, args := range [][]string{{"-log-level", "loud"}, {"-log-format", "xml"}, {"-report-format", "csv"}} {
		stderr.Reset()
		if code := run(context.Background(), args, &stderr); code != 2 || stderr.Len() == 0 {
			t.Errorf("%v: exit code %d, %q", args, code, stderr.String())
		}
	}
}

func loadPolicies(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	docs, err := api.ReadDocuments(f, name)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, d := range docs {
		u := &unstructured.Unstructured{Object: d.Object}
		u.SetGeneration(1)
		out = append(out, u)
	}
	return out
}

func reviewRequest(uid string, op admissionv1.Operation, kind string, obj map[string]any, dryRun bool) *admissionv1.AdmissionRequest {
	req := &admissionv1.AdmissionRequest{
		UID: types.UID("uid-" + uid), Operation: op, Namespace: "team-a",
		Kind:     metav1.GroupVersionKind{Version: "v1", Kind: kind},
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: strings.ToLower(kind) + "s"},
		UserInfo: authenticationv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}},
		DryRun:   &dryRun,
	}
	md, _ := obj["metadata"].(map[string]any)
	req.Name, _ = md["name"].(string)
	data, _ := json.Marshal(obj)
	if op == admissionv1.Delete {
		req.OldObject = runtime.RawExtension{Raw: data}
	} else {
		req.Object = runtime.RawExtension{Raw: data}
	}
	return req
}

// The example answers every admission request through the admission
// package: its HTTP paths and admission.Validate / admission.Mutate on
// the same policies give the same responses, byte for byte (denials with
// upstream's message, warnings, patches, a blocking mutate error).
func TestOneAnswerForEveryHost(t *testing.T) {
	r := newReplicaWith(t, loadPolicies(t, "one-answer.yaml")...)
	eventually(t, "the policies", func() bool { return len(r.src.Set().Policies()) == 4 })
	pod := func(labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p", "namespace": "team-a", "labels": labels},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx:1.27"}}}}
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "team-a"}}
	requests := map[string]*admissionv1.AdmissionRequest{
		"denied":          reviewRequest("1", admissionv1.Create, "Pod", pod(nil), false),
		"warned, patched": reviewRequest("2", admissionv1.Create, "Pod", pod(map[string]any{"team": "a"}), false),
		"mutate error":    reviewRequest("3", admissionv1.Create, "ConfigMap", cm, false),
		"deletion":        reviewRequest("4", admissionv1.Delete, "Pod", pod(nil), false),
		"dry run":         reviewRequest("5", admissionv1.Update, "Pod", pod(nil), true),
	}
	paths := []struct {
		path   string
		fp     api.FailurePolicyType
		all    bool
		mutate bool
	}{
		{"/validate", "", true, false}, {"/validate/fail", api.Fail, false, false}, {"/validate/ignore", api.Ignore, false, false},
		{"/mutate", "", true, true}, {"/mutate/fail", api.Fail, false, true}, {"/mutate/ignore", api.Ignore, false, true},
	}
	seen := map[string]bool{}
	for name, req := range requests {
		for _, p := range paths {
			got := r.review(t, p.path, req)
			set := r.src.Set()
			if !p.all {
				set = r.src.WebhookSet(p.fp, "")
			}
			var want *admissionv1.AdmissionResponse
			if p.mutate {
				want, _ = admission.Mutate(t.Context(), set, req)
			} else {
				want, _ = admission.Validate(t.Context(), set, req)
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			if !bytes.Equal(gj, wj) {
				t.Errorf("%s %s:\n got %s\nwant %s", name, p.path, gj, wj)
			}
			switch {
			case !got.Allowed:
				seen["denial "+p.path] = true
			case len(got.Patch) > 0:
				seen["patch "+p.path] = true
			case len(got.Warnings) > 0:
				seen["warning "+p.path] = true
			}
		}
	}
	// the cases the comparison covers
	for _, c := range []string{"denial /validate", "denial /validate/fail", "denial /mutate", "denial /mutate/fail",
		"warning /validate", "warning /validate/ignore", "patch /mutate", "patch /mutate/fail"} {
		if !seen[c] {
			t.Errorf("no %s among the responses: %v", c, seen)
		}
	}
}

// The blocked message is upstream's, through the HTTP path.
func TestBlockedMessageIsUpstreams(t *testing.T) {
	r := newReplicaWith(t, loadPolicies(t, "one-answer.yaml")...)
	eventually(t, "the policies", func() bool { return len(r.src.Set().Policies()) == 4 })
	req := reviewRequest("1", admissionv1.Create, "Pod", map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "namespace": "team-a", "labels": map[string]any{"owner": "x"}},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}, false)
	resp := r.review(t, "/validate/fail", req)
	want := "\n\nresource Pod/team-a/p was blocked due to the following policies \n\nrequire-team:\n  check-team: 'validation error: label team is required. rule check-team failed at path /metadata/labels/team/'\n"
	if resp.Allowed || resp.Result == nil || resp.Result.Message != want || resp.UID != req.UID {
		t.Errorf("response %+v, want the denial\n%q", resp, want)
	}
	// and its PolicyViolation event, written in the background
	eventually(t, "the denial's event", func() bool { return r.events.Load() > 0 })
}

// The event flags: upstream's defaults, "" omits none, unknown reasons
// are refused.
func TestEventFlags(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := (cluster.EventOptions{Omit: cluster.DefaultOmitEvents, MaxQueued: 1000, QPS: 1000, Burst: 2000}); !reflect.DeepEqual(o.events, want) {
		t.Errorf("defaults %+v, want %+v", o.events, want)
	}
	for flag, want := range map[string][]string{
		"":                             {},
		"PolicyViolation, PolicyError": {cluster.EventReasonPolicyViolation, cluster.EventReasonPolicyError},
	} {
		o, err := parseFlags([]string{"-omit-events=" + flag}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if o.events.Omit == nil || !slices.Equal(o.events.Omit, want) {
			t.Errorf("-omit-events=%q: %#v, want %#v", flag, o.events.Omit, want)
		}
	}
	if _, err := parseFlags([]string{"-omit-events=PolicyViolations"}, io.Discard); err == nil || !strings.Contains(err.Error(), "PolicyViolations") {
		t.Errorf("a bad reason: %v", err)
	}
}

// A malformed body is refused with 400; the probes answer.
func TestHandlerProbesAndMalformed(t *testing.T) {
	r := newReplicaWith(t)
	h := r.wh.handler()
	for _, tt := range []struct {
		method, path, body string
		code               int
	}{
		{"POST", "/validate/fail", "not json", http.StatusBadRequest},
		{"POST", "/mutate", `{"kind":"AdmissionReview"}`, http.StatusBadRequest},
		{"GET", "/healthz", "", http.StatusOK},
		{"GET", "/readyz", "", http.StatusOK},
		{"GET", "/validate", "", http.StatusMethodNotAllowed},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body)))
		if rec.Code != tt.code {
			t.Errorf("%s %s: %d, want %d", tt.method, tt.path, rec.Code, tt.code)
		}
	}
}

// A DELETE carries the old object only: the webhook validates it, so a
// rule may deny deleting (upstream's block-updates-deletes).
func TestValidateDelete(t *testing.T) {
	docs, err := api.ReadDocuments(strings.NewReader(`apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: block-updates-deletes}
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: block-updates-deletes
    match: {any: [{resources: {kinds: [Service], selector: {matchLabels: {protected: "true"}}}}]}
    validate:
      message: "This resource is protected."
      deny: {conditions: {any: [{key: "{{request.operation}}", operator: AnyIn, value: [DELETE, UPDATE]}]}}
`), "policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := api.DecodePolicy(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	eng, _ := engine.New()
	set, err := eng.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	svc := func(labels string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc","namespace":"default","labels":{` + labels + `}},"spec":{"ports":[{"port":80}]}}`)
	}
	tests := []struct {
		name    string
		labels  string
		allowed bool
	}{
		{name: "protected", labels: `"protected":"true"`, allowed: false},
		{name: "not protected", labels: `"app":"x"`, allowed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			review := admissionv1.AdmissionReview{
				TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
				Request: &admissionv1.AdmissionRequest{
					UID: "1", Operation: admissionv1.Delete, Name: "svc", Namespace: "default",
					Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Service"},
					OldObject: runtime.RawExtension{Raw: svc(tc.labels)},
				},
			}
			body, _ := json.Marshal(review)
			wh := &webhook{log: slog.New(slog.DiscardHandler)}
			rec := httptest.NewRecorder()
			pick := func(*webhook, *http.Request) *engine.PolicySet { return set }
			wh.serve(cluster.ValidatingWebhook, pick, wh.validate)(rec, httptest.NewRequest(http.MethodPost, "/validate", bytes.NewReader(body)))
			var out admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
				t.Fatal(err)
			}
			if out.Response == nil || out.Response.Allowed != tc.allowed {
				t.Fatalf("response %+v, want allowed %v", out.Response, tc.allowed)
			}
			if !tc.allowed && !strings.Contains(out.Response.Result.Message, "This resource is protected.") {
				t.Errorf("message %q", out.Response.Result.Message)
			}
		})
	}
}
