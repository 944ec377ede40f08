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

// TestMutateExistingTargets checks the results of mutate-existing rules
// outside admission: a target selecting same-named resources in several
// namespaces gives one result per resource, each patched in its own
// namespace; a named target that does not exist is the rule's error; a
// wildcard target that selects nothing gives no result.
func TestMutateExistingTargets(t *testing.T) {
	raw, err := os.ReadFile("../policytest/testdata/features/mutate-existing/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	secret := func(ns, name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": name, "namespace": ns}}
	}
	cluster := inmem.New(secret("team-a", "db-credentials"), secret("team-b", "db-credentials"), secret("team-a", "api-token"))
	set := genSet(t, string(raw), engine.WithClient(cluster))
	trigger := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "rotation", "namespace": "default"}, "data": map[string]any{"reason": "audit"}}
	resp, err := set.Mutate(context.Background(), &engine.Request{Operation: api.Create, Object: trigger})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pr := range resp.Policies {
		for _, r := range pr.Rules {
			row := r.Name + " " + string(r.Status)
			for _, pt := range r.PatchedTargets {
				md := pt["metadata"].(map[string]any)
				ann, _ := md["annotations"].(map[string]any)
				row += " " + md["namespace"].(string) + "/" + md["name"].(string) + "=" + ann["example.com/rotate"].(string)
			}
			if r.Status == engine.StatusError && !strings.Contains(r.Message, "not found") {
				t.Errorf("%s: error %q does not say the target was not found", r.Name, r.Message)
			}
			got = append(got, row)
		}
	}
	sort.Strings(got)
	want := []string{
		"mark-for-rotation pass team-a/db-credentials=audit",
		"mark-for-rotation pass team-b/db-credentials=audit",
		"stamp-missing error",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("results:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
