package api

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group and versions of the policy types.
const (
	GroupKyverno = "kyverno.io"

	KindClusterPolicy   = "ClusterPolicy"
	KindPolicy          = "Policy"
	KindPolicyException = "PolicyException"
	KindUpdateRequest   = "UpdateRequest"
)

// PolicyObject is implemented by every policy kind gavel decodes (see
// DecodePolicy): ClusterPolicy and Policy, the cleanup policies, the
// policies.kyverno.io kinds and Kubernetes' admission policies and
// bindings. KindOf gives its kind and IsNamespaced its scope.
type PolicyObject interface {
	GetName() string
	GetNamespace() string
	GetAnnotations() map[string]string
	// GetObjectKind is the embedded TypeMeta's: the kind and apiVersion
	// the policy was decoded with.
	GetObjectKind() schema.ObjectKind
}

// KindOf returns the kind of a policy (ClusterPolicy, ValidatingPolicy,
// NamespacedValidatingPolicy, ValidatingAdmissionPolicy, ...). A Go type
// that serves one kind gives that kind whatever its kind field says; one
// that serves a cluster-wide and a namespaced kind (ValidatingPolicy and
// NamespacedValidatingPolicy, ClusterCleanupPolicy and CleanupPolicy, ...)
// gives the namespaced kind when its kind field names it, the
// cluster-wide one otherwise.
func KindOf(p PolicyObject) string {
	switch p := p.(type) {
	case *ClusterPolicy:
		return KindClusterPolicy
	case *Policy:
		return KindPolicy
	case *CleanupPolicy:
		return scoped(p.Kind, KindClusterCleanupPolicy, KindCleanupPolicy)
	case *ValidatingPolicy:
		return scoped(p.Kind, KindValidatingPolicy, KindNamespacedValidatingPolicy)
	case *ImageValidatingPolicy:
		return scoped(p.Kind, KindImageValidatingPolicy, KindNamespacedImageValidatingPolicy)
	case *MutatingPolicy:
		return scoped(p.Kind, KindMutatingPolicy, KindNamespacedMutatingPolicy)
	case *GeneratingPolicy:
		return scoped(p.Kind, KindGeneratingPolicy, KindNamespacedGeneratingPolicy)
	case *DeletingPolicy:
		return scoped(p.Kind, KindDeletingPolicy, KindNamespacedDeletingPolicy)
	case *ValidatingAdmissionPolicy:
		return KindValidatingAdmissionPolicy
	case *ValidatingAdmissionPolicyBinding:
		return KindValidatingAdmissionPolicyBinding
	case *MutatingAdmissionPolicy:
		return KindMutatingAdmissionPolicy
	case *MutatingAdmissionPolicyBinding:
		return KindMutatingAdmissionPolicyBinding
	case nil:
		return ""
	}
	return p.GetObjectKind().GroupVersionKind().Kind
}

// scoped is the namespaced kind when kind names it, the cluster-wide one
// otherwise.
func scoped(kind, cluster, namespaced string) string {
	if kind == namespaced {
		return namespaced
	}
	return cluster
}

// namespacedKinds are the kinds whose policies apply only to resources
// of their own namespace.
var namespacedKinds = map[string]bool{
	KindPolicy:                          true,
	KindCleanupPolicy:                   true,
	KindNamespacedValidatingPolicy:      true,
	KindNamespacedImageValidatingPolicy: true,
	KindNamespacedMutatingPolicy:        true,
	KindNamespacedGeneratingPolicy:      true,
	KindNamespacedDeletingPolicy:        true,
}

// IsNamespaced reports whether the policy is of a namespaced kind
// (Policy, CleanupPolicy, NamespacedValidatingPolicy, ...): it applies
// only to resources of its namespace.
func IsNamespaced(p PolicyObject) bool { return namespacedKinds[KindOf(p)] }

// ClassicPolicy is a policy of rules: a ClusterPolicy or a Policy.
type ClassicPolicy interface {
	PolicyObject
	// GetSpec returns the policy's spec; callers must not modify it.
	GetSpec() *Spec
}

// ClusterPolicy is a cluster-wide policy (kind ClusterPolicy).
type ClusterPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Spec          `json:"spec"`
	Status            *PolicyStatus `json:"status,omitempty"`
}

// Policy is a namespaced policy (kind Policy): it applies only to resources
// in its own namespace.
type Policy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Spec          `json:"spec"`
	Status            *PolicyStatus `json:"status,omitempty"`
}

// PolicyStatus is accepted on input for compatibility and otherwise ignored.
type PolicyStatus struct {
	Ready      *bool              `json:"ready,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	Autogen    any                `json:"autogen,omitempty"`
	RuleCount  any                `json:"rulecount,omitempty"`
	Validating any                `json:"validatingadmissionpolicy,omitempty"`
}

// GetSpec implements PolicyObject.
func (p *ClusterPolicy) GetSpec() *Spec { return &p.Spec }

// GetSpec implements PolicyObject.
func (p *Policy) GetSpec() *Spec { return &p.Spec }

// ValidationFailureAction is Audit or Enforce (upstream also accepts the
// lower-case spellings).
type ValidationFailureAction string

// Failure actions.
const (
	Audit   ValidationFailureAction = "Audit"
	Enforce ValidationFailureAction = "Enforce"
)

// IsEnforce reports whether the action blocks (Enforce, case-insensitive).
func (a ValidationFailureAction) IsEnforce() bool {
	return strings.EqualFold(string(a), string(Enforce))
}

// ValidationFailureActionOverride overrides the failure action by namespace.
type ValidationFailureActionOverride struct {
	Action            ValidationFailureAction `json:"action,omitempty"`
	Namespaces        []string                `json:"namespaces,omitempty"`
	NamespaceSelector *metav1.LabelSelector   `json:"namespaceSelector,omitempty"`
}

// ApplyRulesType is All or One.
type ApplyRulesType string

// ApplyRules values.
const (
	ApplyAll ApplyRulesType = "All"
	ApplyOne ApplyRulesType = "One"
)

// FailurePolicyType says how an admission webhook treats a policy's
// errors: Fail (deny the request) or Ignore (admit it).
type FailurePolicyType string

// Failure policies.
const (
	Fail   FailurePolicyType = "Fail"
	Ignore FailurePolicyType = "Ignore"
)

// WebhookConfiguration holds admission-webhook settings; gavel accepts and
// exposes them but a host decides what to do with them.
type WebhookConfiguration struct {
	FailurePolicy   *FailurePolicyType `json:"failurePolicy,omitempty"`
	TimeoutSeconds  *int32             `json:"timeoutSeconds,omitempty"`
	MatchConditions []MatchCondition   `json:"matchConditions,omitempty"`
}

// MatchCondition is a CEL match condition of a webhook configuration.
type MatchCondition struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}

// Spec is the body of a ClusterPolicy or Policy.
type Spec struct {
	Rules                            []Rule                            `json:"rules,omitempty"`
	ApplyRules                       *ApplyRulesType                   `json:"applyRules,omitempty"`
	FailurePolicy                    *FailurePolicyType                `json:"failurePolicy,omitempty"`
	ValidationFailureAction          ValidationFailureAction           `json:"validationFailureAction,omitempty"`
	ValidationFailureActionOverrides []ValidationFailureActionOverride `json:"validationFailureActionOverrides,omitempty"`
	EmitWarning                      *bool                             `json:"emitWarning,omitempty"`
	AuditWarning                     *bool                             `json:"auditWarning,omitempty"`
	Admission                        *bool                             `json:"admission,omitempty"`
	Background                       *bool                             `json:"background,omitempty"`
	SchemaValidation                 *bool                             `json:"schemaValidation,omitempty"`
	WebhookTimeoutSeconds            *int32                            `json:"webhookTimeoutSeconds,omitempty"`
	MutateExistingOnPolicyUpdate     bool                              `json:"mutateExistingOnPolicyUpdate,omitempty"`
	GenerateExistingOnPolicyUpdate   *bool                             `json:"generateExistingOnPolicyUpdate,omitempty"`
	GenerateExisting                 bool                              `json:"generateExisting,omitempty"`
	UseServerSideApply               bool                              `json:"useServerSideApply,omitempty"`
	WebhookConfiguration             *WebhookConfiguration             `json:"webhookConfiguration,omitempty"`
}

// BackgroundEnabled reports whether background processing is on (default true).
func (s *Spec) BackgroundEnabled() bool { return s.Background == nil || *s.Background }

// AdmissionEnabled reports whether admission processing is on (default true).
func (s *Spec) AdmissionEnabled() bool { return s.Admission == nil || *s.Admission }

// GetApplyRules returns All unless One is set.
func (s *Spec) GetApplyRules() ApplyRulesType {
	if s.ApplyRules == nil {
		return ApplyAll
	}
	return *s.ApplyRules
}

// Rule is one validate, mutate, generate or verifyImages rule.
type Rule struct {
	Name                   string                            `json:"name,omitempty"`
	Context                []ContextEntry                    `json:"context,omitempty"`
	MatchResources         MatchResources                    `json:"match,omitempty"`
	ExcludeResources       *MatchResources                   `json:"exclude,omitempty"`
	ImageExtractors        map[string][]ImageExtractorConfig `json:"imageExtractors,omitempty"`
	Preconditions          any                               `json:"preconditions,omitempty"`
	CELPreconditions       []MatchCondition                  `json:"celPreconditions,omitempty"`
	Mutation               *Mutation                         `json:"mutate,omitempty"`
	Validation             *Validation                       `json:"validate,omitempty"`
	Generation             *Generation                       `json:"generate,omitempty"`
	VerifyImages           []ImageVerification               `json:"verifyImages,omitempty"`
	SkipBackgroundRequests *bool                             `json:"skipBackgroundRequests,omitempty"`
	ReportProperties       map[string]string                 `json:"reportProperties,omitempty"`
}

// ImageExtractorConfig tells where images are found in a custom resource.
type ImageExtractorConfig struct {
	Path     string `json:"path"`
	Value    string `json:"value,omitempty"`
	Name     string `json:"name,omitempty"`
	Key      string `json:"key,omitempty"`
	JMESPath string `json:"jmesPath,omitempty"`
}
