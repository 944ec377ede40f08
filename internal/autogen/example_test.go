package autogen_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/autogen"
)

const policyYAML = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: disallow-latest-tag
  annotations:
    pod-policies.kyverno.io/autogen-controllers: Deployment,CronJob
spec:
  rules:
  - name: require-image-tag
    match:
      any:
      - resources:
          kinds:
          - Pod
    validate:
      message: "An image tag is required on {{ request.object.metadata.name }}."
      pattern:
        spec:
          containers:
          - image: "*:*"
`

func Example() {
	docs, err := api.ReadDocuments(strings.NewReader(policyYAML), "policy.yaml")
	if err != nil {
		panic(err)
	}
	decoded, err := api.DecodePolicy(docs[0])
	if err != nil {
		panic(err)
	}
	policy := decoded.(*api.ClusterPolicy)

	fmt.Println("controllers:", autogen.Controllers(policy.GetAnnotations(), policy.GetSpec()))
	for _, rule := range autogen.Rules(policy) {
		original, generated := autogen.Original(rule.Name)
		fmt.Printf("%s (generated: %v, from %s) kinds %v\n", rule.Name, generated, original, rule.MatchResources.Any[0].Kinds)
		fmt.Println("  message:", rule.Validation.Message)
		pattern, _ := json.Marshal(rule.Validation.Pattern)
		fmt.Println("  pattern:", string(pattern))
	}
	// Output:
	// controllers: [CronJob Deployment]
	// require-image-tag (generated: false, from require-image-tag) kinds [Pod]
	//   message: An image tag is required on {{ request.object.metadata.name }}.
	//   pattern: {"spec":{"containers":[{"image":"*:*"}]}}
	// autogen-require-image-tag (generated: true, from require-image-tag) kinds [apps/v1/Deployment]
	//   message: An image tag is required on {{ request.object.spec.template.metadata.name }}.
	//   pattern: {"spec":{"template":{"spec":{"containers":[{"image":"*:*"}]}}}}
	// autogen-cronjob-require-image-tag (generated: true, from require-image-tag) kinds [batch/v1/CronJob]
	//   message: An image tag is required on {{ request.object.spec.jobTemplate.spec.template.metadata.name }}.
	//   pattern: {"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"image":"*:*"}]}}}}}}
}

func ExampleOriginal() {
	for _, name := range []string{"check-image", "autogen-check-image", "autogen-cronjob-check-image"} {
		original, generated := autogen.Original(name)
		fmt.Println(name, "->", original, generated)
	}
	// Output:
	// check-image -> check-image false
	// autogen-check-image -> check-image true
	// autogen-cronjob-check-image -> check-image true
}

// ValidatingPolicy returns the Pod controller variants of a
// ValidatingPolicy: its expressions moved to the Pod template.
func ExampleValidatingPolicy() {
	docs, err := api.ReadDocuments(strings.NewReader(`
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: no-host-network
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  validations:
  - expression: "object.spec.?hostNetwork.orValue(false) == false"
`), "policy.yaml")
	if err != nil {
		panic(err)
	}
	p, err := api.DecodePolicy(docs[0])
	if err != nil {
		panic(err)
	}
	variants, err := autogen.ValidatingPolicy(&p.(*api.ValidatingPolicy).Spec)
	if err != nil {
		panic(err)
	}
	for _, v := range variants {
		var kinds []string
		for _, t := range v.Targets {
			kinds = append(kinds, t.Kind)
		}
		fmt.Println(v.Config, kinds, v.Spec.Validations[0].Expression)
	}
	// Output:
	// cronjobs [CronJob] object.spec.jobTemplate.spec.template.spec.?hostNetwork.orValue(false) == false
	// defaults [DaemonSet Deployment ReplicaSet StatefulSet Job] object.spec.template.spec.?hostNetwork.orValue(false) == false
}

// The Pod controller variants of an ImageValidatingPolicy: matchConstraints
// for the controllers, and object paths moved to the Pod template in
// every expression (attestors' too).
func ExampleImageValidatingPolicy() {
	docs, err := api.ReadDocuments(strings.NewReader(`apiVersion: policies.kyverno.io/v1
kind: ImageValidatingPolicy
metadata:
  name: signed
spec:
  autogen:
    podControllers:
      controllers: [deployments, cronjobs]
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  attestors:
  - name: cosign
    cosign:
      key:
        expression: object.metadata.annotations['key']
  validations:
  - expression: images.containers.all(i, verifyImageSignatures(i, [attestors.cosign]) > 0)
`), "policy.yaml")
	if err != nil {
		panic(err)
	}
	p, err := api.DecodePolicy(docs[0])
	if err != nil {
		panic(err)
	}
	variants, err := autogen.ImageValidatingPolicy(&p.(*api.ImageValidatingPolicy).Spec)
	if err != nil {
		panic(err)
	}
	for _, v := range variants {
		fmt.Println(v.Config, v.Targets[0].Kind, v.Spec.MatchConstraints.ResourceRules[0].Resources, v.Spec.Attestors[0].Cosign.Key.Expression)
	}
	// Output:
	// cronjobs CronJob [cronjobs] object.spec.jobTemplate.spec.template.metadata.annotations['key']
	// defaults Deployment [deployments] object.spec.template.metadata.annotations['key']
}

// The Pod controller variants of a MutatingPolicy: the controllers'
// matchConstraints, and the ApplyConfiguration moved to the template.
func ExampleMutatingPolicy() {
	docs, err := api.ReadDocuments(strings.NewReader(`
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata:
  name: pull-always
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  autogen:
    podControllers:
      controllers: [deployments, cronjobs]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >-
        Object{spec: Object.spec{containers: object.spec.containers.map(c,
        Object.spec.containers{name: c.name, imagePullPolicy: "Always"})}}
`), "policy.yaml")
	if err != nil {
		panic(err)
	}
	p, err := api.DecodePolicy(docs[0])
	if err != nil {
		panic(err)
	}
	for _, v := range autogen.MutatingPolicy(&p.(*api.MutatingPolicy).Spec) {
		fmt.Println(v.Config, v.Targets[0].Kind, v.Spec.MatchConstraints.ResourceRules[0].Resources)
		fmt.Println(v.Spec.Mutations[0].ApplyConfiguration.Expression)
	}
	// Output:
	// cronjobs CronJob [cronjobs]
	// Object{spec: Object.spec{jobTemplate: Object.spec.jobTemplate{spec: Object.spec.jobTemplate.spec{template: Object.spec.jobTemplate.spec.template{spec: Object.spec.jobTemplate.spec.template.spec{containers: object.spec.jobTemplate.spec.template.spec.containers.map(c, Object.spec.jobTemplate.spec.template.spec.containers{name: c.name, imagePullPolicy: "Always"})}}}}}}
	// defaults Deployment [deployments]
	// Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: object.spec.template.spec.containers.map(c, Object.spec.template.spec.containers{name: c.name, imagePullPolicy: "Always"})}}}}
}
