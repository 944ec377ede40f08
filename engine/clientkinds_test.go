package engine_test

import (
	"reflect"
	"testing"

	"github.com/gavelpolicy/gavel/engine"
)

func TestClientKinds(t *testing.T) {
	const validate = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: v}
spec:
  rules:
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate: {pattern: {metadata: {name: "?*"}}}
`
	const generate = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: g}
spec:
  rules:
  - name: data
    match: {any: [{resources: {kinds: [Namespace]}}]}
    generate:
      apiVersion: networking.k8s.io/v1
      kind: NetworkPolicy
      name: deny
      namespace: "{{ request.object.metadata.name }}"
      data: {spec: {podSelector: {}}}
  - name: clone-list
    match: {any: [{resources: {kinds: [Namespace]}}]}
    generate:
      namespace: "{{ request.object.metadata.name }}"
      cloneList:
        namespace: default
        kinds: [v1/Secret, v1/ConfigMap]
        selector: {matchLabels: {copy: "yes"}}
  - name: foreach
    match: {any: [{resources: {kinds: [Namespace]}}]}
    generate:
      foreach:
      - list: request.object.metadata.labels.keys(@)
        apiVersion: v1
        kind: ResourceQuota
        name: "q-{{ element }}"
        namespace: "{{ request.object.metadata.name }}"
        data: {spec: {hard: {pods: "10"}}}
`
	const mutateExisting = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: m}
spec:
  rules:
  - name: targets
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    mutate:
      targets:
      - apiVersion: v1
        kind: Secret
        namespace: "{{ request.object.metadata.namespace }}"
      patchStrategicMerge: {metadata: {labels: {touched: "yes"}}}
`
	const variableKind = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: x}
spec:
  rules:
  - name: targets
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    mutate:
      targets:
      - apiVersion: v1
        kind: "{{ request.object.data.kind }}"
        namespace: default
      patchStrategicMerge: {metadata: {labels: {touched: "yes"}}}
`
	for _, tc := range []struct {
		name, src string
		kinds     []string
		all       bool
	}{
		{"validate only", validate, nil, false},
		{"generate", validate + "---" + generate, []string{"ConfigMap", "NetworkPolicy", "ResourceQuota", "Secret"}, false},
		{"mutate existing", mutateExisting, []string{"Secret"}, false},
		{"variable kind", mutateExisting + "---" + variableKind, []string{"Secret"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := rbCompile(t, tc.src)
			kinds, all := set.ClientKinds()
			if !reflect.DeepEqual(kinds, tc.kinds) || all != tc.all {
				t.Errorf("ClientKinds() = %v, %v; want %v, %v", kinds, all, tc.kinds, tc.all)
			}
		})
	}
}

// A GeneratingPolicy that calls the resource library may read any kind;
// one that reads namespaceObject reads Namespaces.
func TestClientKindsGeneratingPolicy(t *testing.T) {
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	const head = `apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: p
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [namespaces]}
  generate:
`
	for _, c := range []struct {
		expr  string
		kinds []string
		all   bool
	}{
		{`generator.Apply(object.metadata.name, [resource.Get("v1", "secrets", "default", "regcred")])`, nil, true},
		{`generator.Apply(object.metadata.name, namespaceObject == null ? [] : [])`, []string{"Namespace"}, false},
		{`generator.Apply(object.metadata.name, [])`, nil, false},
	} {
		set, err := eng.Compile(decodeExample(head + "  - expression: '" + c.expr + "'\n")...)
		if err != nil {
			t.Fatal(err)
		}
		kinds, all := set.ClientKinds()
		if !reflect.DeepEqual(kinds, c.kinds) || all != c.all {
			t.Errorf("%s: kinds %v all %v, want %v %v", c.expr, kinds, all, c.kinds, c.all)
		}
	}
}
