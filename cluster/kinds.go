package cluster

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gavelpolicy/gavel/api"
)

// The other policy kinds a PolicySource watches when the cluster serves
// them, by group and kind (the version is the cluster's preferred one).
var optionalKinds = []schema.GroupKind{
	{Group: api.GroupPolicies, Kind: api.KindGeneratingPolicy},
	{Group: api.GroupPolicies, Kind: api.KindNamespacedGeneratingPolicy},
	{Group: api.GroupPolicies, Kind: api.KindDeletingPolicy},
	{Group: api.GroupPolicies, Kind: api.KindNamespacedDeletingPolicy},
	{Group: api.GroupKyverno, Kind: api.KindClusterCleanupPolicy},
	{Group: api.GroupKyverno, Kind: api.KindCleanupPolicy},
}

// servedKinds returns the resources of the optional policy kinds the
// cluster serves (their CustomResourceDefinitions are installed when the
// host is built): an informer on a resource that is not served would
// never sync.
func servedKinds(h *Host) []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for _, gk := range optionalKinds {
		if m, err := kindMapping(h.mapper, gk); err == nil {
			out = append(out, m.Resource)
		}
	}
	return out
}

// servedVersions are the versions of the policy groups, newest first.
var servedVersions = map[string][]string{
	api.GroupPolicies: {"v1", "v1beta1", "v1alpha1"},
	api.GroupKyverno:  {"v2", "v2beta1", "v2alpha1"},
}

// kindMapping is the mapping of a policy kind: the cluster's preferred
// version, else the newest one it serves.
func kindMapping(mapper meta.RESTMapper, gk schema.GroupKind) (*meta.RESTMapping, error) {
	m, err := mapper.RESTMapping(gk)
	if err == nil {
		return m, nil
	}
	for _, v := range servedVersions[gk.Group] {
		if m, verr := mapper.RESTMapping(gk, v); verr == nil {
			return m, nil
		}
	}
	return nil, err
}

// policyID identifies a policy among those of every kind: its key for a
// ClusterPolicy or Policy, else the key prefixed by the kind (a
// GeneratingPolicy may have the name of a ClusterPolicy). A kind begins
// with a capital letter, a policy name never does.
func policyID(kind, key string) string {
	if kind == api.KindClusterPolicy || kind == api.KindPolicy || kind == "" {
		return key
	}
	return kind + "." + key
}
