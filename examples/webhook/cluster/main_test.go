package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gavelpolicy/gavel/api"
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
}

func TestBlockedMessageIsUpstreams(t *testing.T) {
	docs, err := api.ReadDocuments(strings.NewReader(`apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: require-team}
spec:
  validationFailureAction: Enforce
  rules:
  - name: check-team
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      message: "label team is required"
      pattern: {metadata: {labels: {team: "?*"}}}
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
	pod := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`)
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "1", Operation: admissionv1.Create, Name: "p", Namespace: "default",
			Kind:   metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Object: runtime.RawExtension{Raw: pod},
		},
	}
	body, _ := json.Marshal(review)
	wh := &webhook{logf: t.Logf}
	rec := httptest.NewRecorder()
	wh.serve(func(ctx context.Context, _ *engine.PolicySet, req *engine.Request) *admissionv1.AdmissionResponse {
		return wh.validate(ctx, set, req)
	}, false)(rec, httptest.NewRequest(http.MethodPost, "/validate", bytes.NewReader(body)))
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	want := "\n\nresource Pod/default/p was blocked due to the following policies \n\nrequire-team:\n  check-team: 'validation error: label team is required. rule check-team failed at path /metadata/labels/'\n"
	if out.Response == nil || out.Response.Allowed || out.Response.Result.Message != want || out.Response.UID != "1" {
		t.Errorf("response %+v, want the denial\n%q", out.Response, want)
	}
}
