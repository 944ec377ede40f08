package report_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/report"
)

// ExampleStream writes the reports of resources evaluated one after the
// other, rendering each resource's entries as its results come and keeping
// them in a temporary file beyond a memory budget.
func ExampleStream() {
	_, set := exampleSet()
	spill, err := os.CreateTemp("", "report-*")
	if err != nil {
		panic(err)
	}
	defer os.Remove(spill.Name())
	defer spill.Close()
	stream := report.NewStream(report.Options{Clock: exampleClock, Format: report.OpenReports}, spill, 1<<20)
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
	_, set := exampleSet()
	stream := report.NewJSONStream(report.Options{Clock: exampleClock, Format: report.OpenReports}, nil, 0)
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
