package engine

import (
	"errors"
	"fmt"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	jpcore "github.com/gavelpolicy/gavel/internal/jmespath"
	"github.com/gavelpolicy/gavel/internal/mutate"
)

// Request is what an AdmissionReview carries, or a resource in background
// mode.
type Request struct {
	// Operation is CREATE, UPDATE, DELETE or CONNECT; empty means CREATE.
	Operation api.AdmissionOperation
	// Object is the new object (nil for DELETE).
	Object map[string]any
	// OldObject is the existing object for UPDATE and DELETE.
	OldObject map[string]any
	// UserInfo is the requesting user; Roles and ClusterRoles are the RBAC
	// roles bound to that user ("namespace:name" for Roles).
	UserInfo     api.UserInfoData
	Roles        []string
	ClusterRoles []string
	// Kind of the request; defaults to the object's apiVersion and kind.
	Kind schema.GroupVersionKind
	// Resource of the request (informational, exposed as request.resource).
	Resource schema.GroupVersionResource
	// SubResource such as "status", "exec", "ephemeralcontainers".
	SubResource string
	// ResourceKind is the kind of the request's resource when it is not
	// Kind: for a subresource request, its parent's (pods/exec: v1 Pod,
	// where Kind is PodExecOptions; deployments/scale: apps/v1 Deployment,
	// where Kind is Scale). Match blocks select it, as upstream's webhooks
	// read it from discovery ("Pod/exec" selects an exec); the request
	// variable's kind stays Kind. Empty: Kind. A host with discovery sets
	// it (the cluster host does).
	ResourceKind schema.GroupVersionKind
	// Name and Namespace of the request; default to the object's.
	Name      string
	Namespace string
	DryRun    bool
	// UID of the admission request.
	UID string
	// Background marks a background scan: no admission data is available,
	// and rules of policies with background: false are not evaluated.
	Background bool
	// Controller marks a request the background controller evaluates
	// (generate.Controller, processing an UpdateRequest or a trigger,
	// downstream or policy event), not the API server: it is not an
	// admission request even when an UpdateRequestQueue is configured, so
	// Generate and Mutate queue no UpdateRequest; generate rules compute
	// their downstream resources, a DELETE is evaluated on its old object
	// (generation on deletion), and mutate-existing rules and
	// MutatingPolicies patch their targets (PatchedTargets, only those
	// that change).
	Controller bool
	// ControllerWrite marks an admission request of a write the host's
	// own background controller made (a mutate-existing target, a
	// generated resource: upstream tells them by the user its
	// --backgroundServiceAccountName names). The MutatingPolicies and
	// GeneratingPolicies whose skipBackgroundRequests is on (the default),
	// and the generate and mutate-existing rules of ClusterPolicies with
	// skipBackgroundRequests (the default), do not evaluate it, as
	// upstream's webhooks skip them: a policy's background write is not
	// undone by another policy's mutation at admission.
	ControllerWrite bool
	// NamespaceLabels are the labels of the object's namespace. When nil,
	// the engine asks its NamespaceLabeler if a rule needs them.
	NamespaceLabels map[string]string
	// NamespaceObject is the object's Namespace as the CEL policy kinds
	// (ValidatingPolicy, ValidatingAdmissionPolicy) see it:
	// namespaceObject, and the labels of namespace selectors when
	// NamespaceLabels is nil. When nil, the engine reads it through the
	// Client. ClusterPolicy and Policy rules do not read it.
	NamespaceObject map[string]any
	// Variables are extra context variables (keys may be dotted paths).
	Variables map[string]any
}

// ErrInvalidObject is wrapped by the error Validate, Mutate and Generate
// return for a request the engine cannot read: an operation other than
// CREATE, UPDATE, DELETE and CONNECT (or empty), or an object or old
// object with a number that is not valid JSON, apiVersion or kind that are
// not strings, metadata that is not an object, or no kind at all. Such a
// request is refused rather than evaluated by rules that could then not
// match it.
var ErrInvalidObject = errors.New("invalid request object")

// check rejects objects the engine cannot read. It returns the object and
// the old object in canonical form (see normalize), for newReqStateFrom,
// and whether each is a canonical tree (mutate.CanonicalTree), which
// objects decoded from JSON or YAML are: those need no normalizing.
func (r *Request) check() (object, oldObject map[string]any, canonical [2]bool, err error) {
	return r.checkMemo(nil)
}

// checkMemo is check; with memo, the walk of the object rules look at also
// fills memo for strategic merges into it (see mutate.CanonicalMemo).
func (r *Request) checkMemo(memo *mutate.Memo) (object, oldObject map[string]any, canonical [2]bool, err error) {
	switch r.Operation {
	case "", api.Create, api.Update, api.Delete, api.Connect:
	default:
		return nil, nil, canonical, fmt.Errorf("%w: unknown operation %q (CREATE, UPDATE, DELETE or CONNECT)", ErrInvalidObject, r.Operation)
	}
	// out[i] rather than pointers to the results, which would move them
	// to the heap
	var out [2]map[string]any
	for i, o := range [2]struct {
		name string
		obj  map[string]any
	}{{"object", r.Object}, {"oldObject", r.OldObject}} {
		if o.obj == nil {
			continue
		}
		var obj map[string]any
		isCanonical := false
		if memo != nil && sameMap(o.obj, r.resourceObject()) {
			isCanonical, *memo = mutate.CanonicalMemo(o.obj)
		} else {
			isCanonical = mutate.CanonicalTree(o.obj)
		}
		if isCanonical {
			// Normalize would return it as it is
			obj, canonical[i] = o.obj, true
		} else {
			n, err := jpcore.Canonical(o.obj)
			if err != nil {
				return nil, nil, canonical, fmt.Errorf("%w: request.%s: %v", ErrInvalidObject, o.name, err)
			}
			obj, _ = n.(map[string]any)
		}
		out[i] = obj
		for _, k := range [...]string{"apiVersion", "kind"} {
			if v, ok := obj[k]; ok && v != nil {
				if _, isString := v.(string); !isString {
					return nil, nil, canonical, fmt.Errorf("%w: request.%s.%s is a %T, not a string", ErrInvalidObject, o.name, k, v)
				}
			}
		}
		if v, ok := obj["metadata"]; ok && v != nil {
			if _, isMap := v.(map[string]any); !isMap {
				return nil, nil, canonical, fmt.Errorf("%w: request.%s.metadata is a %T, not an object", ErrInvalidObject, o.name, v)
			}
		}
	}
	if r.Kind.Kind == "" {
		if kind, _ := r.resourceObject()["kind"].(string); kind == "" {
			return nil, nil, canonical, fmt.Errorf("%w: no kind in the request nor in the object", ErrInvalidObject)
		}
	}
	return out[0], out[1], canonical, nil
}

func (r *Request) operation() api.AdmissionOperation {
	if r.Operation == "" {
		return api.Create
	}
	return r.Operation
}

// resourceObject returns the object rules look at: the new object, or the
// old one for DELETE.
func (r *Request) resourceObject() map[string]any {
	if r.operation() == api.Delete || r.Object == nil {
		if r.OldObject != nil {
			return r.OldObject
		}
	}
	return r.Object
}

func (r *Request) gvk(obj map[string]any) schema.GroupVersionKind {
	if r.ResourceKind.Kind != "" {
		return r.ResourceKind
	}
	if r.Kind.Kind != "" {
		return r.Kind
	}
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	g, v := splitAPIVersion(av)
	return schema.GroupVersionKind{Group: g, Version: v, Kind: kind}
}

func splitAPIVersion(av string) (group, version string) {
	if i := strings.IndexByte(av, '/'); i >= 0 {
		return av[:i], av[i+1:]
	}
	return "", av
}

// objectMeta returns the name and namespace of an object's metadata.
func objectMeta(obj map[string]any) (name, namespace string) {
	md, _ := obj["metadata"].(map[string]any)
	name, _ = md["name"].(string)
	namespace, _ = md["namespace"].(string)
	return name, namespace
}
