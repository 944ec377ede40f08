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

// resourceNames are the resource names a cluster learns from what it
// stores, by group: the CustomResourceDefinitions' plural names (which
// win) and, for the kinds of other objects, their plural as resourceFor
// makes it. They answer the API paths and the CEL resource library for
// custom kinds, whose plural the built-in table does not know: the
// "computeclasses" of a ComputeClass, or the irregular plural a CRD
// declares. The zero value is empty; the cluster's lock guards it.
type resourceNames struct {
	kinds     map[string]string // group/resource → kind
	resources map[string]string // group/kind → resource, from CRDs only
	fromCRD   map[string]bool   // group/resource keys a CRD declared
	seen      map[string]bool   // group/kind of the objects already learned
}

// learn records the names an object teaches: a CRD's plural and kind, or
// the plural of the object's own kind.
func (n *resourceNames) learn(obj map[string]any) {
	if n.kinds == nil {
		n.kinds, n.resources, n.fromCRD, n.seen = map[string]string{}, map[string]string{}, map[string]bool{}, map[string]bool{}
	}
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	group, _ := splitAPIVersion(av)
	if kind == "CustomResourceDefinition" && group == "apiextensions.k8s.io" {
		spec, _ := obj["spec"].(map[string]any)
		names, _ := spec["names"].(map[string]any)
		g, _ := spec["group"].(string)
		plural, _ := names["plural"].(string)
		k, _ := names["kind"].(string)
		if plural != "" && k != "" {
			n.kinds[g+"/"+plural] = k
			n.resources[g+"/"+k] = plural
			n.fromCRD[g+"/"+plural] = true
		}
	}
	if kind == "" || n.seen[group+"/"+kind] {
		return
	}
	n.seen[group+"/"+kind] = true
	key := group + "/" + resourceFor(kind)
	if !n.fromCRD[key] {
		n.kinds[key] = kind
	}
}

// kind returns the kind of a resource of a group (its CRD's, else the
// stored objects', else kindFor's).
func (n *resourceNames) kind(group, resource string) string {
	if k, ok := n.kinds[group+"/"+resource]; ok {
		return k
	}
	return kindFor(resource)
}

// resource returns the plural name of a kind of a group (its CRD's, else
// resourceFor's).
func (n *resourceNames) resource(group, kind string) string {
	if r, ok := n.resources[group+"/"+kind]; ok {
		return r
	}
	return resourceFor(kind)
}

// kindOf returns the kind of a resource of an API version's group, as the
// cluster's objects and CRDs name it.
func (c *Cluster) kindOf(apiVersion, resource string) string {
	group, _ := splitAPIVersion(apiVersion)
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.names.kind(group, resource)
}

// resourceOf returns the plural name of a kind of an API version's group.
func (c *Cluster) resourceOf(apiVersion, kind string) string {
	group, _ := splitAPIVersion(apiVersion)
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.names.resource(group, kind)
}
