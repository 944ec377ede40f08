package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// benchContextPolicy has rules with variable context entries, as the
// policy library's often are: one an expression reads, one only a
// message of a rule that passes names, one in a foreach.
const benchContextPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: bench-context
spec:
  validationFailureAction: Audit
  background: false
  rules:
  - name: emptydir-limits
    match:
      any:
      - resources:
          kinds: [Pod]
    context:
    - name: emptydirnames
      variable:
        jmesPath: request.object.spec.volumes[?contains(keys(@), 'emptyDir')].name || ` + "`[]`" + `
    preconditions:
      all:
      - key: "{{ request.operation || 'BACKGROUND' }}"
        operator: AnyIn
        value: [CREATE, UPDATE]
    validate:
      message: "emptyDir volumes {{ emptydirnames }} need limits"
      deny:
        conditions:
          any:
          - key: "{{ length(emptydirnames) }}"
            operator: LessThan
            value: 0
  - name: images
    match:
      any:
      - resources:
          kinds: [Pod]
    context:
    - name: names
      variable:
        jmesPath: request.object.spec.containers[].name
    - name: unread
      variable:
        jmesPath: request.object.metadata.labels
        default: {}
    validate:
      message: "containers {{ names }}"
      foreach:
      - list: request.object.spec.containers
        context:
        - name: image
          variable:
            jmesPath: element.image
        deny:
          conditions:
            any:
            - key: "{{ image }}"
              operator: Equals
              value: "forbidden:latest"
`

// BenchmarkValidateContext evaluates the bench Pods against a policy
// whose rules load context entries.
func BenchmarkValidateContext(b *testing.B) {
	_, pods := loadBench(b)
	docs, err := api.ReadDocuments(strings.NewReader(benchContextPolicy), "bench-context.yaml")
	if err != nil {
		b.Fatal(err)
	}
	p, err := api.DecodePolicy(docs[0])
	if err != nil {
		b.Fatal(err)
	}
	eng, err := engine.New()
	if err != nil {
		b.Fatal(err)
	}
	set, err := eng.Compile(p)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		resp, err := set.Validate(ctx, &engine.Request{Operation: api.Create, Object: pods[i%len(pods)]})
		i++
		if err != nil {
			b.Fatal(err)
		}
		if r := resp.Policies[0].Rules[0]; r.Status != engine.StatusPass {
			b.Fatalf("rule %s: %s %s", r.Name, r.Status, r.Message)
		}
	}
}
