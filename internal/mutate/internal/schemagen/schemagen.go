// Package schemagen computes, by reflection on the types of k8s.io/api, the
// strategic-merge schema of the built-in kinds that package mutate uses
// (patch strategies, merge keys, and the shapes of maps and lists), and
// encodes it as the text table that mutate compiles in (zz_schema_table.go,
// written by mutate's TestSchemaTable -update, which go generate runs).
// Only mutate's tests import it, so the binaries that use mutate link no
// k8s.io/api package for it.
package schemagen

import (
	"encoding/json"
	"reflect"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	batchv1beta1 "k8s.io/api/batch/v1beta1"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	discoveryv1beta1 "k8s.io/api/discovery/v1beta1"
	eventsv1 "k8s.io/api/events/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	extensionsv1beta1 "k8s.io/api/extensions/v1beta1"
	flowcontrolv1beta1 "k8s.io/api/flowcontrol/v1beta1"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	nodev1 "k8s.io/api/node/v1"
	nodev1alpha1 "k8s.io/api/node/v1alpha1"
	nodev1beta1 "k8s.io/api/node/v1beta1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1alpha1 "k8s.io/api/rbac/v1alpha1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	storagev1alpha1 "k8s.io/api/storage/v1alpha1"
	storagev1beta1 "k8s.io/api/storage/v1beta1"
)

// Node is the schema of a JSON value: object properties (Props, nil for
// leaves), map values (Additional), or array items (Items, when Array) with,
// on list properties, the patch strategy and merge keys.
type Node struct {
	Props      map[string]*Node
	Additional *Node
	Items      *Node
	Array      bool
	Strategy   string
	Keys       []string
}

// gvkTypes lists the kinds of kyaml's built-in Kubernetes 1.21 OpenAPI schema
// that k8s.io/api still provides. Kinds missing here are treated like custom
// resources: no schema, lists are replaced.
func gvkTypes() map[string]any {
	return map[string]any{
		"v1/Binding":                 corev1.Binding{},
		"v1/ComponentStatus":         corev1.ComponentStatus{},
		"v1/ConfigMap":               corev1.ConfigMap{},
		"v1/Endpoints":               corev1.Endpoints{},
		"v1/Event":                   corev1.Event{},
		"v1/LimitRange":              corev1.LimitRange{},
		"v1/Namespace":               corev1.Namespace{},
		"v1/Node":                    corev1.Node{},
		"v1/PersistentVolume":        corev1.PersistentVolume{},
		"v1/PersistentVolumeClaim":   corev1.PersistentVolumeClaim{},
		"v1/Pod":                     corev1.Pod{},
		"v1/PodTemplate":             corev1.PodTemplate{},
		"v1/ReplicationController":   corev1.ReplicationController{},
		"v1/ResourceQuota":           corev1.ResourceQuota{},
		"v1/Secret":                  corev1.Secret{},
		"v1/Service":                 corev1.Service{},
		"v1/ServiceAccount":          corev1.ServiceAccount{},
		"apps/v1/ControllerRevision": appsv1.ControllerRevision{},
		"apps/v1/DaemonSet":          appsv1.DaemonSet{},
		"apps/v1/Deployment":         appsv1.Deployment{},
		"apps/v1/ReplicaSet":         appsv1.ReplicaSet{},
		"apps/v1/StatefulSet":        appsv1.StatefulSet{},
		"admissionregistration.k8s.io/v1/MutatingWebhookConfiguration":        admissionregistrationv1.MutatingWebhookConfiguration{},
		"admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration":      admissionregistrationv1.ValidatingWebhookConfiguration{},
		"admissionregistration.k8s.io/v1beta1/MutatingWebhookConfiguration":   admissionregistrationv1beta1.MutatingWebhookConfiguration{},
		"admissionregistration.k8s.io/v1beta1/ValidatingWebhookConfiguration": admissionregistrationv1beta1.ValidatingWebhookConfiguration{},
		"internal.apiserver.k8s.io/v1alpha1/StorageVersion":                   apiserverinternalv1alpha1.StorageVersion{},
		"autoscaling/v1/HorizontalPodAutoscaler":                              autoscalingv1.HorizontalPodAutoscaler{},
		"autoscaling/v1/Scale":                                                autoscalingv1.Scale{},
		"batch/v1/CronJob":                                                    batchv1.CronJob{},
		"batch/v1/Job":                                                        batchv1.Job{},
		"batch/v1beta1/CronJob":                                               batchv1beta1.CronJob{},
		"certificates.k8s.io/v1/CertificateSigningRequest":                    certificatesv1.CertificateSigningRequest{},
		"certificates.k8s.io/v1beta1/CertificateSigningRequest":               certificatesv1beta1.CertificateSigningRequest{},
		"coordination.k8s.io/v1/Lease":                                        coordinationv1.Lease{},
		"coordination.k8s.io/v1beta1/Lease":                                   coordinationv1beta1.Lease{},
		"discovery.k8s.io/v1/EndpointSlice":                                   discoveryv1.EndpointSlice{},
		"discovery.k8s.io/v1beta1/EndpointSlice":                              discoveryv1beta1.EndpointSlice{},
		"events.k8s.io/v1/Event":                                              eventsv1.Event{},
		"events.k8s.io/v1beta1/Event":                                         eventsv1beta1.Event{},
		"extensions/v1beta1/Ingress":                                          extensionsv1beta1.Ingress{},
		"flowcontrol.apiserver.k8s.io/v1beta1/FlowSchema":                     flowcontrolv1beta1.FlowSchema{},
		"flowcontrol.apiserver.k8s.io/v1beta1/PriorityLevelConfiguration":     flowcontrolv1beta1.PriorityLevelConfiguration{},
		"networking.k8s.io/v1/Ingress":                                        networkingv1.Ingress{},
		"networking.k8s.io/v1/IngressClass":                                   networkingv1.IngressClass{},
		"networking.k8s.io/v1/NetworkPolicy":                                  networkingv1.NetworkPolicy{},
		"networking.k8s.io/v1beta1/Ingress":                                   networkingv1beta1.Ingress{},
		"networking.k8s.io/v1beta1/IngressClass":                              networkingv1beta1.IngressClass{},
		"node.k8s.io/v1/RuntimeClass":                                         nodev1.RuntimeClass{},
		"node.k8s.io/v1alpha1/RuntimeClass":                                   nodev1alpha1.RuntimeClass{},
		"node.k8s.io/v1beta1/RuntimeClass":                                    nodev1beta1.RuntimeClass{},
		"policy/v1/Eviction":                                                  policyv1.Eviction{},
		"policy/v1/PodDisruptionBudget":                                       policyv1.PodDisruptionBudget{},
		"policy/v1beta1/Eviction":                                             policyv1beta1.Eviction{},
		"policy/v1beta1/PodDisruptionBudget":                                  policyv1beta1.PodDisruptionBudget{},
		"rbac.authorization.k8s.io/v1/ClusterRole":                            rbacv1.ClusterRole{},
		"rbac.authorization.k8s.io/v1/ClusterRoleBinding":                     rbacv1.ClusterRoleBinding{},
		"rbac.authorization.k8s.io/v1/Role":                                   rbacv1.Role{},
		"rbac.authorization.k8s.io/v1/RoleBinding":                            rbacv1.RoleBinding{},
		"rbac.authorization.k8s.io/v1alpha1/ClusterRole":                      rbacv1alpha1.ClusterRole{},
		"rbac.authorization.k8s.io/v1alpha1/ClusterRoleBinding":               rbacv1alpha1.ClusterRoleBinding{},
		"rbac.authorization.k8s.io/v1alpha1/Role":                             rbacv1alpha1.Role{},
		"rbac.authorization.k8s.io/v1alpha1/RoleBinding":                      rbacv1alpha1.RoleBinding{},
		"rbac.authorization.k8s.io/v1beta1/ClusterRole":                       rbacv1beta1.ClusterRole{},
		"rbac.authorization.k8s.io/v1beta1/ClusterRoleBinding":                rbacv1beta1.ClusterRoleBinding{},
		"rbac.authorization.k8s.io/v1beta1/Role":                              rbacv1beta1.Role{},
		"rbac.authorization.k8s.io/v1beta1/RoleBinding":                       rbacv1beta1.RoleBinding{},
		"scheduling.k8s.io/v1/PriorityClass":                                  schedulingv1.PriorityClass{},
		"scheduling.k8s.io/v1beta1/PriorityClass":                             schedulingv1beta1.PriorityClass{},
		"storage.k8s.io/v1/CSIDriver":                                         storagev1.CSIDriver{},
		"storage.k8s.io/v1/CSINode":                                           storagev1.CSINode{},
		"storage.k8s.io/v1/StorageClass":                                      storagev1.StorageClass{},
		"storage.k8s.io/v1/VolumeAttachment":                                  storagev1.VolumeAttachment{},
		"storage.k8s.io/v1alpha1/CSIStorageCapacity":                          storagev1alpha1.CSIStorageCapacity{},
		"storage.k8s.io/v1alpha1/VolumeAttachment":                            storagev1alpha1.VolumeAttachment{},
		"storage.k8s.io/v1beta1/CSIDriver":                                    storagev1beta1.CSIDriver{},
		"storage.k8s.io/v1beta1/CSINode":                                      storagev1beta1.CSINode{},
		"storage.k8s.io/v1beta1/CSIStorageCapacity":                           storagev1beta1.CSIStorageCapacity{},
		"storage.k8s.io/v1beta1/StorageClass":                                 storagev1beta1.StorageClass{},
		"storage.k8s.io/v1beta1/VolumeAttachment":                             storagev1beta1.VolumeAttachment{},
	}
}

// fieldKey identifies a field of a Go API type.
type fieldKey struct {
	t    reflect.Type
	name string
}

// listMapKeys holds the "x-kubernetes-list-map-keys" of the merge lists of
// the 1.21 schema whose map keys differ from their single patch merge key.
// kyaml prefers them to the patch merge key.
func listMapKeys() map[fieldKey][]string {
	return map[fieldKey][]string{
		{reflect.TypeFor[corev1.Container](), "ports"}:                {"containerPort", "protocol"},
		{reflect.TypeFor[corev1.EphemeralContainerCommon](), "ports"}: {"containerPort", "protocol"},
		{reflect.TypeFor[corev1.ServiceSpec](), "ports"}:              {"port", "protocol"},
		{reflect.TypeFor[corev1.PodSpec](), "topologySpreadConstraints"}: {
			"topologyKey", "whenUnsatisfiable",
		},
	}
}

// prunedFields are fields of k8s.io/api that the 1.21 schema does not have
// and that carry (or contain) merge lists; they are left without schema so
// that their lists are replaced, as kyaml does.
func prunedFields() map[fieldKey]bool {
	return map[fieldKey]bool{
		{reflect.TypeFor[corev1.PodSpec](), "schedulingGates"}:                                 true,
		{reflect.TypeFor[corev1.PodSpec](), "resourceClaims"}:                                  true,
		{reflect.TypeFor[corev1.PodSpec](), "evictionResponders"}:                              true,
		{reflect.TypeFor[corev1.PodStatus](), "hostIPs"}:                                       true,
		{reflect.TypeFor[corev1.PodStatus](), "resourceClaimStatuses"}:                         true,
		{reflect.TypeFor[corev1.PodStatus](), "nodeAllocatableResourceClaimStatuses"}:          true,
		{reflect.TypeFor[corev1.PodStatus](), "volumeHealth"}:                                  true,
		{reflect.TypeFor[corev1.ContainerStatus](), "volumeMounts"}:                            true,
		{reflect.TypeFor[corev1.ContainerStatus](), "allocatedResourcesStatus"}:                true,
		{reflect.TypeFor[corev1.PersistentVolumeClaimStatus](), "healthStatus"}:                true,
		{reflect.TypeFor[batchv1.JobSpec](), "scheduling"}:                                     true,
		{reflect.TypeFor[storagev1.CSINode](), "status"}:                                       true,
		{reflect.TypeFor[storagev1beta1.CSINode](), "status"}:                                  true,
		{reflect.TypeFor[admissionregistrationv1.ValidatingWebhook](), "matchConditions"}:      true,
		{reflect.TypeFor[admissionregistrationv1.MutatingWebhook](), "matchConditions"}:        true,
		{reflect.TypeFor[admissionregistrationv1beta1.ValidatingWebhook](), "matchConditions"}: true,
		{reflect.TypeFor[admissionregistrationv1beta1.MutatingWebhook](), "matchConditions"}:   true,
	}
}

// Build returns the schema of every kind, by "apiVersion/kind". Nodes of one
// Go struct type are shared; leaves are one node.
func Build() map[string]*Node {
	b := &schemaBuilder{
		memo:     map[reflect.Type]*Node{},
		mapKeys:  listMapKeys(),
		pruned:   prunedFields(),
		leafNode: &Node{},
	}
	idx := map[string]*Node{}
	for gvk, v := range gvkTypes() {
		idx[gvk] = b.typeNode(reflect.TypeOf(v))
	}
	return idx
}

type schemaBuilder struct {
	memo     map[reflect.Type]*Node
	mapKeys  map[fieldKey][]string
	pruned   map[fieldKey]bool
	leafNode *Node
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// typeNode returns the schema of a Go API type.
func (b *schemaBuilder) typeNode(t reflect.Type) *Node {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		// Time, Quantity, IntOrString, RawExtension...: no properties.
		return b.leafNode
	}
	switch t.Kind() {
	case reflect.Struct:
		if n, ok := b.memo[t]; ok {
			return n
		}
		n := &Node{Props: map[string]*Node{}}
		b.memo[t] = n
		b.addFields(n, t)
		return n
	case reflect.Map:
		return &Node{Additional: b.typeNode(t.Elem())}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return b.leafNode // []byte is a base64 string
		}
		return &Node{Array: true, Items: b.typeNode(t.Elem())}
	}
	return b.leafNode
}

// addFields adds the JSON properties of struct t (inlined structs
// flattened) to n.
func (b *schemaBuilder) addFields(n *Node, t reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" {
			continue
		}
		if f.Anonymous && (name == "" || strings.Contains(","+opts+",", ",inline,")) {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				b.addFields(n, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if b.pruned[fieldKey{t, name}] {
			continue
		}
		n.Props[name] = b.fieldNode(t, f, name)
	}
}

// fieldNode returns the property schema of a struct field: list properties
// carry the patch strategy and merge keys of the field's tags.
func (b *schemaBuilder) fieldNode(owner reflect.Type, f reflect.StructField, name string) *Node {
	ft := f.Type
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	if (ft.Kind() != reflect.Slice && ft.Kind() != reflect.Array) || ft.Elem().Kind() == reflect.Uint8 {
		return b.typeNode(ft)
	}
	n := &Node{Array: true, Items: b.typeNode(ft.Elem()), Strategy: f.Tag.Get("patchStrategy")}
	if n.Strategy == "" {
		return n
	}
	if keys, ok := b.mapKeys[fieldKey{owner, name}]; ok {
		n.Keys = keys
	} else if mk := f.Tag.Get("patchMergeKey"); mk != "" {
		n.Keys = []string{mk}
	}
	return n
}
