package report_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/internal/report"
	"github.com/gavelpolicy/gavel/loader"
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
  background: true
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

func examplePolicySet() *engine.PolicySet {
	s := &loader.Set{}
	if err := s.Read(strings.NewReader(examplePolicy), "example"); err != nil {
		panic(err)
	}
	eng, err := engine.New()
	if err != nil {
		panic(err)
	}
	set, err := eng.Compile(s.Policies...)
	if err != nil {
		panic(err)
	}
	return set
}

func examplePod(name, uid string, labels map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   map[string]any{"name": name, "namespace": "default", "uid": uid, "labels": labels},
		"spec":       map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx"}}},
	}
}

func clock() time.Time { return time.Unix(1666098438, 0) }

func ExampleResult() {
	set := examplePolicySet()
	resp, _ := set.Validate(context.Background(), &engine.Request{Object: examplePod("web", "u1", nil)})
	pr := resp.Policies[0]
	r := report.Result(pr, pr.Rules[0], report.Options{Clock: clock, AuditWarn: true})
	out, _ := yaml.Marshal(r)
	fmt.Print(string(out))
	// Output:
	// category: Best Practices
	// message: 'validation error: The label team is required. rule check-team failed at
	//   path /metadata/labels/team/'
	// policy: require-team
	// properties:
	//   process: background scan
	// resources:
	// - apiVersion: v1
	//   kind: Pod
	//   name: web
	//   namespace: default
	//   uid: u1
	// result: warn
	// rule: check-team
	// scored: true
	// severity: medium
	// source: kyverno
	// timestamp:
	//   nanos: 0
	//   seconds: 1666098438
}

func ExampleBuild() {
	set := examplePolicySet()
	var results []engine.PolicyResult
	for _, pod := range []map[string]any{
		examplePod("web", "u1", map[string]any{"team": "shop"}),
		examplePod("db", "u2", nil),
	} {
		resp, _ := set.Validate(context.Background(), &engine.Request{Object: pod})
		results = append(results, resp.Policies...)
	}
	reports, err := report.Build(results, report.Options{Clock: clock, Format: report.OpenReports})
	if err != nil {
		fmt.Println(err)
		return
	}
	merged := reports[0].(*api.OpenClusterReport)
	fmt.Println(merged.APIVersion, merged.Kind, merged.Name)
	_ = report.WriteTable(os.Stdout, reports)
	// Output:
	// openreports.io/v1alpha1 ClusterReport merged
	// NAME     PASS   FAIL   WARN   ERROR   SKIP
	// merged   1      1      0      0       0
}

func ExampleStore() {
	set := examplePolicySet()
	store := report.NewStore(report.Options{Clock: clock})
	admit := func(pod map[string]any) {
		resp, _ := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod})
		uid := pod["metadata"].(map[string]any)["uid"].(string)
		_ = store.Update(uid, resp.Policies, false)
	}
	admit(examplePod("web", "u1", map[string]any{"team": "shop"}))
	admit(examplePod("db", "u2", nil))
	_ = report.WriteTable(os.Stdout, store.Reports())

	store.Delete("u2")
	_ = report.WriteTable(os.Stdout, store.Reports())
	// Output:
	// NAMESPACE   NAME                PASS   FAIL   WARN   ERROR   SKIP
	// default     cpol-require-team   1      1      0      0       0
	// NAMESPACE   NAME                PASS   FAIL   WARN   ERROR   SKIP
	// default     cpol-require-team   1      0      0      0       0
}

// ExampleStream writes the reports of resources evaluated one after the
// other, rendering each resource's entries as its results come and keeping
// them in a temporary file beyond a memory budget.
func ExampleStream() {
	set := examplePolicySet()
	spill, err := os.CreateTemp("", "report-*")
	if err != nil {
		panic(err)
	}
	defer os.Remove(spill.Name())
	defer spill.Close()
	stream, err := report.NewStream(report.Options{Clock: clock, Format: report.OpenReports}, spill, 1<<20)
	if err != nil {
		panic(err)
	}
	renderer := stream.NewRenderer() // one per goroutine
	for i, labels := range []map[string]any{{"team": "a"}, nil} {
		resp, err := set.Validate(context.Background(), &engine.Request{Object: examplePod(fmt.Sprintf("web-%d", i), "", labels)})
		if err != nil {
			panic(err)
		}
		rendered, err := renderer.Render(resp.Policies)
		if err != nil {
			panic(err)
		}
		// Add takes the resources in order
		if err := stream.Add(rendered); err != nil {
			panic(err)
		}
	}
	var out strings.Builder
	sum, err := stream.WriteReports(&out)
	if err != nil {
		panic(err)
	}
	fmt.Printf("pass %d, fail %d\n", sum.Pass, sum.Fail)
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "  result:") || strings.HasPrefix(line, "    name:") {
			fmt.Println(line)
		}
	}
	// Output:
	// pass 1, fail 1
	//     name: web-0
	//   result: pass
	//     name: web-1
	//   result: fail
}

// ExampleNewJSONStream streams JSON policy reports (one JSON document per
// report, as WriteJSON writes them) with entries kept in memory (no spill).
func ExampleNewJSONStream() {
	set := examplePolicySet()
	stream, err := report.NewJSONStream(report.Options{Clock: clock, Format: report.OpenReports}, nil, 0)
	if err != nil {
		panic(err)
	}
	renderer := stream.NewRenderer()
	for i, labels := range []map[string]any{{"team": "a"}, nil} {
		resp, err := set.Validate(context.Background(), &engine.Request{Object: examplePod(fmt.Sprintf("web-%d", i), "", labels)})
		if err != nil {
			panic(err)
		}
		rendered, err := renderer.Render(resp.Policies)
		if err != nil {
			panic(err)
		}
		if err := stream.Add(rendered); err != nil {
			panic(err)
		}
	}
	var out strings.Builder
	if _, err := stream.WriteReports(&out); err != nil {
		panic(err)
	}
	var doc struct {
		Kind    string `json:"kind"`
		Summary struct {
			Pass int `json:"pass"`
			Fail int `json:"fail"`
		} `json:"summary"`
		Results []struct {
			Result    string `json:"result"`
			Resources []struct {
				Name string `json:"name"`
			} `json:"resources"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		panic(err)
	}
	fmt.Println(doc.Kind, doc.Summary.Pass, doc.Summary.Fail)
	for _, r := range doc.Results {
		fmt.Println(r.Resources[0].Name, r.Result)
	}
	// Output:
	// ClusterReport 1 1
	// web-0 pass
	// web-1 fail
}
