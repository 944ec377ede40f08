package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
)

// benchSet compiles the policies of a YAML stream on an engine with an
// in-memory cluster of objs.
func benchSet(b *testing.B, src string, objs ...map[string]any) *engine.PolicySet {
	b.Helper()
	eng, err := engine.New(engine.WithClient(inmem.New(objs...)))
	if err != nil {
		b.Fatal(err)
	}
	set, err := eng.Compile(decodeExample(src)...)
	if err != nil {
		b.Fatal(err)
	}
	return set
}

// BenchmarkGeneratingPolicy evaluates a GeneratingPolicy (a variable, a
// matchCondition, generator.Apply of two objects) on a Namespace, as the
// controller does for each trigger.
func BenchmarkGeneratingPolicy(b *testing.B) {
	set := benchSet(b, `apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: quota
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [namespaces]}
  matchConditions:
  - name: not-system
    expression: "!object.metadata.name.startsWith('kube-')"
  variables:
  - name: ns
    expression: object.metadata.name
  generate:
  - expression: >-
      generator.Apply(variables.ns, [
        {"kind": dyn("ResourceQuota"), "apiVersion": dyn("v1"), "metadata": dyn({"name": "quota"}),
         "spec": dyn({"hard": {"pods": "10", "requests.cpu": "4"}})},
        {"kind": dyn("LimitRange"), "apiVersion": dyn("v1"), "metadata": dyn({"name": "limits"}),
         "spec": dyn({"limits": [{"type": dyn("Container"), "default": dyn({"cpu": "500m"})}]})}])
`)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": fmt.Sprintf("team-%d", i%100)}}
		i++
		resp, err := set.Generate(ctx, &engine.Request{Operation: api.Create, Object: ns})
		if err != nil || len(resp.Policies[0].Rules) != 1 || len(resp.Policies[0].Rules[0].GeneratedResources) != 2 {
			b.Fatalf("%v %+v", err, resp)
		}
	}
}

// BenchmarkCleanupDeletingPolicy evaluates a DeletingPolicy on a Job, as
// the scheduler does for each object it lists.
func BenchmarkCleanupDeletingPolicy(b *testing.B) {
	set := benchSet(b, `apiVersion: policies.kyverno.io/v1
kind: DeletingPolicy
metadata:
  name: completed-jobs
spec:
  schedule: "0 * * * *"
  matchConstraints:
    resourceRules:
    - {apiGroups: [batch], apiVersions: [v1], resources: [jobs]}
  conditions:
  - name: completed
    expression: "object.status.conditions.exists(c, c.type == 'Complete' && c.status == 'True')"
`)
	job := map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "j", "namespace": "ci"},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Complete", "status": "True"}}}}
	benchCleanup(b, set, job)
}

// BenchmarkCleanupPolicy evaluates a ClusterCleanupPolicy (match with a
// selector, an any condition on target) on a Deployment.
func BenchmarkCleanupPolicy(b *testing.B) {
	set := benchSet(b, `apiVersion: kyverno.io/v2
kind: ClusterCleanupPolicy
metadata:
  name: cleandeploy
spec:
  schedule: "*/5 * * * *"
  match:
    any:
    - resources:
        kinds: [Deployment]
        selector:
          matchLabels:
            canremove: "true"
  conditions:
    any:
    - key: "{{ target.spec.replicas }}"
      operator: LessThan
      value: 2
`)
	dep := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "d", "namespace": "shop", "labels": map[string]any{"canremove": "true"}},
		"spec":     map[string]any{"replicas": int64(1)}}
	benchCleanup(b, set, dep)
}

func benchCleanup(b *testing.B, set *engine.PolicySet, obj map[string]any) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := set.Cleanup(ctx, &engine.Request{Object: obj, NamespaceLabels: map[string]string{}})
		if err != nil || len(resp.Policies[0].Rules) != 1 || resp.Policies[0].Rules[0].Status != engine.StatusPass {
			b.Fatalf("%v %+v", err, resp)
		}
	}
}
