package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/cluster"
)

// The policies' own webhook admits a policy the engine compiles and
// refuses the others with the compiler's words, as upstream's policy
// validating webhook (its chainsaw tests standard/audit/background-*
// look for them in kubectl's error).
func TestPolicyWebhook(t *testing.T) {
	r := newReplicaWith(t)
	h := r.wh.handler()
	const valid = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: require-team}
spec:
  rules:
  - name: team
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      message: "the team label is required"
      pattern: {metadata: {labels: {team: "?*"}}}
`
	for _, tt := range []struct {
		name   string
		policy string
		want   string // in the denial; "" admits
	}{
		{"valid", valid, ""},
		{"an admission-only variable in background mode", strings.Replace(valid, `team: "?*"`, `team: "{{request.roles}}"`, 1),
			"variable {{request.roles}} is not allowed"},
		{"roles in the match of a background policy", strings.Replace(valid, "{resources: {kinds: [Pod]}}", "{resources: {kinds: [Pod]}, roles: ['ns:role']}", 1),
			"invalid variable used at path: spec/rules[0]/match/any[0]/roles"},
		{"an unknown operator", `apiVersion: kyverno.io/v1
kind: Policy
metadata: {name: p, namespace: team-a}
spec:
  rules:
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      deny: {conditions: {any: [{key: a, operator: Equalz, value: b}]}}
`, "Equalz"},
		{"an invalid policy being deleted", strings.Replace(strings.Replace(valid, `team: "?*"`, `team: "{{request.roles}}"`, 1),
			"metadata: {name: require-team}", "metadata: {name: require-team, deletionTimestamp: '2026-11-29T00:00:00Z'}", 1), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := yaml.YAMLToJSON([]byte(tt.policy))
			if err != nil {
				t.Fatal(err)
			}
			review := admissionv1.AdmissionReview{
				TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
				Request: &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Create,
					Object: runtime.RawExtension{Raw: obj}},
			}
			body, _ := json.Marshal(review)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, cluster.PolicyPath, bytes.NewReader(body)))
			var out admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
				t.Fatalf("answer %d %q: %v", rec.Code, rec.Body.String(), err)
			}
			resp := out.Response
			if resp.UID != "u" {
				t.Errorf("UID %q", resp.UID)
			}
			if tt.want == "" {
				if !resp.Allowed {
					t.Errorf("refused: %+v", resp.Result)
				}
				return
			}
			if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, tt.want) {
				t.Errorf("answer %+v, want a denial with %q", resp, tt.want)
			}
		})
	}
}
