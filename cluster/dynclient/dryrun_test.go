package dynclient

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	dynfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestDryRunCreate: the create asks for dryRun=All, and the server's
// object (defaults applied) is returned.
func TestDryRunCreate(t *testing.T) {
	c := fakeClient()
	var dryRun []string
	c.dyn.(*dynfake.FakeDynamicClient).PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca := a.(k8stesting.CreateActionImpl)
		dryRun = ca.CreateOptions.DryRun
		obj := ca.GetObject().DeepCopyObject()
		u := obj.(interface{ UnstructuredContent() map[string]any }).UnstructuredContent()
		u["metadata"].(map[string]any)["uid"] = "dry"
		return true, obj, nil
	})
	out, err := c.DryRunCreate(context.Background(), map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "kyverno-dryrun"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(dryRun) != 1 || dryRun[0] != "All" || out["metadata"].(map[string]any)["uid"] != "dry" {
		t.Errorf("dryRun %v, object %v", dryRun, out)
	}
	if _, err := c.DryRunCreate(context.Background(), map[string]any{"kind": "ConfigMap"}); err == nil {
		t.Error("an object without apiVersion was created")
	}
}
