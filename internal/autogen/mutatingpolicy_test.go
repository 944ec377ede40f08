package autogen

import (
	"testing"

	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1alpha1 "k8s.io/api/admissionregistration/v1alpha1"
)

func TestPodToTemplate(t *testing.T) {
	tests := []struct{ name, expr, config, want string }{
		{"paths of the spec and labels", `object.spec.containers.all(c, c.name != "") && has(object.metadata.labels.app) && object.metadata.name != ""`, ConfigDefaults,
			`object.spec.template.spec.containers.all(c, c.name != "") && has(object.spec.template.metadata.labels.app) && object.metadata.name != ""`},
		{"cronjobs", `oldObject.spec.x == object.metadata.annotations.y`, ConfigCronJobs,
			`oldObject.spec.jobTemplate.spec.template.spec.x == object.spec.jobTemplate.spec.template.metadata.annotations.y`},
		{"an initializer is wrapped", `Object{spec: Object.spec{hostNetwork: false}}`, ConfigDefaults,
			`Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{hostNetwork: false}}}}`},
		{"its metadata types follow", "Object {metadata: Object.metadata{labels: {'a': 'b'}}} ", ConfigCronJobs,
			`Object{spec: Object.spec{jobTemplate: Object.spec.jobTemplate{spec: Object.spec.jobTemplate.spec{template: Object.spec.jobTemplate.spec.template{metadata: Object.spec.jobTemplate.spec.template.metadata{labels: {'a': 'b'}}}}}}}`},
		{"an empty initializer is kept", `Object{}`, ConfigDefaults, `Object{}`},
		{"not an initializer", `[JSONPatch{op: "add", path: "/spec/x", value: object.spec.y}]`, ConfigDefaults,
			`[JSONPatch{op: "add", path: "/spec/x", value: object.spec.template.spec.y}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := podToTemplate(tt.expr, tt.config); got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestMutatingPolicyVariants(t *testing.T) {
	spec := &policiesv1alpha1.MutatingPolicySpec{
		MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{"CREATE"},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}},
		MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "has(object.spec.volumes)"}},
		Variables:       []admissionregistrationv1.Variable{{Name: "v", Expression: "object.spec.volumes"}},
		Mutations: []admissionregistrationv1alpha1.Mutation{
			{PatchType: "ApplyConfiguration", ApplyConfiguration: &admissionregistrationv1alpha1.ApplyConfiguration{Expression: "Object{spec: Object.spec{a: 1}}"}},
			{PatchType: "JSONPatch", JSONPatch: &admissionregistrationv1alpha1.JSONPatch{Expression: `[JSONPatch{op: "add", path: "/spec/a", value: object.spec.b}]`}},
		},
	}
	vs := MutatingPolicy(spec)
	if len(vs) != 2 || vs[0].Config != ConfigCronJobs || vs[1].Config != ConfigDefaults {
		t.Fatalf("variants %+v", vs)
	}
	d := vs[1]
	if len(d.Targets) != 5 || d.Targets[0].Kind != "DaemonSet" {
		t.Fatalf("targets %+v", d.Targets)
	}
	if got := d.Spec.MatchConditions[0].Expression; got != "has(object.spec.template.spec.volumes)" {
		t.Errorf("matchCondition %s", got)
	}
	if got := d.Spec.Mutations[0].ApplyConfiguration.Expression; got != "Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{a: 1}}}}" {
		t.Errorf("applyConfiguration %s", got)
	}
	// variables and JSON patches are left as upstream leaves them
	if d.Spec.Variables[0].Expression != "object.spec.volumes" || d.Spec.Mutations[1].JSONPatch.Expression != spec.Mutations[1].JSONPatch.Expression {
		t.Errorf("variables or JSON patch changed: %+v", d.Spec)
	}
	if spec.MatchConditions[0].Expression != "has(object.spec.volumes)" {
		t.Error("the spec was modified")
	}
	spec.AutogenConfiguration = &policiesv1alpha1.MutatingPolicyAutogenConfiguration{PodControllers: &policiesv1alpha1.PodControllersGenerationConfiguration{Controllers: []string{}}}
	if vs := MutatingPolicy(spec); len(vs) != 0 {
		t.Errorf("no controllers: %d variants", len(vs))
	}
}
