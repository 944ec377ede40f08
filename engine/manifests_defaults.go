package engine

import (
	"sync"

	"github.com/gavelpolicy/gavel/api"
)

// defaultIgnoreFields are the fields that may differ from a signed
// manifest whatever the policy says: those Kubernetes sets on every object
// or by kind (k8s-manifest-sigstore's default configuration, then
// upstream's additions), compiled once; they are never modified.
var defaultIgnoreFields = sync.OnceValue(func() []ignoreBinding {
	all := []api.ManifestObjectReference{{Kind: "*"}}
	kind := func(k ...string) []api.ManifestObjectReference {
		out := make([]api.ManifestObjectReference, len(k))
		for i := range k {
			out[i] = api.ManifestObjectReference{Kind: k[i]}
		}
		return out
	}
	bindings := []api.ObjectFieldBinding{
		// k8s-manifest-sigstore
		{Objects: all, Fields: []string{
			"metadata.annotations.cosign.sigstore.dev/resourceBundleRef",
			"metadata.annotations.cosign.sigstore.dev/signature",
			"metadata.annotations.cosign.sigstore.dev/message",
			"metadata.annotations.cosign.sigstore.dev/certificate",
			"metadata.annotations.cosign.sigstore.dev/bundle",
		}},
		{Objects: all, Fields: []string{
			"metadata.managedFields.*", "metadata.resourceVersion", "metadata.selfLink",
			"metadata.annotations.kubectl.kubernetes.io/last-applied-configuration",
			"metadata.annotations.namespace", "metadata.creationTimestamp", "metadata.generation",
			"metadata.uid", "metadata.finalizers", "metadata.labels.app.kubernetes.io/instance", "status",
		}},
		{Objects: kind("ServiceAccount"), Fields: []string{"secrets.*.name", "imagePullSecrets.*.name"}},
		{Objects: kind("Service"), Fields: []string{"spec.ports.*.nodePort", "spec.clusterIP", "spec.clusterIPs.0"}},
		{Objects: kind("Deployment"), Fields: []string{"metadata.annotations.deployment.kubernetes.io/revision"}},
		{Objects: kind("DaemonSet"), Fields: []string{"metadata.annotations.deprecated.daemonset.template.generation"}},
		{Objects: []api.ManifestObjectReference{{Kind: "Route", Group: "route.openshift.io"}}, Fields: []string{"spec.host"}},
		// upstream
		{Objects: all, Fields: []string{
			"metadata.namespace", "spec.containers.*.imagePullPolicy", "spec.containers.*.terminationMessagePath",
			"spec.containers.*.terminationMessagePolicy", "spec.dnsPolicy", "spec.restartPolicy", "spec.schedulerName",
			"spec.terminationGracePeriodSeconds", "metadata.labels.app.kubernetes.io/instance", "metadata.managedFields.*",
			"metadata.resourceVersion", "metadata.selfLink", "metadata.annotations.control-plane.alpha.kubernetes.io/leader",
			"metadata.annotations.kubectl.kubernetes.io/last-applied-configuration", "metadata.finalizers*",
			"metadata.annotations.namespace", "metadata.annotations.deprecated.daemonset.template.generation",
			"metadata.creationTimestamp", "metadata.uid", "metadata.generation", "status",
			"metadata.annotations.deployment.kubernetes.io/revision",
		}},
		{Objects: kind("Pod"), Fields: []string{
			"spec.volumes.*.name", "spec.volumes.*.projected.*", "spec.volumes.*.configMap.defaultMode",
			"spec.containers.*.volumeMounts.*", "spec.tolerations.*", "spec.enableServiceLinks", "spec.preemptionPolicy",
			"spec.priority", "spec.serviceAccount",
		}},
		{Objects: kind("Deployment"), Fields: []string{
			"spec.progressDeadlineSeconds", "spec.revisionHistoryLimit", "spec.strategy.*",
			"spec.template.metadata.creationTimestamp", "spec.containers.*.ports.*.protocol", "spec.containers.*.resources",
			"spec.securityContext",
		}},
		{Objects: kind("CustomResourceDefinition"), Fields: []string{"spec.conversion.strategy", "spec.names.listKind"}},
		{Objects: kind("Service"), Fields: []string{
			"spec.ports.*.nodePort", "spec.clusterIP", "spec.clusterIPs.0", "spec.sessionAffinity", "spec.type",
			"spec.ipFamilies.*", "spec.ipFamilyPolicy", "spec.internalTrafficPolicy",
		}},
		{Objects: kind("ClusterPolicy", "Policy"), Fields: []string{
			"metadata.annotations.pod-policies.kyverno.io/autogen-controllers", "spec.failurePolicy", "spec.background",
			"spec.validationFailureAction",
		}},
		{Objects: kind("ServiceAccount"), Fields: []string{"secrets.*.name", "imagePullSecrets.*.name"}},
	}
	out := make([]ignoreBinding, len(bindings))
	for i, b := range bindings {
		ib, err := compileIgnoreBinding(b)
		if err != nil {
			panic(err) // constant patterns; TestDefaultIgnoreFields compiles them
		}
		out[i] = ib
	}
	return out
})
