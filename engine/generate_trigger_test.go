package engine_test

import (
	"context"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
)

// TestGenerateTriggerUpdate checks the results of generate rules on an
// UPDATE of their trigger at admission: a rule that no longer matches the
// new object (excluded, or a kind selector that fails) but matched the
// old one fails and queues the deletion of its synchronized downstream; a
// rule whose preconditions no longer hold is skipped and queues nothing,
// since upstream confines trigger synchronization to match/exclude.
func TestGenerateTriggerUpdate(t *testing.T) {
	raw, err := os.ReadFile("../generate/testdata/triggersync/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ns := func(labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": "payments", "uid": "u-1", "labels": labels}}
	}
	created := ns(map[string]any{"tier": "app", "team": "payments"})
	tests := []struct {
		name     string
		old, cur map[string]any
		// want is rule: status; deleted lists the rules whose
		// downstream a queued request deletes
		want    map[string]engine.Status
		deleted []string
	}{
		{
			name: "relabelled: preconditions no longer met",
			old:  created, cur: ns(map[string]any{"tier": "batch"}),
			want: map[string]engine.Status{"default-deny": engine.StatusSkip, "team-edit": engine.StatusSkip},
		},
		{
			name: "one precondition still met",
			old:  created, cur: ns(map[string]any{"team": "payments"}),
			want: map[string]engine.Status{"default-deny": engine.StatusSkip, "team-edit": engine.StatusPass},
		},
		{
			name: "excluded",
			old:  created, cur: ns(map[string]any{"tier": "app", "team": "payments", "gavel.io/unmanaged": "true"}),
			want:    map[string]engine.Status{"default-deny": engine.StatusFail, "team-edit": engine.StatusFail},
			deleted: []string{"default-deny", "team-edit"},
		},
		{
			name: "excluded and relabelled",
			old:  created, cur: ns(map[string]any{"gavel.io/unmanaged": "true"}),
			want:    map[string]engine.Status{"default-deny": engine.StatusFail, "team-edit": engine.StatusFail},
			deleted: []string{"default-deny", "team-edit"},
		},
		{
			name: "excluded before and after",
			old:  ns(map[string]any{"gavel.io/unmanaged": "true"}), cur: ns(map[string]any{"gavel.io/unmanaged": "true", "tier": "app"}),
			want: map[string]engine.Status{},
		},
		{
			name: "no longer excluded, preconditions not met",
			old:  ns(map[string]any{"gavel.io/unmanaged": "true", "tier": "app"}), cur: ns(map[string]any{"tier": "batch"}),
			want: map[string]engine.Status{"default-deny": engine.StatusSkip, "team-edit": engine.StatusSkip},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &genQueue{}
			set := genSet(t, string(raw), engine.WithClient(inmem.New()), engine.WithUpdateRequestQueue(q))
			resp, err := set.Generate(context.Background(), &engine.Request{Operation: api.Update, Object: tt.cur, OldObject: tt.old})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]engine.Status{}
			for _, pr := range resp.Policies {
				for _, r := range pr.Rules {
					got[r.Name] = r.Status
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("results %v, want %v", got, tt.want)
			}
			for rule, st := range tt.want {
				if got[rule] != st {
					t.Errorf("rule %s: %s, want %s", rule, got[rule], st)
				}
			}
			var deleted []string
			for _, ur := range q.urs {
				for _, rc := range ur.Spec.RuleContext {
					if rc.DeleteDownstream {
						deleted = append(deleted, rc.Rule)
						if rc.Trigger.UID != "u-1" || rc.Trigger.Name != "payments" {
							t.Errorf("rule %s: deletion for trigger %+v, want the old object", rc.Rule, rc.Trigger)
						}
					}
				}
			}
			sort.Strings(deleted)
			if strings.Join(deleted, ",") != strings.Join(tt.deleted, ",") {
				t.Errorf("downstream deleted for rules %v, want %v", deleted, tt.deleted)
			}
		})
	}
}
