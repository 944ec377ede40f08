package match

import (
	"strings"

	"github.com/gavelpolicy/gavel/api"
)

// Resource is what matching reads from the admitted object. Build it once per
// request (ResourceFromObject) and reuse it for every rule.
//
// Group, Version and Kind are the GVK of the request (the policy context):
// for a subresource request such as Pod "exec" they name the parent resource
// (v1 Pod) and Subresource names the subresource ("exec", "status",
// "ephemeralcontainers", "scale"...), while the admitted object may be of
// another kind. Name, Namespace, Labels and Annotations come from the
// object's metadata.
type Resource struct {
	Group, Version, Kind, Subresource string
	Name, Namespace                   string
	Labels, Annotations               map[string]string
}

// ResourceFromObject reads a Resource from a JSON-like object: the GVK from
// apiVersion and kind, the rest from metadata. As upstream matches it, Name
// falls back to metadata.generateName when metadata.name is empty, and a
// labels or annotations map holding any non-string value is read as absent.
// The object is not modified; the returned maps are fresh copies.
func ResourceFromObject(obj map[string]any, subresource string) Resource {
	r := Resource{Subresource: subresource}
	if obj == nil {
		return r
	}
	if av, ok := obj["apiVersion"].(string); ok {
		r.Group, r.Version = splitAPIVersion(av)
	}
	r.Kind, _ = obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		return r
	}
	r.Name, _ = meta["name"].(string)
	if r.Name == "" {
		r.Name, _ = meta["generateName"].(string)
	}
	r.Namespace, _ = meta["namespace"].(string)
	r.Labels = stringMap(meta["labels"])
	r.Annotations = stringMap(meta["annotations"])
	return r
}

// splitAPIVersion splits "group/version" ("v1" has the empty core group).
func splitAPIVersion(av string) (group, version string) {
	if i := strings.Index(av, "/"); i >= 0 {
		return av[:i], av[i+1:]
	}
	return "", av
}

// stringMap converts a map of strings; like unstructured.NestedStringMap it
// gives nil when the value is not a map or holds a non-string value.
func stringMap(v any) map[string]string {
	switch m := v.(type) {
	case map[string]any:
		out := make(map[string]string, len(m))
		for k, val := range m {
			s, ok := val.(string)
			if !ok {
				return nil
			}
			out[k] = s
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(m))
		for k, val := range m {
			out[k] = val
		}
		return out
	default:
		return nil
	}
}

// Request is the admission side of matching.
type Request struct {
	// Operation is CREATE, UPDATE, DELETE or CONNECT. Empty means background
	// or CLI processing, which upstream runs as CREATE: an operations filter
	// then matches CREATE only.
	Operation string
	// Username and Groups identify the requesting user.
	Username string
	Groups   []string
	// Roles ("namespace:name") and ClusterRoles are the RBAC roles bound to
	// the user, as upstream computes them for the request.
	Roles, ClusterRoles []string
	// NamespaceLabels returns the labels of the resource's namespace. It is
	// called lazily, at most once per Matches call, and only when a
	// namespaceSelector must be evaluated (it may do host I/O). A nil func
	// means the namespace has no labels; an error aborts matching.
	NamespaceLabels func() (map[string]string, error)
}

// hasUserInfo reports whether the request carries any user information.
// Upstream ignores user criteria of match blocks when it has none
// (background scans, CLI without user info).
func (r *Request) hasUserInfo() bool {
	return r.Username != "" || len(r.Groups) > 0 || len(r.Roles) > 0 || len(r.ClusterRoles) > 0
}

// NamespacedPolicyApplies reports whether a policy living in policyNamespace
// may apply to the resource: a ClusterPolicy (policyNamespace "") applies
// everywhere, a namespaced Policy only to resources of its own namespace
// (never to cluster-scoped resources, Namespaces included).
func NamespacedPolicyApplies(policyNamespace string, res Resource) bool {
	return policyNamespace == "" || policyNamespace == res.Namespace
}

// Operation bits.
const (
	opCreate uint8 = 1 << iota
	opUpdate
	opDelete
	opConnect
)

func operationBit(op string) uint8 {
	switch op {
	case string(api.Create), "":
		return opCreate
	case string(api.Update):
		return opUpdate
	case string(api.Delete):
		return opDelete
	case string(api.Connect):
		return opConnect
	}
	return 0
}
