package engine

import (
	"context"
	"errors"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/exceptions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrNotConfigured is wrapped by the Err of an error result whose rule
// needs a host dependency that the engine was not given (a configMap
// context entry without WithConfigMapResolver, an apiCall without
// WithAPIClient, ...); the message names the dependency. See
// WithUnconfiguredEntriesSkipped for the upstream CLI's behaviour.
var ErrNotConfigured = errors.New("not configured")

// ConfigMapResolver returns a ConfigMap (as a JSON-like object with
// metadata and data) for configMap context entries.
//
// A ConfigMap that does not exist is an error wrapping ErrNotFound, never
// (nil, nil): the rule is then an error result ("failed to retrieve config
// map for context entry NAME: ..."), as upstream's rule errors. Other
// errors (the API server unreachable) are reported the same way; the call
// is bounded by Limits.HostCallTimeout and the request's context. The
// returned map must not be modified afterwards (the engine reads it, never
// writes it).
type ConfigMapResolver interface {
	GetConfigMap(ctx context.Context, namespace, name string) (map[string]any, error)
}

// APIClient performs Kubernetes API calls for apiCall context entries:
// method GET or POST on an absolute URL path such as
// "/api/v1/namespaces/default/pods", returning the response body.
type APIClient interface {
	RawAbsPath(ctx context.Context, path, method string, body []byte) ([]byte, error)
}

// ServiceRequest is an apiCall to a service URL.
type ServiceRequest struct {
	URL      string
	Method   string
	CABundle string
	Headers  map[string]string
	Body     []byte
}

// ServiceCaller performs apiCall.service requests.
type ServiceCaller interface {
	Call(ctx context.Context, req ServiceRequest) ([]byte, error)
}

// RegistryClient fetches image data for imageRegistry context entries. The
// returned value has upstream's ImageData shape: image, resolvedImage,
// registry, repository, identifier, manifest, configData.
type RegistryClient interface {
	ImageData(ctx context.Context, reference string, creds *api.ImageRegistryCredentials) (map[string]any, error)
}

// NamespaceLabeler returns the labels of a namespace, for namespaceSelector
// and failure-action overrides, when a Request carries no NamespaceLabels.
// A namespace that does not exist is an error wrapping ErrNotFound.
type NamespaceLabeler interface {
	NamespaceLabels(ctx context.Context, namespace string) (map[string]string, error)
}

// GlobalContext resolves globalReference context entries.
type GlobalContext interface {
	GlobalContextEntry(ctx context.Context, name string) (any, error)
}

// ContextValues lets a host supply variables directly, as the upstream CLI
// does with values files: RuleValues returns the variables to add to a
// rule's context before its context entries are loaded (keys may be dotted
// paths such as "request.operation"; the map must not be modified).
type ContextValues interface {
	RuleValues(policy, rule string) map[string]any
}

// ExceptionSource returns the current compiled set of PolicyExceptions. A
// host compiles exceptions with exceptions.Compile when they change and
// returns the same set until then; a fixed *exceptions.Set is an
// ExceptionSource itself. exceptions.Namespaces restricts the exceptions
// to the namespaces a host trusts (upstream's exceptionNamespace
// setting), when the set is compiled.
type ExceptionSource interface {
	Exceptions(ctx context.Context) (*exceptions.Set, error)
}

// ErrNotFound is wrapped by Client errors for objects that do not exist.
var ErrNotFound = errors.New("not found")

// Client reads and writes cluster objects (JSON-like maps) for generate
// rules and mutate-existing targets.
type Client interface {
	Get(ctx context.Context, apiVersion, kind, namespace, name string) (map[string]any, error)
	List(ctx context.Context, apiVersion, kind, namespace string, selector *metav1.LabelSelector) ([]map[string]any, error)
	Create(ctx context.Context, obj map[string]any) (map[string]any, error)
	Update(ctx context.Context, obj map[string]any) (map[string]any, error)
	Delete(ctx context.Context, apiVersion, kind, namespace, name string) error
}

// UpdateRequestQueue receives the UpdateRequests of generate and
// mutate-existing rules at admission.
type UpdateRequestQueue interface {
	Enqueue(ctx context.Context, ur *api.UpdateRequest) error
}
