package policytest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/policytest"
)

// TestGeneratedEachChecked checks that every resource a generate rule
// produces for a trigger is compared with the generatedResource file: with
// a file whose copy of one of the two CostCenterBindings of the payments
// Namespace differs, that resource's row fails and the other passes.
func TestGeneratedEachChecked(t *testing.T) {
	tc, err := policytest.Load("testdata/features/generate-custom-kind/kyverno-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var results []policytest.Result
	for _, r := range tc.Results {
		if r.Rule == "cost-centers" {
			r.GeneratedResource = "../../generate-mismatch/generated-amer-wrong.yaml"
			r.Resources = []string{"payments"}
			results = append(results, r)
		}
	}
	tc.Results = results
	rows, err := policytest.Run(context.Background(), tc, policytest.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want one per generated resource (2): %+v", len(rows), rows)
	}
	passed, mismatched := 0, 0
	for _, r := range rows {
		if r.Passed {
			passed++
		} else if strings.Contains(r.Reason, "Generated resource didn't match") {
			mismatched++
		}
	}
	if passed != 1 || mismatched != 1 {
		t.Errorf("rows %+v: want one passing and one mismatched", rows)
	}
}
