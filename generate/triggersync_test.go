package generate_test

import (
	"os"
	"testing"

	"github.com/gavelpolicy/gavel/api"
)

// TestTriggerChangeIgnoresPreconditions checks upstream's rule for trigger
// updates (policy-generate.md: synchronization on trigger changes is
// confined to the match block and does not consider preconditions): a
// relabelled Namespace whose labels no longer meet the preconditions but
// that the rules still match keeps its NetworkPolicy and RoleBinding; a
// Namespace the rules exclude loses them. Both the admission path (the
// engine's UPDATE results queue the requests) and the controller's
// OnTriggerUpdate handler are checked.
func TestTriggerChangeIgnoresPreconditions(t *testing.T) {
	raw, err := os.ReadFile("testdata/triggersync/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	created := map[string]any{"tier": "app", "team": "payments"}
	tests := []struct {
		name   string
		labels map[string]any
		kept   bool
	}{
		{"relabelled: preconditions no longer met", map[string]any{"tier": "batch"}, true},
		{"labels removed", nil, true},
		{"still meeting the preconditions", map[string]any{"tier": "app", "team": "payments", "cost": "x"}, true},
		{"excluded", map[string]any{"tier": "app", "team": "payments", "gavel.io/unmanaged": "true"}, false},
		{"excluded and relabelled", map[string]any{"gavel.io/unmanaged": "true"}, false},
	}
	paths := []struct {
		name   string
		update func(h *harness, old, cur map[string]any)
	}{
		{"admission", func(h *harness, old, cur map[string]any) {
			for _, ur := range h.admit(api.Update, cur, old) {
				if ur.Status.State == api.URFailed {
					t.Fatalf("update request failed: %s", ur.Status.Message)
				}
			}
		}},
		{"controller", func(h *harness, old, cur map[string]any) {
			h.update(cur)
			if _, err := h.ctrl.OnTriggerUpdate(h.ctx, old, cur); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, path := range paths {
		for _, tt := range tests {
			t.Run(path.name+"/"+tt.name, func(t *testing.T) {
				h := newHarness(t, string(raw))
				ns := namespace("payments", created)
				h.admit(api.Create, ns, nil)
				np := func() map[string]any {
					return h.get("networking.k8s.io/v1", "NetworkPolicy", "payments", "default-deny")
				}
				rb := func() map[string]any {
					return h.get("rbac.authorization.k8s.io/v1", "RoleBinding", "payments", "team-edit")
				}
				if np() == nil || rb() == nil {
					t.Fatalf("downstream not generated: NetworkPolicy %v, RoleBinding %v", np() != nil, rb() != nil)
				}
				path.update(h, ns, withLabels(ns, tt.labels))
				if got := np() != nil; got != tt.kept {
					t.Errorf("NetworkPolicy kept = %v, want %v", got, tt.kept)
				}
				if got := rb() != nil; got != tt.kept {
					t.Errorf("RoleBinding kept = %v, want %v", got, tt.kept)
				}
			})
		}
	}
}
