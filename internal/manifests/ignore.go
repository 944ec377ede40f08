package manifests

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/gavelpolicy/gavel/api"
)

// IgnoreBinding is a compiled ignoreFields entry: the fields, as
// upstream's patterns, that may differ on the objects it selects.
type IgnoreBinding struct {
	objects []api.ManifestObjectReference
	fields  []*regexp.Regexp
}

// DefaultIgnore returns the bindings every rule ignores after its own:
// k8s-manifest-sigstore's and upstream's default lists, then the
// signature annotations of the domain.
func DefaultIgnore(domain string) ([]IgnoreBinding, error) {
	fields := make([]string, 0, 5)
	for _, base := range []string{"message", "signature", "certificate", "bundle", "resourceBundleRef"} {
		fields = append(fields, "metadata.annotations."+domain+"/"+base+"*")
	}
	ib, err := CompileIgnore(api.ObjectFieldBinding{Fields: fields, Objects: []api.ManifestObjectReference{{Kind: "*"}}})
	defaults := defaultIgnore()
	return append(defaults[:len(defaults):len(defaults)], ib), err
}

// CompileIgnore compiles an ignoreFields entry, its fields as upstream
// matches them: a field matches a difference's key that contains it as a
// regular expression, with "*" standing for ".*" (a prefix of the key in
// practice).
func CompileIgnore(b api.ObjectFieldBinding) (IgnoreBinding, error) {
	ib := IgnoreBinding{objects: b.Objects}
	var errs []error
	for _, f := range b.Fields {
		re, err := regexp.Compile(strings.ReplaceAll(f+"*", "*", ".*"))
		if err != nil {
			errs = append(errs, fmt.Errorf("field %q: %w", f, err))
			continue
		}
		ib.fields = append(ib.fields, re)
	}
	return ib, errors.Join(errs...)
}

// Ignored returns the field patterns of the bindings that select the
// object.
func Ignored(bindings []IgnoreBinding, obj map[string]any) []*regexp.Regexp {
	ref := Ref(obj)
	var out []*regexp.Regexp
	for _, b := range bindings {
		if refsMatch(b.objects, ref) {
			out = append(out, b.fields...)
		}
	}
	return out
}

// Ref is the reference of an object as ignoreFields' objects select it:
// group, version, kind, name, namespace.
func Ref(obj map[string]any) api.ManifestObjectReference {
	apiVersion, _ := obj["apiVersion"].(string)
	group, version := "", apiVersion
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		group, version = apiVersion[:i], apiVersion[i+1:]
	}
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	return api.ManifestObjectReference{Group: group, Version: version, Kind: kind, Name: name, Namespace: ns}
}

// refsMatch is upstream's ObjectReferenceList.Match: an empty list selects
// every object.
func refsMatch(refs []api.ManifestObjectReference, o api.ManifestObjectReference) bool {
	if len(refs) == 0 {
		return true
	}
	for _, r := range refs {
		if matchRefPattern(r.Group, o.Group) && matchRefPattern(r.Version, o.Version) && matchRefPattern(r.Kind, o.Kind) &&
			matchRefPattern(r.Name, o.Name) && matchRefPattern(r.Namespace, o.Namespace) {
			return true
		}
	}
	return false
}

// matchRefPattern is k8s-manifest-sigstore's MatchPattern: empty and "*"
// match anything, "-" an empty value, "x*" a prefix, "a,b" either.
func matchRefPattern(pattern, value string) bool {
	pattern = strings.TrimSpace(pattern)
	switch {
	case pattern == "", pattern == "*":
		return true
	case pattern == "-" && value == "":
		return true
	case strings.HasSuffix(pattern, "*"):
		return strings.HasPrefix(value, strings.TrimRight(pattern, "*"))
	case pattern == value:
		return true
	case strings.Contains(pattern, ","):
		for _, p := range strings.Split(pattern, ",") {
			if matchRefPattern(p, value) {
				return true
			}
		}
	}
	return false
}

// defaultIgnore are the fields that may differ from a signed
// manifest whatever the policy says: those Kubernetes sets on every object
// or by kind (k8s-manifest-sigstore's default configuration, then
// upstream's additions), compiled once; they are never modified.
var defaultIgnore = sync.OnceValue(func() []IgnoreBinding {
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
	out := make([]IgnoreBinding, len(bindings))
	for i, b := range bindings {
		ib, err := CompileIgnore(b)
		if err != nil {
			panic(err) // constant patterns; TestIgnoredFields compiles them
		}
		out[i] = ib
	}
	return out
})
