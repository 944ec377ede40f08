package api_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func doc(t *testing.T, src string) api.Document {
	t.Helper()
	docs, err := api.ReadDocuments(strings.NewReader(src), "p.yaml")
	if err != nil || len(docs) != 1 {
		t.Fatalf("%v (%d documents)", err, len(docs))
	}
	return docs[0]
}

// TestKindOfBuilt checks KindOf and IsNamespaced on policies built in Go,
// whose kind field may be empty: the Go type decides, the kind field only
// picks the namespaced kind of a type that serves two.
func TestKindOfBuilt(t *testing.T) {
	tests := []struct {
		p          api.PolicyObject
		kind       string
		namespaced bool
	}{
		{&api.ClusterPolicy{}, api.KindClusterPolicy, false},
		{&api.Policy{}, api.KindPolicy, true},
		{&api.CleanupPolicy{}, api.KindClusterCleanupPolicy, false},
		{&api.CleanupPolicy{TypeMeta: metav1.TypeMeta{Kind: api.KindCleanupPolicy}}, api.KindCleanupPolicy, true},
		{&api.ValidatingPolicy{}, api.KindValidatingPolicy, false},
		{&api.ValidatingPolicy{TypeMeta: metav1.TypeMeta{Kind: "Unrelated"}}, api.KindValidatingPolicy, false},
		{&api.MutatingPolicy{TypeMeta: metav1.TypeMeta{Kind: api.KindNamespacedMutatingPolicy}}, api.KindNamespacedMutatingPolicy, true},
		{&api.GeneratingPolicy{TypeMeta: metav1.TypeMeta{Kind: api.KindNamespacedGeneratingPolicy}}, api.KindNamespacedGeneratingPolicy, true},
		{&api.DeletingPolicy{}, api.KindDeletingPolicy, false},
		{&api.ImageValidatingPolicy{TypeMeta: metav1.TypeMeta{Kind: api.KindNamespacedImageValidatingPolicy}}, api.KindNamespacedImageValidatingPolicy, true},
		{&api.ValidatingAdmissionPolicy{}, api.KindValidatingAdmissionPolicy, false},
		{&api.MutatingAdmissionPolicyBinding{}, api.KindMutatingAdmissionPolicyBinding, false},
		{nil, "", false},
	}
	for _, tt := range tests {
		if got, ns := api.KindOf(tt.p), api.IsNamespaced(tt.p); got != tt.kind || ns != tt.namespaced {
			t.Errorf("%T: kind %q namespaced %v, want %q %v", tt.p, got, ns, tt.kind, tt.namespaced)
		}
	}
}

func TestDecodeCELKinds(t *testing.T) {
	tests := []struct {
		apiVersion, kind string
		typ              string
		namespaced       bool
	}{
		{"policies.kyverno.io/v1alpha1", "ValidatingPolicy", "*api.ValidatingPolicy", false},
		{"policies.kyverno.io/v1beta1", "ValidatingPolicy", "*api.ValidatingPolicy", false},
		{"policies.kyverno.io/v1", "NamespacedValidatingPolicy", "*api.ValidatingPolicy", true},
		{"policies.kyverno.io/v1", "ImageValidatingPolicy", "*api.ImageValidatingPolicy", false},
		{"policies.kyverno.io/v1beta1", "NamespacedImageValidatingPolicy", "*api.ImageValidatingPolicy", true},
		{"policies.kyverno.io/v1", "MutatingPolicy", "*api.MutatingPolicy", false},
		{"policies.kyverno.io/v1", "NamespacedMutatingPolicy", "*api.MutatingPolicy", true},
		{"policies.kyverno.io/v1", "GeneratingPolicy", "*api.GeneratingPolicy", false},
		{"policies.kyverno.io/v1alpha1", "NamespacedGeneratingPolicy", "*api.GeneratingPolicy", true},
		{"policies.kyverno.io/v1", "DeletingPolicy", "*api.DeletingPolicy", false},
		{"policies.kyverno.io/v1", "NamespacedDeletingPolicy", "*api.DeletingPolicy", true},
		{"admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "*api.ValidatingAdmissionPolicy", false},
		{"admissionregistration.k8s.io/v1beta1", "ValidatingAdmissionPolicyBinding", "*api.ValidatingAdmissionPolicyBinding", false},
		{"admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy", "*api.MutatingAdmissionPolicy", false},
		{"admissionregistration.k8s.io/v1alpha1", "MutatingAdmissionPolicyBinding", "*api.MutatingAdmissionPolicyBinding", false},
	}
	for _, tt := range tests {
		t.Run(tt.apiVersion+" "+tt.kind, func(t *testing.T) {
			d := doc(t, fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata:\n  name: x\nspec: {}\n", tt.apiVersion, tt.kind))
			obj, err := api.DecodeObject(d)
			if err != nil {
				t.Fatal(err)
			}
			p, ok := obj.(api.PolicyObject)
			if !ok {
				t.Fatalf("not a policy: %T", obj)
			}
			if got := fmt.Sprintf("%T", p); got != tt.typ {
				t.Errorf("type %s, want %s", got, tt.typ)
			}
			if api.KindOf(p) != tt.kind || api.IsNamespaced(p) != tt.namespaced {
				t.Errorf("kind %s namespaced %v, want %s %v", api.KindOf(p), api.IsNamespaced(p), tt.kind, tt.namespaced)
			}
			if tt.namespaced && p.GetNamespace() != "default" {
				t.Errorf("namespace %q, want default", p.GetNamespace())
			}
			if _, classic := p.(api.ClassicPolicy); classic {
				t.Error("a CEL kind implements ClassicPolicy")
			}
		})
	}
}

func TestDecodeValidatingPolicy(t *testing.T) {
	d := doc(t, `apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: check
spec:
  validationActions: [Audit]
  evaluation:
    mode: JSON
    background: {enabled: false}
  autogen:
    podControllers:
      controllers: [deployments]
  webhookConfiguration:
    timeoutSeconds: 12
  matchConditions:
  - name: a
    expression: "true"
  validations:
  - expression: "true"
    messageExpression: "'m'"
status:
  conditionStatus: {ready: true}
`)
	p, err := api.DecodePolicy(d)
	if err != nil {
		t.Fatal(err)
	}
	vp := p.(*api.ValidatingPolicy)
	s := vp.Spec
	if s.EvaluationMode() != api.EvaluationModeJSON || s.BackgroundEnabled() || !s.AdmissionEnabled() ||
		*s.WebhookConfiguration.TimeoutSeconds != 12 || s.AutogenConfiguration.PodControllers.Controllers[0] != "deployments" ||
		len(s.ValidationActions()) != 1 || s.Validations[0].MessageExpression != "'m'" {
		t.Errorf("spec decoded as %+v", s)
	}
}

func TestDecodeCELErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"unknown field with its path", `apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: x}
spec:
  validations:
  - expresion: "true"`, []string{"p.yaml[0] ValidatingPolicy/x", "spec.validations[0].expresion", `unknown field "expresion"`}},
		{"unknown version", `apiVersion: policies.kyverno.io/v2
kind: ValidatingPolicy
metadata: {name: x}
spec: {}`, []string{`unsupported apiVersion "policies.kyverno.io/v2"`}},
		{"wrong type", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: b}
spec:
  validationActions: Deny`, []string{"spec.validationActions", "cannot use a string"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := api.DecodePolicy(doc(t, tt.src))
			var de *api.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("got %v, want a *DecodeError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}

// TestDecodeFoldedFieldNames checks that a field name differing only in
// case is read as encoding/json reads it rather than refused.
func TestDecodeFoldedFieldNames(t *testing.T) {
	p, err := api.DecodePolicy(doc(t, `apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: x}
spec:
  Validations:
  - Expression: "true"`))
	if err != nil {
		t.Fatal(err)
	}
	if v := p.(*api.ValidatingPolicy).Spec.Validations; len(v) != 1 || v[0].Expression != "true" {
		t.Errorf("validations %+v", v)
	}
}

func TestDecodeCELPolicyException(t *testing.T) {
	d := doc(t, `apiVersion: policies.kyverno.io/v1beta1
kind: PolicyException
metadata: {name: e, namespace: ops}
spec:
  policyRefs: [{name: p, kind: ValidatingPolicy}]
  matchConditions: [{name: a, expression: "true"}]
  images: [nginx:latest]
  allowedValues: [x]
  reportResult: pass
  expiresAt: "2030-01-01T00:00:00Z"
`)
	obj, err := api.DecodeObject(d)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := obj.(*api.CELPolicyException)
	if !ok {
		t.Fatalf("not read as a CEL PolicyException: %T", obj)
	}
	if e.Spec.PolicyRefs[0].Kind != "ValidatingPolicy" || e.Spec.ReportResult != api.ExceptionReportPass || e.Spec.ExpiresAt == nil {
		t.Errorf("decoded as %+v", e.Spec)
	}
}

func TestDecodeObjectUnknownKind(t *testing.T) {
	tests := []struct {
		apiVersion, kind string
		unknown          bool
	}{
		{"kyverno.io/v1", "ClusterPolicyy", true},
		{"kyverno.io/v1", "ClusterPolicy", false},
		{"kyverno.io/v2", "CleanupPolicy", false},
		{"kyverno.io/v1beta1", "UpdateRequest", false},
		{"policies.kyverno.io/v1", "ValidatingPolicies", true},
		{"policies.kyverno.io/v1", "PolicyException", false},
		{"admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", false},
		{"admissionregistration.k8s.io/v1", "ValidatingAdmisionPolicy", true},
		{"v1", "Pod", false},
		{"example.com/v1", "Anything", false},
	}
	for _, tt := range tests {
		d := doc(t, fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: {name: x}\n", tt.apiVersion, tt.kind))
		_, err := api.DecodeObject(d)
		var ue *api.UnknownKindError
		if got := errors.As(err, &ue); got != tt.unknown {
			t.Errorf("%s %s: %v, want unknown %v", tt.apiVersion, tt.kind, err, tt.unknown)
		}
		if tt.unknown && (!strings.Contains(err.Error(), "p.yaml[0]") || !strings.Contains(err.Error(), tt.kind)) {
			t.Errorf("%q does not name the file and the kind", err)
		}
	}
}
