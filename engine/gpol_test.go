package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

func decodeOne(t *testing.T, doc string) api.PolicyObject {
	t.Helper()
	docs, err := api.ReadDocuments(strings.NewReader(doc), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := api.DecodePolicy(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGeneratingPolicyCompileErrors checks that what upstream refuses
// when it compiles a GeneratingPolicy is a compile error naming the
// field.
func TestGeneratingPolicyCompileErrors(t *testing.T) {
	const head = `apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: p
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["namespaces"]
`
	cases := []struct {
		name, spec, want string
	}{
		{"unknown function", `  generate:
  - expression: generator.Apply(object.metadata.name, nope())
`, `spec.generate[0].expression: Invalid value`},
		{"wrong argument count", `  generate:
  - expression: generator.Apply(object.metadata.name)
`, `spec.generate[0].expression`},
		{"not a bool", `  generate:
  - expression: "'x'"
`, `must evaluate to bool`},
		{"no generate", `  generate: []
`, `spec.generate: Required value`},
		{"both", `  generate:
  - expression: "true"
    template:
      value: "kind: ConfigMap"
`, `only one of expression or template may be set`},
		{"neither", `  generate:
  - {}
`, `one of expression or template must be set`},
		{"bad interpolation", `  generate:
  - template:
      interpolate: jinja
      value: "kind: ConfigMap"
`, `spec.generate[0].template.interpolate: Unsupported value: "jinja"`},
		{"template YAML", `  generate:
  - template:
      value: "a: [b"
`, `failed to parse YAML`},
		{"template not a mapping", `  generate:
  - template:
      value: "- a"
`, `a document must be a mapping`},
		{"placeholder in a key", `  generate:
  - template:
      interpolate: cel
      value: "kind: ConfigMap\ndata:\n  ((object.metadata.name)): x\n"
`, `placeholders are not supported in mapping keys`},
		{"placeholder syntax", `  generate:
  - template:
      interpolate: cel
      value: "kind: ConfigMap\ndata:\n  a: (( nope( ))\n"
`, `spec.generate[0].template.value`},
		{"unterminated placeholder", `  generate:
  - template:
      interpolate: cel
      value: "kind: ConfigMap\ndata:\n  a: (( object\n"
`, `unterminated placeholder`},
		{"variable", `  variables:
  - name: v
    expression: object.nope(
  generate:
  - expression: "true"
`, `spec.variables[0].expression`},
		{"match condition", `  matchConditions:
  - name: c
    expression: "1"
  generate:
  - expression: "true"
`, `spec.matchConditions[0].expression`},
		{"audit annotation", `  auditAnnotations:
  - key: a
    valueExpression: "1"
  generate:
  - expression: "true"
`, `spec.auditAnnotations[0].valueExpression`},
	}
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := eng.CompilePolicy(decodeOne(t, head+c.spec))
			var ce *engine.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a CompileError", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
		})
	}
	t.Run("no matchConstraints", func(t *testing.T) {
		_, err := eng.CompilePolicy(decodeOne(t, `apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: p
spec:
  generate:
  - expression: "true"
`))
		if err == nil || !strings.Contains(err.Error(), "spec.matchConstraints: Required value") {
			t.Errorf("got %v", err)
		}
	})
}
