package generate_test

import (
	"os"
	"testing"

	"github.com/gavelpolicy/gavel/api"
)

// TestCustomKindDownstream generates custom resources (kinds no built-in
// schema knows, namespaced and cluster-scoped) for several triggers
// through the controller, and deletes the synchronized ones of a trigger
// that is deleted.
func TestCustomKindDownstream(t *testing.T) {
	raw, err := os.ReadFile("../policytest/testdata/features/generate-custom-kind/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, string(raw))
	payments := namespace("payments", map[string]any{"team": "payments"})
	md := payments["metadata"].(map[string]any)
	md["annotations"] = map[string]any{"finops.example.com/limit": "500", "finops.example.com/centers": "emea,amer"}
	search := namespace("search", map[string]any{"team": "search"})
	for _, ns := range []map[string]any{payments, search} {
		for _, ur := range h.admit(api.Create, ns, nil) {
			if ur.Status.State != api.URCompleted {
				t.Fatalf("%s: %s", ur.Status.State, ur.Status.Message)
			}
		}
	}
	const av = "finops.example.com/v1alpha1"
	budgets := map[string]string{"payments": "500", "search": "100"}
	for ns, limit := range budgets {
		b := h.get(av, "Budget", ns, ns+"-budget")
		if b == nil {
			t.Fatalf("Budget %s/%s-budget not generated", ns, ns)
		}
		if got := b["spec"].(map[string]any)["monthlyLimit"]; got != limit {
			t.Errorf("Budget %s: monthlyLimit %v, want %s", ns, got, limit)
		}
	}
	for _, name := range []string{"payments-emea", "payments-amer", "search-general"} {
		if h.get(av, "CostCenterBinding", "", name) == nil {
			t.Errorf("CostCenterBinding %s not generated", name)
		}
	}
	h.admit(api.Delete, nil, search)
	if h.get(av, "Budget", "search", "search-budget") != nil {
		t.Error("Budget of the deleted trigger kept (synchronize)")
	}
	if h.get(av, "Budget", "payments", "payments-budget") == nil {
		t.Error("Budget of another trigger deleted")
	}
}
