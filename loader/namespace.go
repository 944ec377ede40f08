package loader

import "strings"

// clusterScoped are the cluster-scoped kinds of Kubernetes' built-in API
// groups ("group/Kind"), the table of API resources the upstream CLI
// carries. Kinds of other groups are namespaced unless a CRD says
// otherwise.
var clusterScoped = map[string]bool{
	"/ComponentStatus": true, "/Namespace": true, "/Node": true, "/PersistentVolume": true,
	"admissionregistration.k8s.io/MutatingWebhookConfiguration":     true,
	"admissionregistration.k8s.io/ValidatingAdmissionPolicy":        true,
	"admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding": true,
	"admissionregistration.k8s.io/ValidatingWebhookConfiguration":   true,
	"apiextensions.k8s.io/CustomResourceDefinition":                 true,
	"apiregistration.k8s.io/APIService":                             true,
	"authentication.k8s.io/SelfSubjectReview":                       true,
	"authentication.k8s.io/TokenReview":                             true,
	"authorization.k8s.io/SelfSubjectAccessReview":                  true,
	"authorization.k8s.io/SelfSubjectRulesReview":                   true,
	"authorization.k8s.io/SubjectAccessReview":                      true,
	"certificates.k8s.io/CertificateSigningRequest":                 true,
	"flowcontrol.apiserver.k8s.io/FlowSchema":                       true,
	"flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration":       true,
	"networking.k8s.io/IPAddress":                                   true,
	"networking.k8s.io/IngressClass":                                true,
	"networking.k8s.io/ServiceCIDR":                                 true,
	"node.k8s.io/RuntimeClass":                                      true,
	"rbac.authorization.k8s.io/ClusterRole":                         true,
	"rbac.authorization.k8s.io/ClusterRoleBinding":                  true,
	"resource.k8s.io/DeviceClass":                                   true,
	"resource.k8s.io/ResourceSlice":                                 true,
	"scheduling.k8s.io/PriorityClass":                               true,
	"storage.k8s.io/CSIDriver":                                      true,
	"storage.k8s.io/CSINode":                                        true,
	"storage.k8s.io/StorageClass":                                   true,
	"storage.k8s.io/VolumeAttachment":                               true,
	"storage.k8s.io/VolumeAttributesClass":                          true,
}

// Namespacer gives resources read from files without a namespace the
// namespace "default", as the upstream CLI loads them (apply and test),
// unless their kind is cluster-scoped: a built-in cluster-scoped kind of
// Kubernetes, or the kind of a cluster-scoped CustomResourceDefinition it
// was given. Other kinds, custom kinds without a CRD included, are taken
// for namespaced, as upstream takes them. It is safe for concurrent use.
type Namespacer struct {
	crds map[string]bool
}

// NewNamespacer returns a Namespacer that knows the scope of the custom
// kinds of crds (CustomResourceDefinition objects).
func NewNamespacer(crds ...map[string]any) *Namespacer {
	n := &Namespacer{crds: map[string]bool{}}
	for _, crd := range crds {
		spec, _ := crd["spec"].(map[string]any)
		names, _ := spec["names"].(map[string]any)
		group, _ := spec["group"].(string)
		kind, _ := names["kind"].(string)
		scope, _ := spec["scope"].(string)
		if kind != "" {
			n.crds[group+"/"+kind] = scope == "Cluster"
		}
	}
	return n
}

// Default sets the object's metadata.namespace to "default" when it has
// none and its kind is namespaced.
func (n *Namespacer) Default(obj map[string]any) {
	md, _ := obj["metadata"].(map[string]any)
	if ns, _ := md["namespace"].(string); ns != "" {
		return
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	group := ""
	if i := strings.IndexByte(apiVersion, '/'); i >= 0 {
		group = apiVersion[:i]
	}
	key := group + "/" + kind
	if clusterScoped[key] || n.crds[key] {
		return
	}
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	md["namespace"] = "default"
}
