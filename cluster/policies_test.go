package cluster

import (
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// requireLabel is a ClusterPolicy requiring the label on Pods; broken makes
// its pattern refer to an unknown variable syntax that does not compile.
func requireLabel(name, label string, broken bool) *unstructured.Unstructured {
	rule := map[string]any{
		"name":  "check",
		"match": map[string]any{"any": []any{map[string]any{"resources": map[string]any{"kinds": []any{"Pod"}}}}},
		"validate": map[string]any{
			"failureAction": "Enforce",
			"message":       "label " + label + " is required",
			"pattern":       map[string]any{"metadata": map[string]any{"labels": map[string]any{label: "?*"}}},
		},
	}
	if broken {
		rule["validate"].(map[string]any)["deny"] = map[string]any{"conditions": "not a list"}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
		"metadata": map[string]any{"name": name, "generation": int64(1)},
		"spec":     map[string]any{"rules": []any{rule}},
	}}
}

func pod(labels map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "namespace": "default", "labels": labels},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}},
	}
}

func blocked(t *testing.T, set *engine.PolicySet, labels map[string]any) bool {
	t.Helper()
	resp, err := set.Validate(t.Context(), &engine.Request{Operation: api.Create, Object: pod(labels)})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Blocked()
}

func TestPolicySourceKeepsThePreviousVersionOfABrokenPolicy(t *testing.T) {
	var src *PolicySource
	var mu sync.Mutex
	var changes []PolicyChange
	h, dyn := fakeHost(t, nil, []runtime.Object{requireLabel("need-team", "team", false)}, func(h *Host) {
		var err error
		if src, err = NewPolicySource(h, PolicySourceOptions{}); err != nil {
			t.Fatal(err)
		}
		src.Subscribe(func(c PolicyChange) {
			mu.Lock()
			defer mu.Unlock()
			changes = append(changes, c)
		})
	})
	_ = h
	eventually(t, "the policy", func() bool { return len(src.Set().Policies()) == 1 })
	if !blocked(t, src.Set(), nil) || blocked(t, src.Set(), map[string]any{"team": "x"}) {
		t.Fatal("need-team does not serve")
	}
	ctx := t.Context()
	ri := dyn.Resource(ClusterPolicies)

	// a new version that does not compile: the old one keeps serving
	bad := requireLabel("need-team", "owner", true)
	bad.SetGeneration(2)
	if _, err := ri.Update(ctx, bad, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the compile error", func() bool { return src.Errors()["need-team"] != nil })
	if !blocked(t, src.Set(), nil) || blocked(t, src.Set(), map[string]any{"team": "x"}) {
		t.Error("the previous version of need-team no longer serves")
	}

	// a good version replaces it and clears the error
	good := requireLabel("need-team", "owner", false)
	good.SetGeneration(3)
	if _, err := ri.Update(ctx, good, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the error cleared", func() bool { return src.Errors()["need-team"] == nil })
	if blocked(t, src.Set(), map[string]any{"owner": "x"}) || !blocked(t, src.Set(), map[string]any{"team": "x"}) {
		t.Error("the new version of need-team does not serve")
	}

	// an annotation alone (the generation stays) is seen as well
	cur, err := ri.Get(ctx, "need-team", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.SetAnnotations(map[string]string{"policies.kyverno.io/severity": "high"})
	if _, err := ri.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new annotation", func() bool {
		ps := src.Set().Policies()
		return len(ps) == 1 && ps[0].Source().GetAnnotations()["policies.kyverno.io/severity"] == "high"
	})

	if err := ri.Delete(ctx, "need-team", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no policy", func() bool { return len(src.Set().Policies()) == 0 })
	mu.Lock()
	last := changes[len(changes)-1]
	mu.Unlock()
	if last.New != nil || last.Old == nil || last.Old.Source().GetName() != "need-team" {
		t.Errorf("last change = %+v, want the deletion of need-team", last)
	}
}
