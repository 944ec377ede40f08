package cluster

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// statusShape is how the host writes whether a policy compiled.
type statusShape int

const (
	// statusNone: no status (the API server owns it); an event only
	statusNone statusShape = iota
	// statusClassic: kyverno.io's status.conditions (Ready) and status.ready
	statusClassic
	// statusCEL: policies.kyverno.io's status.conditionStatus
	// (conditions, ready, message)
	statusCEL
)

// policyKind is one kind of policy a PolicySource watches. Adding a kind
// to the cluster host is one entry of hostKinds (and the engine's
// support of the kind).
type policyKind struct {
	group, kind string
	// versions the kind may be served in, newest first: the first one the
	// cluster serves is watched (every served version holds every object)
	versions []string
	status   statusShape
	// admission is false for the kinds the API server evaluates itself
	// (ValidatingAdmissionPolicy, MutatingAdmissionPolicy, their
	// bindings): the webhooks do not serve them, the background scans
	// report on them
	admission bool
	// required kinds are watched, as this resource, whether discovery
	// shows them or not (their informers wait until the CRD is
	// installed); the others are watched when the cluster serves them at
	// start
	required *schema.GroupVersionResource
	// enabled, when set, tells whether the options turn the kind on
	enabled func(*PolicySourceOptions) bool
}

var (
	policiesVersions = []string{"v1", "v1beta1", "v1alpha1"}
	cleanupVersions  = []string{"v2", "v2beta1", "v2alpha1"}
	vapEnabled       = func(o *PolicySourceOptions) bool { return !o.NoValidatingAdmissionPolicies }
	mapEnabled       = func(o *PolicySourceOptions) bool { return o.MutatingAdmissionPolicies }
)

// hostKinds are the kinds of policy the host watches, compiles into one
// set and serves.
var hostKinds = []policyKind{
	{group: api.GroupKyverno, kind: api.KindClusterPolicy, versions: []string{"v1"}, status: statusClassic, admission: true, required: &ClusterPolicies},
	{group: api.GroupKyverno, kind: api.KindPolicy, versions: []string{"v1"}, status: statusClassic, admission: true, required: &Policies},
	{group: api.GroupPolicies, kind: api.KindValidatingPolicy, versions: policiesVersions, status: statusCEL, admission: true},
	{group: api.GroupPolicies, kind: api.KindNamespacedValidatingPolicy, versions: policiesVersions, status: statusCEL, admission: true},
	{group: api.GroupPolicies, kind: api.KindImageValidatingPolicy, versions: policiesVersions, status: statusCEL, admission: true},
	{group: api.GroupPolicies, kind: api.KindNamespacedImageValidatingPolicy, versions: policiesVersions, status: statusCEL, admission: true},
	{group: api.GroupPolicies, kind: api.KindMutatingPolicy, versions: policiesVersions, status: statusCEL, admission: true},
	{group: api.GroupPolicies, kind: api.KindNamespacedMutatingPolicy, versions: policiesVersions, status: statusCEL, admission: true},
	{group: api.GroupPolicies, kind: api.KindGeneratingPolicy, versions: policiesVersions, status: statusCEL, admission: true},
	{group: api.GroupPolicies, kind: api.KindNamespacedGeneratingPolicy, versions: policiesVersions, status: statusCEL, admission: true},
	{group: api.GroupPolicies, kind: api.KindDeletingPolicy, versions: policiesVersions, status: statusCEL},
	{group: api.GroupPolicies, kind: api.KindNamespacedDeletingPolicy, versions: policiesVersions, status: statusCEL},
	{group: api.GroupKyverno, kind: api.KindClusterCleanupPolicy, versions: cleanupVersions},
	{group: api.GroupKyverno, kind: api.KindCleanupPolicy, versions: cleanupVersions},
	{group: api.GroupAdmissionRegistration, kind: api.KindValidatingAdmissionPolicy, versions: []string{"v1"}, enabled: vapEnabled},
	{group: api.GroupAdmissionRegistration, kind: api.KindValidatingAdmissionPolicyBinding, versions: []string{"v1"}, enabled: vapEnabled},
	{group: api.GroupAdmissionRegistration, kind: api.KindMutatingAdmissionPolicy, versions: []string{"v1", "v1beta1", "v1alpha1"}, enabled: mapEnabled},
	{group: api.GroupAdmissionRegistration, kind: api.KindMutatingAdmissionPolicyBinding, versions: []string{"v1", "v1beta1", "v1alpha1"}, enabled: mapEnabled},
}

// resource returns the resource of a kind in the version the cluster
// prefers among the kind's versions.
func (k *policyKind) resource(mapper meta.RESTMapper) (schema.GroupVersionResource, error) {
	m, err := mapper.RESTMapping(schema.GroupKind{Group: k.group, Kind: k.kind}, k.versions...)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return m.Resource, nil
}

// kindOfPolicy returns the entry of a kind (nil for a kind not watched).
func kindOfPolicy(kind string) *policyKind {
	for i := range hostKinds {
		if hostKinds[i].kind == kind {
			return &hostKinds[i]
		}
	}
	return nil
}

// served returns the resource of a kind to watch: the first of its
// versions the cluster serves (the first version for a required kind the
// cluster does not serve yet); false when the kind is not watched.
func (k *policyKind) served(mapper meta.RESTMapper, opts *PolicySourceOptions) (schema.GroupVersionResource, bool) {
	if k.enabled != nil && !k.enabled(opts) {
		return schema.GroupVersionResource{}, false
	}
	if gvr, err := k.resource(mapper); err == nil {
		return gvr, true
	}
	if k.required != nil {
		return *k.required, true
	}
	return schema.GroupVersionResource{}, false
}

// policyID identifies a policy among the policies of every kind: its key
// (name, or namespace/name) for a ClusterPolicy or Policy, else the key
// prefixed by its kind and a dot ("ValidatingPolicy.name"): a
// ValidatingPolicy may have the name of a ClusterPolicy. A kind begins
// with a capital letter, a policy name never does.
func policyID(kind, key string) string {
	if kind == api.KindClusterPolicy || kind == api.KindPolicy || kind == "" {
		return key
	}
	return kind + "." + key
}

// idOf is the policyID of a compiled policy.
func idOf(p *engine.Policy) string { return policyID(api.KindOf(p.Source()), p.Key()) }

// splitID returns the kind and the key of a policy ID.
func splitID(id string) (kind, key string) {
	if id != "" && id[0] >= 'A' && id[0] <= 'Z' {
		kind, key, _ = strings.Cut(id, ".")
		return kind, key
	}
	if strings.Contains(id, "/") {
		return api.KindPolicy, id
	}
	return api.KindClusterPolicy, id
}

// admissionKind reports whether the webhooks serve the policies of a kind.
func admissionKind(kind string) bool {
	k := kindOfPolicy(kind)
	return k == nil || k.admission
}
