package engine_test

import (
	"context"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

type staticGlobals map[string]any

func (g staticGlobals) GlobalContextEntry(_ context.Context, name string) (any, error) {
	return g[name], nil
}

// TestGlobalReferenceVariables checks that a globalReference's name and
// jmesPath are substituted before the entry is read, as upstream's loader
// substitutes them.
func TestGlobalReferenceVariables(t *testing.T) {
	const policy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: quota
spec:
  rules:
  - name: per-team
    match:
      any:
      - resources:
          kinds: [ConfigMap]
    context:
    - name: limit
      globalReference:
        name: "limits-{{ request.object.metadata.labels.tier }}"
        jmesPath: "teams.\"{{ request.object.metadata.namespace }}\""
    validate:
      failureAction: Enforce
      message: "limit {{ limit }}"
      deny:
        conditions:
          any:
          - key: "{{ limit }}"
            operator: LessThan
            value: 1
`
	globals := staticGlobals{
		"limits-gold":   map[string]any{"teams": map[string]any{"shop": 5.0, "lab": 0.0}},
		"limits-bronze": map[string]any{"teams": map[string]any{"shop": 0.0}},
	}
	set := genSet(t, policy, engine.WithGlobalContext(globals))
	cm := func(ns, tier string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "c", "namespace": ns, "labels": map[string]any{"tier": tier}}}
	}
	tests := []struct {
		ns, tier string
		want     engine.Status
	}{
		{"shop", "gold", engine.StatusPass},
		{"lab", "gold", engine.StatusFail},
		{"shop", "bronze", engine.StatusFail},
	}
	for _, tt := range tests {
		resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: cm(tt.ns, tt.tier)})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Policies[0].Rules[0]; got.Status != tt.want {
			t.Errorf("%s/%s: %s (%s), want %s", tt.ns, tt.tier, got.Status, got.Message, tt.want)
		}
	}
}
