package polex_test

import (
	"errors"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/polex"
)

func celException(name string, spec policiesv1alpha1.PolicyExceptionSpec) *api.CELPolicyException {
	return &api.CELPolicyException{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ops"}, Spec: spec}
}

func TestCELValidation(t *testing.T) {
	ref := []policiesv1alpha1.PolicyRef{{Name: "p", Kind: "ValidatingPolicy"}}
	tests := []struct {
		name string
		spec policiesv1alpha1.PolicyExceptionSpec
		want []string
	}{
		{"no refs", policiesv1alpha1.PolicyExceptionSpec{}, []string{"spec.policyRefs: Required value"}},
		{"ref without kind", policiesv1alpha1.PolicyExceptionSpec{PolicyRefs: []policiesv1alpha1.PolicyRef{{Name: "p"}}}, []string{"spec.policyRefs[0].kind: Required value"}},
		{"bad report result", policiesv1alpha1.PolicyExceptionSpec{PolicyRefs: ref, ReportResult: "fail"}, []string{`spec.reportResult: Unsupported value: "fail"`}},
		{"condition names", policiesv1alpha1.PolicyExceptionSpec{PolicyRefs: ref, MatchConditions: []admissionregistrationv1.MatchCondition{
			{Name: "a", Expression: "true"}, {Name: "a", Expression: "true"}, {Expression: ""}}},
			[]string{"spec.matchConditions[1].name: Duplicate value", "spec.matchConditions[2].name: Required value", "spec.matchConditions[2].expression: Required value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := polex.Compile(nil, polex.CEL(celException("x", tt.spec)))
			var ve *polex.ValidationError
			if !errors.As(err, &ve) || ve.Name != "x" {
				t.Fatalf("got %v, want a *ValidationError naming x", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}

func TestCELCandidates(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := celException("a", policiesv1alpha1.PolicyExceptionSpec{ExpiresAt: &at, PolicyRefs: []policiesv1alpha1.PolicyRef{
		{Name: "p", Kind: "ValidatingPolicy"}, {Name: "p", Kind: "ValidatingPolicy"}, {Name: "q", Kind: "ValidatingAdmissionPolicy"}}})
	b := celException("b", policiesv1alpha1.PolicyExceptionSpec{ReportResult: "pass", AllowedValues: []string{"x"},
		PolicyRefs: []policiesv1alpha1.PolicyRef{{Name: "p", Kind: "ValidatingPolicy"}}})
	other := celException("other", policiesv1alpha1.PolicyExceptionSpec{PolicyRefs: []policiesv1alpha1.PolicyRef{{Name: "p", Kind: "ValidatingPolicy"}}})
	other.Namespace = "elsewhere"
	set, err := polex.Compile(nil, polex.CEL(a, b, other), polex.Namespaces("ops"))
	if err != nil {
		t.Fatal(err)
	}
	got := set.CELCandidates("ValidatingPolicy", "p")
	if len(got) != 2 || got[0].Key() != "ops/a" || got[1].Key() != "ops/b" {
		t.Fatalf("candidates %v", got)
	}
	if !got[0].FullExemption() || got[1].FullExemption() || got[0].ReportsPass() || !got[1].ReportsPass() {
		t.Error("exemption or report result misread")
	}
	if got[0].Expired(at.Add(-time.Second)) || !got[0].Expired(at.Time) || got[1].Expired(at.Time) {
		t.Error("expiry misread")
	}
	if n := len(set.CELCandidates("ValidatingAdmissionPolicy", "q")); n != 1 {
		t.Errorf("%d candidates of q, want 1", n)
	}
	if set.Len() != 2 {
		t.Errorf("Len %d, want 2 (other's namespace is not accepted)", set.Len())
	}
}
