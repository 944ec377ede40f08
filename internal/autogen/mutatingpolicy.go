package autogen

import (
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	"regexp"
	"sort"
	"strings"
)

// MutatingVariant is a MutatingPolicy generated for Pod controllers, as
// upstream's mpol autogen builds it: the policy's spec with
// matchConstraints naming the controllers, and its matchConditions and
// ApplyConfiguration mutations moved to the Pod template (object.spec,
// object.metadata.labels and .annotations, and the Object.spec... types;
// the root Object{...} wrapped in the template's path, and, unlike
// upstream, its Object.metadata types with it). Variables, JSON
// patches and the other expressions are left as they are, as upstream
// leaves them.
type MutatingVariant struct {
	// Config is upstream's name of the variant: "defaults" or "cronjobs".
	Config string
	// Targets are the controllers, sorted.
	Targets []Target
	// Spec is the generated spec.
	Spec *policiesv1alpha1.MutatingPolicySpec
}

// MutatingPolicy returns the Pod controller variants of a MutatingPolicy
// spec (none when CanGenerate is false), ordered by configuration: for
// every controller of spec.autogen.podControllers (all six when the list
// is absent), the variant of its configuration. The spec is not modified.
func MutatingPolicy(spec *policiesv1alpha1.MutatingPolicySpec) []MutatingVariant {
	if spec == nil || !CanGenerate(spec.MatchConstraints) {
		return nil
	}
	var names []string
	if a := spec.AutogenConfiguration; a != nil && a.PodControllers != nil && a.PodControllers.Controllers != nil {
		names = a.PodControllers.Controllers
	}
	byConfig := controllerTargets(names)
	configs := make([]string, 0, len(byConfig))
	for c := range byConfig {
		configs = append(configs, c)
	}
	sort.Strings(configs)
	out := make([]MutatingVariant, 0, len(configs))
	for _, config := range configs {
		targets := byConfig[config]
		gen := spec.DeepCopy()
		m := spec.MatchConstraints
		gen.MatchConstraints = controllerConstraints(targets, m.ResourceRules[0].Operations, m)
		for i := range gen.MatchConditions {
			if e := gen.MatchConditions[i].Expression; e != "" {
				gen.MatchConditions[i].Expression = podToTemplate(e, config)
			}
		}
		for i := range gen.Mutations {
			if ac := gen.Mutations[i].ApplyConfiguration; ac != nil && ac.Expression != "" {
				ac.Expression = podToTemplate(ac.Expression, config)
			}
		}
		out = append(out, MutatingVariant{Config: config, Targets: targets, Spec: gen})
	}
	return out
}

// controllerTargets groups the controllers named (all of them when names
// is nil; unknown names and repeats are ignored) by configuration, each
// group sorted.
func controllerTargets(names []string) map[string][]Target {
	if names == nil {
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
	for _, targets := range byConfig {
		sort.Slice(targets, func(i, j int) bool { return targetLess(targets[i], targets[j]) })
	}
	return byConfig
}

var (
	specPathRe        = regexp.MustCompile(`\b(object|oldObject|Object)\.spec`)
	metadataLabelsRe  = regexp.MustCompile(`\b(object|oldObject|Object)\.metadata\.labels`)
	metadataAnnotsRe  = regexp.MustCompile(`\b(object|oldObject|Object)\.metadata\.annotations`)
	metadataTypeRe    = regexp.MustCompile(`\bObject\.metadata\b`)
	templateWrappings = map[string][2]string{
		ConfigDefaults: {"Object{spec: Object.spec{template: Object.spec.template{", "}}}"},
		ConfigCronJobs: {"Object{spec: Object.spec{jobTemplate: Object.spec.jobTemplate{spec: Object.spec.jobTemplate.spec{template: Object.spec.jobTemplate.spec.template{", "}}}}}"},
	}
)

// podToTemplate moves an expression on a Pod to a controller's template:
// the spec and the labels and annotations paths, then, when the
// expression is an Object{...} initializer, its fields into the
// template's.
func podToTemplate(expr, config string) string {
	spec, metadata := "spec.template.spec", "spec.template.metadata"
	if config == ConfigCronJobs {
		spec, metadata = "spec.jobTemplate.spec.template.spec", "spec.jobTemplate.spec.template.metadata"
	}
	expr = specPathRe.ReplaceAllString(expr, "${1}."+spec)
	expr = metadataLabelsRe.ReplaceAllString(expr, "${1}."+metadata+".labels")
	expr = metadataAnnotsRe.ReplaceAllString(expr, "${1}."+metadata+".annotations")
	// unlike upstream, the Object.metadata types of an initializer follow
	// it to the template (upstream leaves them, and the wrapped
	// initializer's type names then do not match its field path)
	expr = metadataTypeRe.ReplaceAllString(expr, "Object."+metadata)
	rest, ok := strings.CutPrefix(strings.TrimSpace(expr), "Object")
	if !ok {
		return expr
	}
	body, ok := strings.CutPrefix(strings.TrimLeft(rest, " \t\r\n"), "{")
	if !ok {
		return expr
	}
	// the initializer's closing brace (braces are counted, as upstream
	// counts them, strings included)
	depth, end := 1, -1
	for i, c := range body {
		switch c {
		case '{':
			depth++
		case '}':
			depth--
		}
		if depth == 0 {
			end = i
			break
		}
	}
	if end <= 0 {
		return expr
	}
	w := templateWrappings[config]
	return w[0] + body[:end] + w[1] + body[end+1:]
}
