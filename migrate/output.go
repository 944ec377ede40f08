package migrate

import (
	"sort"
	"strings"

	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/autogen"
)

// matchConstraints builds matchConstraints from kinds and operations.
func matchConstraints(kinds []kindRef, ops []string) *admissionregistrationv1.MatchResources {
	m := &admissionregistrationv1.MatchResources{}
	var operations []admissionregistrationv1.OperationType
	for _, o := range ops {
		operations = append(operations, admissionregistrationv1.OperationType(o))
	}
	for _, g := range groupRules(constraintRules(kinds)) {
		m.ResourceRules = append(m.ResourceRules, admissionregistrationv1.NamedRuleWithOperations{
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: operations,
				Rule: admissionregistrationv1.Rule{
					APIGroups:   []string{g.group},
					APIVersions: []string{g.version},
					Resources:   g.resources,
				},
			},
		})
	}
	return m
}

// matchCondition is a named matchCondition.
func matchCondition(name string, e ex) admissionregistrationv1.MatchCondition {
	return admissionregistrationv1.MatchCondition{Name: name, Expression: e.s}
}

// out is the validation as the API type.
func (v validation) out() admissionregistrationv1.Validation {
	out := admissionregistrationv1.Validation{Expression: v.expr.s, Message: v.message}
	if v.messageExp.s != "" {
		out.MessageExpression = v.messageExp.s
	}
	return out
}

// varOut is a variable as the API type.
func varOut(v variable) admissionregistrationv1.Variable {
	return admissionregistrationv1.Variable{Name: v.name, Expression: v.expr.s}
}

// outputAnnotations are the annotations an output keeps: the source's,
// but the autogen annotation (its meaning moves to spec.autogen).
func outputAnnotations(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		if k == autogen.ControllersAnnotation || k == "kubectl.kubernetes.io/last-applied-configuration" {
			continue
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// labelsOf is the source's labels.
func labelsOf(p api.PolicyObject) map[string]string {
	if o, ok := p.(interface{ GetLabels() map[string]string }); ok {
		return o.GetLabels()
	}
	return nil
}

// writeSettings writes the policy-wide settings of a ClusterPolicy into a
// ValidatingPolicy: failure policy, background and admission, webhook
// timeout.
func writeSettings(src api.ClassicPolicy, spec *policiesv1alpha1.ValidatingPolicySpec, comments map[string]string) {
	s := src.GetSpec()
	if fp := failurePolicy(s); fp != nil {
		spec.FailurePolicy = fp
	}
	eval := evaluation(s)
	if eval != nil {
		spec.EvaluationConfiguration = eval
		comments["spec.evaluation"] = "spec.background and spec.admission"
	}
	if t := timeout(s); t != nil {
		spec.WebhookConfiguration = &policiesv1alpha1.WebhookConfiguration{TimeoutSeconds: t}
	}
}

// failurePolicy is webhookConfiguration.failurePolicy, else the
// deprecated spec.failurePolicy.
func failurePolicy(s *api.Spec) *admissionregistrationv1.FailurePolicyType {
	var fp *api.FailurePolicyType
	if s.WebhookConfiguration != nil && s.WebhookConfiguration.FailurePolicy != nil {
		fp = s.WebhookConfiguration.FailurePolicy
	} else if s.FailurePolicy != nil {
		fp = s.FailurePolicy
	}
	if fp == nil {
		return nil
	}
	v := admissionregistrationv1.FailurePolicyType(*fp)
	return &v
}

// evaluation is spec.background and spec.admission (only what differs
// from the defaults, which are the same: both on).
func evaluation(s *api.Spec) *policiesv1alpha1.EvaluationConfiguration {
	var eval *policiesv1alpha1.EvaluationConfiguration
	if s.Background != nil && !*s.Background {
		f := false
		eval = &policiesv1alpha1.EvaluationConfiguration{Background: &policiesv1alpha1.BackgroundConfiguration{Enabled: &f}}
	}
	if s.Admission != nil && !*s.Admission {
		if eval == nil {
			eval = &policiesv1alpha1.EvaluationConfiguration{}
		}
		f := false
		eval.Admission = &policiesv1alpha1.AdmissionConfiguration{Enabled: &f}
	}
	return eval
}

// timeout is webhookConfiguration.timeoutSeconds, else the deprecated
// spec.webhookTimeoutSeconds.
func timeout(s *api.Spec) *int32 {
	if s.WebhookConfiguration != nil && s.WebhookConfiguration.TimeoutSeconds != nil {
		return s.WebhookConfiguration.TimeoutSeconds
	}
	return s.WebhookTimeoutSeconds
}

// celControllers are the controllers of the CEL kinds' autogen by kind.
var celControllers = map[string]string{
	"DaemonSet": "daemonsets", "Deployment": "deployments", "Job": "jobs", "ReplicaSet": "replicasets",
	"StatefulSet": "statefulsets", "CronJob": "cronjobs",
}

// podControllers maps Kyverno's autogen controllers to the CEL kinds'
// names, and says which have none.
func podControllers(kinds []string) (names []string, dropped []string) {
	names = []string{}
	for _, k := range kinds {
		if n, ok := celControllers[k]; ok {
			names = append(names, n)
		} else {
			dropped = append(dropped, k)
		}
	}
	sort.Strings(names)
	return names, dropped
}

// autogenConfig is spec.autogen for a list of controllers: nil for the
// default (all six), an empty list to turn autogen off.
func autogenConfig(names []string) *policiesv1alpha1.ValidatingPolicyAutogenConfiguration {
	if len(names) == len(celControllers) {
		return nil
	}
	return &policiesv1alpha1.ValidatingPolicyAutogenConfiguration{
		PodControllers: &policiesv1alpha1.PodControllersGenerationConfiguration{Controllers: names},
	}
}

// autogenNote explains spec.autogen.
func autogenNote(names, dropped []string) string {
	var b strings.Builder
	switch {
	case len(names) == 0:
		b.WriteString("Kyverno generates no Pod controller rules for this policy")
	default:
		b.WriteString("the Pod controllers of the policy's autogen")
	}
	if len(dropped) > 0 {
		b.WriteString("; " + strings.Join(dropped, ", ") + ": no Pod controller variant in the CEL policy types")
	}
	return b.String()
}
