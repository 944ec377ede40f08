package migrate

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// clusterScopedKinds are the built-in kinds without a namespace.
var clusterScopedKinds = map[string]bool{"Namespace": true, "Node": true, "PersistentVolume": true,
	"StorageClass": true, "ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true,
	"PriorityClass": true, "ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true,
	"IngressClass": true, "CertificateSigningRequest": true, "RuntimeClass": true, "APIService": true,
	"CSIDriver": true, "CSINode": true, "VolumeAttachment": true, "ClusterPolicy": true}

// builtin are the group and resource of the built-in kinds (and
// Kyverno's), which a bare kind name stands for.
var builtin = map[string]struct{ group, version, resource string }{
	"Pod": {"", "v1", "pods"}, "Service": {"", "v1", "services"}, "ConfigMap": {"", "v1", "configmaps"},
	"Secret": {"", "v1", "secrets"}, "Namespace": {"", "v1", "namespaces"}, "Node": {"", "v1", "nodes"},
	"ServiceAccount": {"", "v1", "serviceaccounts"}, "PersistentVolume": {"", "v1", "persistentvolumes"},
	"PersistentVolumeClaim": {"", "v1", "persistentvolumeclaims"}, "Endpoints": {"", "v1", "endpoints"},
	"Event": {"", "v1", "events"}, "LimitRange": {"", "v1", "limitranges"},
	"ResourceQuota": {"", "v1", "resourcequotas"}, "ReplicationController": {"", "v1", "replicationcontrollers"},
	"PodTemplate": {"", "v1", "podtemplates"}, "Binding": {"", "v1", "bindings"},
	"Deployment": {"apps", "v1", "deployments"}, "DaemonSet": {"apps", "v1", "daemonsets"},
	"StatefulSet": {"apps", "v1", "statefulsets"}, "ReplicaSet": {"apps", "v1", "replicasets"},
	"ControllerRevision": {"apps", "v1", "controllerrevisions"},
	"Job":                {"batch", "v1", "jobs"}, "CronJob": {"batch", "v1", "cronjobs"},
	"Ingress": {"networking.k8s.io", "v1", "ingresses"}, "IngressClass": {"networking.k8s.io", "v1", "ingressclasses"},
	"NetworkPolicy": {"networking.k8s.io", "v1", "networkpolicies"},
	"Role":          {"rbac.authorization.k8s.io", "v1", "roles"}, "RoleBinding": {"rbac.authorization.k8s.io", "v1", "rolebindings"},
	"ClusterRole":        {"rbac.authorization.k8s.io", "v1", "clusterroles"},
	"ClusterRoleBinding": {"rbac.authorization.k8s.io", "v1", "clusterrolebindings"},
	"StorageClass":       {"storage.k8s.io", "v1", "storageclasses"}, "CSIDriver": {"storage.k8s.io", "v1", "csidrivers"},
	"VolumeAttachment":               {"storage.k8s.io", "v1", "volumeattachments"},
	"PodDisruptionBudget":            {"policy", "v1", "poddisruptionbudgets"},
	"HorizontalPodAutoscaler":        {"autoscaling", "v2", "horizontalpodautoscalers"},
	"CustomResourceDefinition":       {"apiextensions.k8s.io", "v1", "customresourcedefinitions"},
	"PriorityClass":                  {"scheduling.k8s.io", "v1", "priorityclasses"},
	"ValidatingWebhookConfiguration": {"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"},
	"MutatingWebhookConfiguration":   {"admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations"},
	"CertificateSigningRequest":      {"certificates.k8s.io", "v1", "certificatesigningrequests"},
	"Lease":                          {"coordination.k8s.io", "v1", "leases"},
	"EndpointSlice":                  {"discovery.k8s.io", "v1", "endpointslices"},
	"RuntimeClass":                   {"node.k8s.io", "v1", "runtimeclasses"},
	"APIService":                     {"apiregistration.k8s.io", "v1", "apiservices"},
	"ClusterPolicy":                  {"kyverno.io", "v1", "clusterpolicies"},
	"Policy":                         {"kyverno.io", "v1", "policies"},
	"PolicyException":                {"kyverno.io", "v2", "policyexceptions"},
	"VerticalPodAutoscaler":          {"autoscaling.k8s.io", "v1", "verticalpodautoscalers"},
}

// kindRef is one entry of a match block's kinds, read as Kyverno reads
// it: [group/][version/]Kind[/subresource], any part a wildcard.
type kindRef struct {
	group, version, kind, subresource string
	// groupGiven and versionGiven tell the parts the entry names
	groupGiven, versionGiven bool
}

// parseKind reads a kind selector.
func parseKind(s string) kindRef {
	parts := strings.Split(s, "/")
	var k kindRef
	// a last part in lower case is a subresource (Pod/exec)
	if n := len(parts); n >= 2 && parts[n-1] != "" && parts[n-1] != "*" && strings.ToLower(parts[n-1][:1]) == parts[n-1][:1] {
		k.subresource = parts[n-1]
		parts = parts[:n-1]
	}
	switch len(parts) {
	case 1:
		k.kind = parts[0]
	case 2:
		k.version, k.kind, k.versionGiven = parts[0], parts[1], true
	default:
		k.group, k.version, k.kind = strings.Join(parts[:len(parts)-2], "/"), parts[len(parts)-2], parts[len(parts)-1]
		k.groupGiven, k.versionGiven = true, true
	}
	return k
}

// resourceOf is the plural resource name of a kind: the built-in
// table's, else apimachinery's guess (what upstream's CLI guesses too).
func resourceOf(kind string) string {
	if b, ok := builtin[kind]; ok {
		return b.resource
	}
	gvr, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Kind: kind})
	return gvr.Resource
}

// resourceRule is one rule of matchConstraints: groups, versions,
// resources (with subresource) and operations.
type resourceRule struct {
	group, version, resource string
}

// ruleFor is the resource rule a kind selector stands for. Kyverno's bare
// kind matches every group and version of the kind: the rule names the
// built-in group (any group for other kinds) and every version (v1 for
// Pods, the form Pod controller generation needs).
func ruleFor(k kindRef) resourceRule {
	if k.kind == "*" {
		r := resourceRule{group: "*", version: "*", resource: "*"}
		if k.subresource != "" {
			r.resource = "*/" + k.subresource
		}
		return r
	}
	res := resourceOf(k.kind)
	r := resourceRule{group: "*", version: "*", resource: res}
	if b, ok := builtin[k.kind]; ok {
		r.group = b.group
		if k.kind == "Pod" {
			r.version = "v1"
		}
	}
	if k.groupGiven {
		r.group = k.group
	}
	if k.versionGiven {
		r.version = k.version
	}
	if k.versionGiven && !k.groupGiven {
		// version/Kind: the core group for v1, else the kind's group
		if b, ok := builtin[k.kind]; ok {
			r.group = b.group
		} else {
			r.group = "*"
		}
	}
	if k.subresource != "" {
		r.resource += "/" + k.subresource
	}
	return r
}
