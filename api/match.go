package api

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// MatchResources selects resources (match) or deselects them (exclude).
// Either Any/All lists of filters or the legacy inline form (UserInfo plus
// resources) is used.
type MatchResources struct {
	Any                 ResourceFilters `json:"any,omitempty"`
	All                 ResourceFilters `json:"all,omitempty"`
	UserInfo            `json:",inline"`
	ResourceDescription `json:"resources,omitempty"`
}

// ResourceFilters is a list of ResourceFilter.
type ResourceFilters []ResourceFilter

// ResourceFilter combines user and resource criteria.
type ResourceFilter struct {
	UserInfo            `json:",inline"`
	ResourceDescription `json:"resources,omitempty"`
}

// UserInfo holds the user criteria of a filter.
type UserInfo struct {
	Roles        []string  `json:"roles,omitempty"`
	ClusterRoles []string  `json:"clusterRoles,omitempty"`
	Subjects     []Subject `json:"subjects,omitempty"`
}

// IsEmpty reports whether no user criterion is set.
func (u *UserInfo) IsEmpty() bool {
	return len(u.Roles) == 0 && len(u.ClusterRoles) == 0 && len(u.Subjects) == 0
}

// Subject is an RBAC subject: User, Group or ServiceAccount.
type Subject struct {
	Kind      string `json:"kind"`
	APIGroup  string `json:"apiGroup,omitempty"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// AdmissionOperation is CREATE, UPDATE, DELETE or CONNECT.
type AdmissionOperation string

// Admission operations.
const (
	Create  AdmissionOperation = "CREATE"
	Update  AdmissionOperation = "UPDATE"
	Delete  AdmissionOperation = "DELETE"
	Connect AdmissionOperation = "CONNECT"
)

// ResourceDescription holds the resource criteria of a filter.
type ResourceDescription struct {
	Kinds             []string              `json:"kinds,omitempty"`
	Name              string                `json:"name,omitempty"`
	Names             []string              `json:"names,omitempty"`
	Namespaces        []string              `json:"namespaces,omitempty"`
	Annotations       map[string]string     `json:"annotations,omitempty"`
	Selector          *metav1.LabelSelector `json:"selector,omitempty"`
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	Operations        []AdmissionOperation  `json:"operations,omitempty"`
}

// IsEmpty reports whether no resource criterion is set.
func (r *ResourceDescription) IsEmpty() bool {
	return len(r.Kinds) == 0 && r.Name == "" && len(r.Names) == 0 && len(r.Namespaces) == 0 &&
		len(r.Annotations) == 0 && r.Selector == nil && r.NamespaceSelector == nil && len(r.Operations) == 0
}
