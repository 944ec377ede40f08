package api

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// UpdateRequestType says which kind of rule queued the request.
type UpdateRequestType string

// Update request types.
const (
	URMutate   UpdateRequestType = "mutate"
	URGenerate UpdateRequestType = "generate"
	// URCELGenerate is a GeneratingPolicy's (upstream's CELGenerate).
	URCELGenerate UpdateRequestType = "cel-generate"
)

// UpdateRequestState is the lifecycle state of an UpdateRequest.
type UpdateRequestState string

// Update request states.
const (
	URPending   UpdateRequestState = "Pending"
	URFailed    UpdateRequestState = "Failed"
	URCompleted UpdateRequestState = "Completed"
	URSkip      UpdateRequestState = "Skip"
)

// UpdateRequest (kyverno.io/v2) queues a generate or mutate-existing
// request for the background controller.
type UpdateRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              UpdateRequestSpec   `json:"spec"`
	Status            UpdateRequestStatus `json:"status,omitempty"`
}

// UpdateRequestSpec describes the work.
type UpdateRequestSpec struct {
	Type UpdateRequestType `json:"requestType,omitempty"`
	// Policy is "<name>" or "<namespace>/<name>".
	Policy string `json:"policy"`
	// Rule is the rule name (deprecated upstream in favour of RuleContext).
	Rule             string               `json:"rule,omitempty"`
	Resource         ResourceSpec         `json:"resource,omitempty"`
	RuleContext      []RuleContext        `json:"ruleContext,omitempty"`
	DeleteDownstream bool                 `json:"deleteDownstream,omitempty"`
	Synchronize      *bool                `json:"synchronize,omitempty"`
	Context          UpdateRequestContext `json:"context,omitempty"`
}

// RuleContext is one rule of an UpdateRequest with its trigger.
type RuleContext struct {
	Rule             string       `json:"rule"`
	Trigger          ResourceSpec `json:"trigger"`
	DeleteDownstream bool         `json:"deleteDownstream"`
	Synchronize      bool         `json:"synchronize,omitempty"`
	CacheRestore     bool         `json:"cacheRestore,omitempty"`
}

// UpdateRequestContext carries the admission data of the triggering request.
type UpdateRequestContext struct {
	UserRequestInfo      RequestInfo          `json:"userInfo,omitempty"`
	AdmissionRequestInfo AdmissionRequestInfo `json:"admissionRequestInfo,omitempty"`
}

// RequestInfo is the requesting user with roles.
type RequestInfo struct {
	Roles             []string     `json:"roles,omitempty"`
	ClusterRoles      []string     `json:"clusterRoles,omitempty"`
	AdmissionUserInfo UserInfoData `json:"userInfo,omitempty"`
}

// UserInfoData is the authenticated user of a request
// (authentication.k8s.io/v1 UserInfo).
type UserInfoData struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// AdmissionRequestInfo is the admission request that triggered the work.
type AdmissionRequestInfo struct {
	AdmissionRequest any                `json:"admissionRequest,omitempty"`
	Operation        AdmissionOperation `json:"operation,omitempty"`
}

// UpdateRequestStatus records progress.
type UpdateRequestStatus struct {
	State   UpdateRequestState `json:"state"`
	Message string             `json:"message,omitempty"`
	// GeneratedResources lists what the request created or updated.
	GeneratedResources []ResourceSpec `json:"generatedResources,omitempty"`
	RetryCount         int            `json:"retryCount,omitempty"`
}
