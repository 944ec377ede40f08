package api

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// PolicyException (kyverno.io/v2 or v2beta1, namespaced) lets matching
// resources past the named policies and rules.
type PolicyException struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PolicyExceptionSpec `json:"spec"`
}

// PolicyExceptionSpec is the body of a PolicyException.
type PolicyExceptionSpec struct {
	Background  *bool                 `json:"background,omitempty"`
	Match       MatchResources        `json:"match"`
	Exclude     *MatchResources       `json:"exclude,omitempty"`
	Conditions  *AnyAllConditions     `json:"conditions,omitempty"`
	Exceptions  []Exception           `json:"exceptions"`
	PodSecurity []PodSecurityStandard `json:"podSecurity,omitempty"`
}

// BackgroundEnabled reports whether the exception applies to background
// processing (default true).
func (s *PolicyExceptionSpec) BackgroundEnabled() bool { return s.Background == nil || *s.Background }

// Exception names a policy and some of its rules.
type Exception struct {
	// PolicyName is a ClusterPolicy name or "<namespace>/<name>" for a Policy.
	PolicyName string `json:"policyName"`
	// RuleNames may use the wildcards * and ?.
	RuleNames []string `json:"ruleNames"`
}
