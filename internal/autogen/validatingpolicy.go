package autogen

import (
	"bytes"
	"encoding/json"
	"fmt"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	"sort"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// Target is a Pod controller a ValidatingPolicy variant applies to.
type Target struct {
	Group, Version, Resource, Kind string
}

// Variant is a ValidatingPolicy generated for Pod controllers: the
// policy's spec with matchConstraints naming the controllers and every
// object.spec and object.metadata path (and oldObject's) moved to the Pod
// template, as upstream's vpol autogen builds it.
type Variant struct {
	// Config is upstream's name of the variant: "defaults" (the
	// controllers with a template at spec.template) or "cronjobs".
	Config string
	// Targets are the controllers, sorted.
	Targets []Target
	// Spec is the generated spec.
	Spec *policiesv1alpha1.ValidatingPolicySpec
}

// Variants configurations.
const (
	ConfigDefaults = "defaults"
	ConfigCronJobs = "cronjobs"
)

// celControllers are the controllers of ValidatingPolicy autogen by the
// name spec.autogen.podControllers.controllers gives them (lower-case
// plurals; other names are ignored, as upstream ignores them).
var celControllers = map[string]struct {
	target Target
	config string
}{
	"daemonsets":   {Target{"apps", "v1", "daemonsets", "DaemonSet"}, ConfigDefaults},
	"deployments":  {Target{"apps", "v1", "deployments", "Deployment"}, ConfigDefaults},
	"replicasets":  {Target{"apps", "v1", "replicasets", "ReplicaSet"}, ConfigDefaults},
	"statefulsets": {Target{"apps", "v1", "statefulsets", "StatefulSet"}, ConfigDefaults},
	"jobs":         {Target{"batch", "v1", "jobs", "Job"}, ConfigDefaults},
	"cronjobs":     {Target{"batch", "v1", "cronjobs", "CronJob"}, ConfigCronJobs},
}

// celReplacements are the path rewrites of each configuration.
var celReplacements = map[string][][2]string{
	ConfigDefaults: {{"spec", "spec.template.spec"}, {"metadata", "spec.template.metadata"}},
	ConfigCronJobs: {{"spec", "spec.jobTemplate.spec.template.spec"}, {"metadata", "spec.jobTemplate.spec.template.metadata"}},
}

// CanGenerate reports whether a ValidatingPolicy's matchConstraints allow
// Pod controller variants, as upstream decides: exactly one resource rule,
// for core v1 pods, without resource names, exclusions or an object
// selector with requirements.
func CanGenerate(m *admissionregistrationv1.MatchResources) bool {
	if m == nil {
		return false
	}
	if s := m.ObjectSelector; s != nil && (len(s.MatchLabels) > 0 || len(s.MatchExpressions) > 0) {
		return false
	}
	if len(m.ExcludeResourceRules) != 0 || len(m.ResourceRules) != 1 {
		return false
	}
	r := m.ResourceRules[0]
	return len(r.ResourceNames) == 0 &&
		len(r.APIGroups) == 1 && r.APIGroups[0] == "" &&
		len(r.APIVersions) == 1 && r.APIVersions[0] == "v1" &&
		len(r.Resources) == 1 && r.Resources[0] == "pods"
}

// ValidatingPolicy returns the Pod controller variants of a
// ValidatingPolicy spec (none when CanGenerate is false), ordered by
// configuration: for every controller of spec.autogen.podControllers
// (all six when the list is absent), the variant of its configuration.
// The spec is not modified.
func ValidatingPolicy(spec *policiesv1alpha1.ValidatingPolicySpec) ([]Variant, error) {
	if spec == nil || !CanGenerate(spec.MatchConstraints) {
		return nil, nil
	}
	names := make([]string, 0, len(celControllers))
	if a := spec.AutogenConfiguration; a != nil && a.PodControllers != nil && a.PodControllers.Controllers != nil {
		names = append(names, a.PodControllers.Controllers...)
	} else {
		for n := range celControllers {
			names = append(names, n)
		}
	}
	byConfig := map[string][]Target{}
	seen := map[string]bool{}
	for _, n := range names {
		c, ok := celControllers[n]
		if !ok || seen[n] {
			continue
		}
		seen[n] = true
		byConfig[c.config] = append(byConfig[c.config], c.target)
	}
	configs := make([]string, 0, len(byConfig))
	for c := range byConfig {
		configs = append(configs, c)
	}
	sort.Strings(configs)
	out := make([]Variant, 0, len(configs))
	for _, config := range configs {
		targets := byConfig[config]
		sort.Slice(targets, func(i, j int) bool { return targetLess(targets[i], targets[j]) })
		vs, err := variantSpec(spec, config, targets)
		if err != nil {
			return nil, err
		}
		out = append(out, Variant{Config: config, Targets: targets, Spec: vs})
	}
	return out, nil
}

func targetLess(a, b Target) bool {
	if a.Group != b.Group {
		return a.Group < b.Group
	}
	if a.Version != b.Version {
		return a.Version < b.Version
	}
	if a.Resource != b.Resource {
		return a.Resource < b.Resource
	}
	return a.Kind < b.Kind
}

// variantSpec builds the spec of one configuration.
func variantSpec(spec *policiesv1alpha1.ValidatingPolicySpec, config string, targets []Target) (*policiesv1alpha1.ValidatingPolicySpec, error) {
	out := spec.DeepCopy()
	m := spec.MatchConstraints
	out.MatchConstraints = controllerConstraints(targets, m.ResourceRules[0].Operations, m)
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("autogen %s: %w", config, err)
	}
	for _, r := range celReplacements[config] {
		raw = replacePath(raw, "object."+r[0], "object."+r[1])
		raw = replacePath(raw, "oldObject."+r[0], "oldObject."+r[1])
	}
	gen := &policiesv1alpha1.ValidatingPolicySpec{}
	if err := json.Unmarshal(raw, gen); err != nil {
		return nil, fmt.Errorf("autogen %s: %w", config, err)
	}
	return gen, nil
}

// controllerConstraints are the matchConstraints of a variant: one rule per
// group and version of the targets (sorted), with the policy's operations
// and namespace selector.
func controllerConstraints(targets []Target, ops []admissionregistrationv1.OperationType, m *admissionregistrationv1.MatchResources) *admissionregistrationv1.MatchResources {
	if len(targets) == 0 || len(ops) == 0 {
		return nil
	}
	type gv struct{ group, version string }
	byGV := map[gv][]string{}
	var gvs []gv
	for _, t := range targets {
		k := gv{t.Group, t.Version}
		if _, ok := byGV[k]; !ok {
			gvs = append(gvs, k)
		}
		byGV[k] = append(byGV[k], t.Resource)
	}
	sort.Slice(gvs, func(i, j int) bool {
		if gvs[i].group != gvs[j].group {
			return gvs[i].group < gvs[j].group
		}
		return gvs[i].version < gvs[j].version
	})
	out := &admissionregistrationv1.MatchResources{}
	for _, k := range gvs {
		res := byGV[k]
		sort.Strings(res)
		out.ResourceRules = append(out.ResourceRules, admissionregistrationv1.NamedRuleWithOperations{
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{k.group}, APIVersions: []string{k.version}, Resources: res},
				Operations: append([]admissionregistrationv1.OperationType(nil), ops...),
			},
		})
	}
	if m.NamespaceSelector != nil {
		out.NamespaceSelector = m.NamespaceSelector.DeepCopy()
	}
	return out
}

// replacePath rewrites every occurrence of from in data with to, except
// where .namespace follows it as a whole path segment (object.metadata
// .namespace stays the controller's own namespace).
func replacePath(data []byte, from, to string) []byte {
	f := []byte(from)
	if !bytes.Contains(data, f) {
		return data
	}
	var b bytes.Buffer
	b.Grow(len(data) + bytes.Count(data, f)*(len(to)-len(from)))
	for {
		i := bytes.Index(data, f)
		if i < 0 {
			break
		}
		b.Write(data[:i])
		rest := data[i+len(f):]
		if protected(rest) {
			b.Write(f)
		} else {
			b.WriteString(to)
		}
		data = rest
	}
	b.Write(data)
	return b.Bytes()
}

func protected(rest []byte) bool {
	const suffix = ".namespace"
	if !bytes.HasPrefix(rest, []byte(suffix)) {
		return false
	}
	next := rest[len(suffix):]
	return len(next) == 0 || !isIdentByte(next[0])
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
