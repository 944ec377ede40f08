package report_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/loader"
	"github.com/gavelpolicy/gavel/report"
)

const examplePolicy = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team
  annotations:
    policies.kyverno.io/category: Best Practices
    policies.kyverno.io/severity: medium
spec:
  validationFailureAction: Audit
  rules:
  - name: check-team
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "The label team is required."
      pattern:
        metadata:
          labels:
            team: "?*"
`

// exampleSet compiles the example policy with a fixed clock: the reports
// take the engine's clock (report.Options.Clock) so that their timestamps
// are those of the evaluation.
func exampleSet() (*engine.Engine, *engine.PolicySet) {
	s := &loader.Set{}
	if err := s.Read(strings.NewReader(examplePolicy), "example.yaml"); err != nil {
		panic(err)
	}
	eng, err := engine.New(engine.WithClock(exampleClock))
	if err != nil {
		panic(err)
	}
	set, err := eng.Compile(s.Policies...)
	if err != nil {
		panic(err)
	}
	return eng, set
}

func examplePod(name, uid string, labels map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   map[string]any{"name": name, "namespace": "default", "uid": uid, "labels": labels},
	}
}

// A batch host scans each resource as `gavel apply` does, builds the
// reports of the run and prints them as the upstream CLI does.
func ExampleBuild() {
	_, set := exampleSet()
	var results []engine.PolicyResult
	for _, pod := range []map[string]any{
		examplePod("web", "u1", map[string]any{"team": "shop"}),
		examplePod("db", "u2", nil),
	} {
		resp, err := set.Scan(context.Background(), &engine.Request{Object: pod, Background: true})
		if err != nil {
			panic(err)
		}
		results = append(results, resp.Policies...)
	}
	reports, err := report.Build(results, report.Options{Clock: exampleClock})
	if err != nil {
		panic(err)
	}
	_ = report.WriteTable(os.Stdout, reports)
	_ = report.WriteYAML(os.Stdout, reports)
	// Output:
	// NAME     PASS   FAIL   WARN   ERROR   SKIP
	// merged   1      1      0      0       0
	// apiVersion: wgpolicyk8s.io/v1alpha2
	// kind: ClusterPolicyReport
	// metadata:
	//   name: merged
	// results:
	// - category: Best Practices
	//   message: validation rule 'check-team' passed.
	//   policy: require-team
	//   properties:
	//     process: background scan
	//   resources:
	//   - apiVersion: v1
	//     kind: Pod
	//     name: web
	//     namespace: default
	//     uid: u1
	//   result: pass
	//   rule: check-team
	//   scored: true
	//   severity: medium
	//   source: kyverno
	//   timestamp:
	//     nanos: 0
	//     seconds: 1666098438
	// - category: Best Practices
	//   message: 'validation error: The label team is required. rule check-team failed at
	//     path /metadata/labels/team/'
	//   policy: require-team
	//   properties:
	//     process: background scan
	//   resources:
	//   - apiVersion: v1
	//     kind: Pod
	//     name: db
	//     namespace: default
	//     uid: u2
	//   result: fail
	//   rule: check-team
	//   scored: true
	//   severity: medium
	//   source: kyverno
	//   timestamp:
	//     nanos: 0
	//     seconds: 1666098438
	// summary:
	//   error: 0
	//   fail: 1
	//   pass: 1
	//   skip: 0
	//   warn: 0
}

// A controller records each admission and background result in a Store
// and writes the reports it renders to the cluster (here, prints them).
func ExampleStore() {
	_, set := exampleSet()
	store := report.NewStore(report.Options{Clock: exampleClock})
	admit := func(pod map[string]any) {
		resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod})
		if err != nil {
			panic(err)
		}
		uid := pod["metadata"].(map[string]any)["uid"].(string)
		if err := store.Update(uid, resp.Policies, false); err != nil {
			panic(err)
		}
	}
	admit(examplePod("web", "u1", map[string]any{"team": "shop"}))
	admit(examplePod("db", "u2", nil))
	for _, r := range store.Reports() {
		obj := r.Object().(*api.PolicyReport) // what a host writes to the cluster
		fmt.Println(obj.Kind, obj.Namespace, obj.Name, obj.Scope.Kind, obj.Scope.Name, obj.Summary.Pass, obj.Summary.Fail)
	}

	store.Delete("u2") // the resource was deleted
	_ = report.WriteTable(os.Stdout, store.Reports())
	// Output:
	// PolicyReport default u1 Pod web 1 0
	// PolicyReport default u2 Pod db 0 1
	// NAMESPACE   NAME   PASS   FAIL   WARN   ERROR   SKIP
	// default     u1     1      0      0      0       0
}

// exampleClock is the examples' clock, the engine's (engine.WithClock)
// and the reports' (Options.Clock).
func exampleClock() time.Time { return time.Unix(1666098438, 0) }
