package autogen

import (
	"encoding/json"
	"fmt"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	"sort"
)

// ImageVariant is an ImageValidatingPolicy generated for Pod controllers,
// as upstream's ivpol autogen builds it: the policy's spec with
// matchConstraints naming the controllers and every object.spec and
// object.metadata path (and oldObject's) moved to the Pod template, in
// every expression (validations, variables, matchConditions, images,
// attestors' expressions).
type ImageVariant struct {
	// Config is upstream's name of the variant: ConfigDefaults or
	// ConfigCronJobs.
	Config string
	// Targets are the controllers, sorted.
	Targets []Target
	// Spec is the generated spec.
	Spec *policiesv1alpha1.ImageValidatingPolicySpec
}

// ImageValidatingPolicy returns the Pod controller variants of an
// ImageValidatingPolicy spec (none when CanGenerate is false), ordered by
// configuration, as ValidatingPolicy does. The spec is not modified.
func ImageValidatingPolicy(spec *policiesv1alpha1.ImageValidatingPolicySpec) ([]ImageVariant, error) {
	if spec == nil || !CanGenerate(spec.MatchConstraints) {
		return nil, nil
	}
	var controllers []string
	named := false
	if c := spec.AutogenConfiguration; c != nil && c.PodControllers != nil && c.PodControllers.Controllers != nil {
		controllers, named = c.PodControllers.Controllers, true
	}
	var out []ImageVariant
	for _, cv := range celConfigTargets(controllers, named) {
		gen := spec.DeepCopy()
		m := spec.MatchConstraints
		gen.MatchConstraints = controllerConstraints(cv.targets, m.ResourceRules[0].Operations, m)
		if err := rewriteSpec(gen, cv.config); err != nil {
			return nil, err
		}
		out = append(out, ImageVariant{Config: cv.config, Targets: cv.targets, Spec: gen})
	}
	return out, nil
}

// configTargets are the targets of one configuration.
type configTargets struct {
	config  string
	targets []Target
}

// celConfigTargets groups the controllers of CEL policy autogen by
// configuration (sorted), each with its targets (sorted): the controllers
// named (other names are ignored, as upstream ignores them), or all six
// when named is false.
func celConfigTargets(controllers []string, named bool) []configTargets {
	names := controllers
	if !named {
		names = make([]string, 0, len(celControllers))
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
	out := make([]configTargets, 0, len(byConfig))
	for c, targets := range byConfig {
		sort.Slice(targets, func(i, j int) bool { return targetLess(targets[i], targets[j]) })
		out = append(out, configTargets{config: c, targets: targets})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].config < out[j].config })
	return out
}

// rewriteSpec moves the object and oldObject paths of every expression of
// spec to the Pod template of config, through the spec's JSON text (as
// upstream rewrites it).
func rewriteSpec[T any](spec *T, config string) error {
	raw, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("autogen %s: %w", config, err)
	}
	for _, r := range celReplacements[config] {
		raw = replacePath(raw, "object."+r[0], "object."+r[1])
		raw = replacePath(raw, "oldObject."+r[0], "oldObject."+r[1])
	}
	var gen T
	if err := json.Unmarshal(raw, &gen); err != nil {
		return fmt.Errorf("autogen %s: %w", config, err)
	}
	*spec = gen
	return nil
}
