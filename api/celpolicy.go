package api

import (
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Groups of the CEL policy kinds.
const (
	// GroupPolicies is the group of Kyverno's CEL policy kinds.
	GroupPolicies = "policies.kyverno.io"
	// GroupAdmissionRegistration is the group of Kubernetes' admission
	// policies.
	GroupAdmissionRegistration = "admissionregistration.k8s.io"
)

// Kinds of the policies.kyverno.io group.
const (
	KindValidatingPolicy                = "ValidatingPolicy"
	KindNamespacedValidatingPolicy      = "NamespacedValidatingPolicy"
	KindImageValidatingPolicy           = "ImageValidatingPolicy"
	KindNamespacedImageValidatingPolicy = "NamespacedImageValidatingPolicy"
	KindMutatingPolicy                  = "MutatingPolicy"
	KindNamespacedMutatingPolicy        = "NamespacedMutatingPolicy"
	KindGeneratingPolicy                = "GeneratingPolicy"
	KindNamespacedGeneratingPolicy      = "NamespacedGeneratingPolicy"
	KindDeletingPolicy                  = "DeletingPolicy"
	KindNamespacedDeletingPolicy        = "NamespacedDeletingPolicy"
)

// Kinds of the admissionregistration.k8s.io group.
const (
	KindValidatingAdmissionPolicy        = "ValidatingAdmissionPolicy"
	KindValidatingAdmissionPolicyBinding = "ValidatingAdmissionPolicyBinding"
	KindMutatingAdmissionPolicy          = "MutatingAdmissionPolicy"
	KindMutatingAdmissionPolicyBinding   = "MutatingAdmissionPolicyBinding"
)

// The spec types of the policies.kyverno.io kinds are those of
// github.com/kyverno/api (package policies.kyverno.io/v1alpha1), the same
// Go types in every served version (v1alpha1, v1beta1 and v1 alias them):
// gavel uses them as they are and does not rename them.

// Evaluation modes of a ValidatingPolicy (spec.evaluation.mode).
const (
	EvaluationModeKubernetes = "Kubernetes"
	EvaluationModeJSON       = "JSON"
)

// ValidatingPolicy is a policies.kyverno.io ValidatingPolicy (Kind
// ValidatingPolicy, cluster-wide) or NamespacedValidatingPolicy (applies
// only to resources of its namespace), in any served version.
type ValidatingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              policiesv1alpha1.ValidatingPolicySpec `json:"spec"`
	// Status is accepted on input and ignored.
	Status any `json:"status,omitempty"`
}

// ImageValidatingPolicy is a policies.kyverno.io ImageValidatingPolicy
// (Kind ImageValidatingPolicy, cluster-wide) or
// NamespacedImageValidatingPolicy (applies only to resources of its
// namespace), in any served version: it verifies the signatures and
// attestations of the images a resource names.
type ImageValidatingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              policiesv1alpha1.ImageValidatingPolicySpec `json:"spec"`
	Status            any                                        `json:"status,omitempty"`
}

// MutatingPolicy is a policies.kyverno.io MutatingPolicy (cluster-wide)
// or NamespacedMutatingPolicy (applies only to resources of its
// namespace), in any served version.
type MutatingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              policiesv1alpha1.MutatingPolicySpec `json:"spec"`
	Status            any                                 `json:"status,omitempty"`
}

// GeneratingPolicy is a policies.kyverno.io GeneratingPolicy or
// NamespacedGeneratingPolicy (whose triggers and downstream resources
// are in its namespace).
type GeneratingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              policiesv1alpha1.GeneratingPolicySpec `json:"spec"`
	Status            any                                   `json:"status,omitempty"`
}

// DeletingPolicy is a policies.kyverno.io DeletingPolicy or
// NamespacedDeletingPolicy (which deletes objects of its namespace only):
// on its schedule, it deletes the existing objects its matchConstraints
// select and its conditions hold for.
type DeletingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              policiesv1alpha1.DeletingPolicySpec `json:"spec"`
	Status            any                                 `json:"status,omitempty"`
}

// ValidatingAdmissionPolicy is Kubernetes' admissionregistration.k8s.io
// ValidatingAdmissionPolicy (cluster-scoped). Its bindings
// (ValidatingAdmissionPolicyBinding) select what it applies to, with which
// parameters and validation actions.
type ValidatingAdmissionPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              admissionregistrationv1.ValidatingAdmissionPolicySpec `json:"spec"`
	Status            any                                                   `json:"status,omitempty"`
}

// ValidatingAdmissionPolicyBinding binds a ValidatingAdmissionPolicy
// (spec.policyName) to resources, parameters and validation actions. It is
// a PolicyObject so that policy sets can carry it: the engine compiles it
// with the policy it names.
type ValidatingAdmissionPolicyBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec `json:"spec"`
}

// MutatingAdmissionPolicy is Kubernetes' MutatingAdmissionPolicy, in the
// version the vendored k8s.io/api serves (admissionregistration.k8s.io
// v1, and its earlier alpha and beta versions decoded alike).
type MutatingAdmissionPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              admissionregistrationv1.MutatingAdmissionPolicySpec `json:"spec"`
	Status            any                                                 `json:"status,omitempty"`
}

// MutatingAdmissionPolicyBinding binds a MutatingAdmissionPolicy.
type MutatingAdmissionPolicyBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              admissionregistrationv1.MutatingAdmissionPolicyBindingSpec `json:"spec"`
}

// CELPolicyException is a policies.kyverno.io PolicyException: it exempts
// resources from the CEL policies its policyRefs name (by name and kind)
// when all its matchConditions hold.
type CELPolicyException struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              policiesv1alpha1.PolicyExceptionSpec `json:"spec"`
}

// ExceptionReportPass is the spec.reportResult that reports an excepted
// result as a pass (the default, "skip", as a skip).
const ExceptionReportPass = "pass"
