package engine_test

import (
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/loader"
)

func genCompile(t *testing.T, generate string) error {
	t.Helper()
	doc := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: p
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Namespace]
    generate:
` + generate
	s := &loader.Set{}
	if err := s.Read(strings.NewReader(doc), "policy.yaml"); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	_, err = eng.CompilePolicy(s.Policies[0])
	return err
}

func TestCompileGenerate(t *testing.T) {
	tests := []struct {
		name     string
		generate string
		want     string // substring of the error; "" for a valid rule
	}{
		{"data", `
      apiVersion: v1
      kind: ConfigMap
      name: "cm-{{request.object.metadata.name}}"
      namespace: "{{request.object.metadata.name}}"
      data: {data: {k: v}}`, ""},
		{"clone", `
      apiVersion: v1
      kind: Secret
      name: regcred
      namespace: "{{request.object.metadata.name}}"
      clone: {namespace: default, name: regcred}`, ""},
		{"cloneList", `
      namespace: "{{request.object.metadata.name}}"
      cloneList: {namespace: staging, kinds: [v1/Secret, v1/ConfigMap], selector: {matchLabels: {a: b}}}`, ""},
		{"cluster-scoped target", `
      apiVersion: rbac.authorization.k8s.io/v1
      kind: ClusterRole
      name: "{{request.object.metadata.name}}-admin"
      data: {rules: []}`, ""},
		{"foreach", `
      foreach:
      - list: request.object.metadata.labels.namespaces | split(@, ',')
        apiVersion: v1
        kind: ConfigMap
        name: cm
        namespace: "{{ element }}"
        data: {data: {k: v}}`, ""},
		// upstream rejects only more than one source: none compiles and
		// generates nothing
		{"no source", `
      apiVersion: v1
      kind: ConfigMap
      name: cm
      namespace: "{{request.object.metadata.name}}"`, ""},
		{"two sources", `
      apiVersion: v1
      kind: Secret
      name: s
      namespace: ns
      data: {}
      clone: {namespace: default, name: s}`, "spec.rules[0].generate: Forbidden: only one of generate patterns(data, clone, cloneList and foreach) can be specified"},
		{"kind required", `
      apiVersion: v1
      name: cm
      namespace: ns
      data: {}`, "spec.rules[0].generate.kind: Forbidden: kind can not be empty"},
		{"name required", `
      apiVersion: v1
      kind: ConfigMap
      namespace: ns
      data: {}`, "spec.rules[0].generate.name: Forbidden: name can not be empty"},
		{"apiVersion required", `
      kind: ConfigMap
      name: cm
      namespace: ns
      data: {}`, "spec.rules[0].generate.apiVersion: Forbidden: apiVersion can not be empty"},
		{"variable in kind", `
      apiVersion: v1
      kind: "{{request.object.kind}}"
      name: cm
      namespace: ns
      data: {}`, "spec.rules[0].generate.clone/cloneList: Forbidden: Generation Rule Clone/CloneList should not have variables"},
		{"variable in clone", `
      apiVersion: v1
      kind: Secret
      name: s
      namespace: ns
      clone: {namespace: default, name: "{{request.object.metadata.name}}"}`, "Generation Rule Clone/CloneList should not have variables"},
		{"namespace required for a namespaced kind", `
      apiVersion: v1
      kind: ConfigMap
      name: cm
      data: {}`, "spec.rules[0].generate.namespace: Forbidden: target namespace must be set for a namespaced resource"},
		{"no namespace for a cluster-wide kind", `
      apiVersion: rbac.authorization.k8s.io/v1
      kind: ClusterRole
      name: cr
      namespace: ns
      data: {}`, "target namespace must not be set for a cluster-wide resource"},
		{"cloneList with name", `
      name: x
      namespace: ns
      cloneList: {namespace: staging, kinds: [v1/Secret]}`, "with cloneList, generate.name. should not be specified"},
		{"cloneList namespace required", `
      namespace: ns
      cloneList: {kinds: [v1/Secret]}`, "spec.rules[0].generate.cloneList.namespace: Forbidden: namespace is required for namespaced target resources"},
		{"cloneList mixed scope", `
      namespace: ns
      cloneList: {namespace: staging, kinds: [v1/Secret, rbac.authorization.k8s.io/v1/ClusterRole]}`, "mixed scope of target resources is forbidden"},
		{"cloneList wildcard selector", `
      namespace: ns
      cloneList: {namespace: staging, kinds: [v1/Secret], selector: {matchLabels: {app: "web-*"}}}`, "wildcard characters `*/?` not supported"},
		{"anchors in data", `
      apiVersion: v1
      kind: ConfigMap
      name: cm
      namespace: ns
      data: {metadata: {"+(labels)": {a: b}}}`, "anchors not supported on generate resources"},
		{"foreach list required", `
      foreach:
      - apiVersion: v1
        kind: ConfigMap
        name: cm
        namespace: ns
        data: {}`, "spec.rules[0].generate.foreach[0].list: Invalid value"},
		{"foreach entry with two sources", `
      foreach:
      - list: "['a']"
        apiVersion: v1
        kind: Secret
        name: s
        namespace: ns
        data: {}
        clone: {namespace: default, name: s}`, "spec.rules[0].generate.foreach[0]: Forbidden: only one of generate patterns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := genCompile(t, tt.generate)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("no error, want %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("error %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}
