package api

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Kinds of the cleanup policies (kyverno.io/v2, v2beta1 and v2alpha1).
const (
	KindCleanupPolicy        = "CleanupPolicy"
	KindClusterCleanupPolicy = "ClusterCleanupPolicy"
)

// cleanupVersions serve the cleanup policies: v2 and v2beta1 as upstream
// serves them now, and v2alpha1, which earlier releases served.
var cleanupVersions = map[string]bool{"kyverno.io/v2": true, "kyverno.io/v2beta1": true, "kyverno.io/v2alpha1": true}

// CleanupPolicy is a kyverno.io CleanupPolicy (namespaced: it deletes
// objects of its namespace only) or ClusterCleanupPolicy: it deletes, on
// its schedule, the existing objects its match and exclude blocks select
// and its conditions hold for.
type CleanupPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              CleanupPolicySpec `json:"spec"`
	// Status is accepted on input and ignored.
	Status any `json:"status,omitempty"`
}

// CleanupPolicySpec is the body of a cleanup policy.
type CleanupPolicySpec struct {
	// Context are variables and data sources of the conditions (a
	// configMap or imageRegistry entry is refused, as upstream).
	Context []ContextEntry `json:"context,omitempty"`
	// MatchResources selects the objects (no user information: there is
	// no request).
	MatchResources CleanupMatchResources `json:"match"`
	// ExcludeResources leaves objects out.
	ExcludeResources *CleanupMatchResources `json:"exclude,omitempty"`
	// Schedule is when the policy runs, in cron format.
	Schedule string `json:"schedule"`
	// Conditions select, among the matched objects, those to delete; the
	// object is the variable target.
	Conditions *AnyAllConditions `json:"conditions,omitempty"`
	// DeletionPropagationPolicy is how the objects are deleted
	// (Foreground, Background, Orphan); empty leaves it to the API server.
	DeletionPropagationPolicy *metav1.DeletionPropagation `json:"deletionPropagationPolicy,omitempty"`
}

// CleanupMatchResources is the match (or exclude) block of a cleanup
// policy: any and all lists of resource filters.
type CleanupMatchResources struct {
	Any ResourceFilters `json:"any,omitempty"`
	All ResourceFilters `json:"all,omitempty"`
}
