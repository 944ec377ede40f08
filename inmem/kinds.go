package inmem

import "strings"

// resourceKinds maps the plural resource names of built-in types to kinds.
var resourceKinds = map[string]string{
	"pods": "Pod", "services": "Service", "configmaps": "ConfigMap", "secrets": "Secret",
	"namespaces": "Namespace", "nodes": "Node", "serviceaccounts": "ServiceAccount",
	"persistentvolumes": "PersistentVolume", "persistentvolumeclaims": "PersistentVolumeClaim",
	"endpoints": "Endpoints", "events": "Event", "limitranges": "LimitRange",
	"resourcequotas": "ResourceQuota", "replicationcontrollers": "ReplicationController",
	"deployments": "Deployment", "daemonsets": "DaemonSet", "statefulsets": "StatefulSet",
	"replicasets": "ReplicaSet", "jobs": "Job", "cronjobs": "CronJob",
	"ingresses": "Ingress", "ingressclasses": "IngressClass", "networkpolicies": "NetworkPolicy",
	"roles": "Role", "rolebindings": "RoleBinding", "clusterroles": "ClusterRole",
	"clusterrolebindings": "ClusterRoleBinding", "storageclasses": "StorageClass",
	"poddisruptionbudgets": "PodDisruptionBudget", "horizontalpodautoscalers": "HorizontalPodAutoscaler",
	"customresourcedefinitions": "CustomResourceDefinition", "priorityclasses": "PriorityClass",
	"validatingwebhookconfigurations": "ValidatingWebhookConfiguration",
	"mutatingwebhookconfigurations":   "MutatingWebhookConfiguration",
	"certificatesigningrequests":      "CertificateSigningRequest",
	"policyexceptions":                "PolicyException", "clusterpolicies": "ClusterPolicy", "policies": "Policy",
	"verticalpodautoscalers": "VerticalPodAutoscaler", "leases": "Lease",
}

// kindFor returns the kind of a plural resource name: the built-in table,
// else the name singularised and capitalised.
func kindFor(resource string) string {
	if k, ok := resourceKinds[resource]; ok {
		return k
	}
	r := resource
	switch {
	case strings.HasSuffix(r, "ies"):
		r = r[:len(r)-3] + "y"
	case strings.HasSuffix(r, "ses"), strings.HasSuffix(r, "xes"):
		r = r[:len(r)-2]
	case strings.HasSuffix(r, "s"):
		r = r[:len(r)-1]
	}
	if r == "" {
		return r
	}
	return strings.ToUpper(r[:1]) + r[1:]
}

// resourceFor returns the plural resource name of a kind: the built-in
// table, else the kind in lower case made plural.
func resourceFor(kind string) string {
	for res, k := range resourceKinds {
		if k == kind {
			return res
		}
	}
	r := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(r, "y") && !strings.HasSuffix(r, "ay") && !strings.HasSuffix(r, "ey") && !strings.HasSuffix(r, "oy"):
		return r[:len(r)-1] + "ies"
	case strings.HasSuffix(r, "s"), strings.HasSuffix(r, "x"), strings.HasSuffix(r, "ch"), strings.HasSuffix(r, "sh"):
		return r + "es"
	}
	return r + "s"
}
