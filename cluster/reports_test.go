package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/gavelpolicy/gavel/report"
)

func podObject(name string, labels map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: pod(labels)}
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name))
	return u
}

func TestReporterScansAndForgetsDeletedResources(t *testing.T) {
	audit := requireLabel("need-team", "team", false)
	_ = unstructured.SetNestedField(audit.Object, "Audit", "spec", "validationFailureAction")
	rules, _, _ := unstructured.NestedSlice(audit.Object, "spec", "rules")
	delete(rules[0].(map[string]any)["validate"].(map[string]any), "failureAction")
	_ = unstructured.SetNestedSlice(audit.Object, rules, "spec", "rules")

	var src *PolicySource
	h, dyn := fakeHost(t, nil, []runtime.Object{audit,
		podObject("good", map[string]any{"team": "a"}), podObject("bad", nil)}, func(h *Host) {
		h.kube.(*kubefake.Clientset).Resources = []*metav1.APIResourceList{{
			GroupVersion: "v1",
			APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: []string{"list", "get"}}},
		}}
		var err error
		if src, err = NewPolicySource(h, PolicySourceOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	eventually(t, "the policy", func() bool { return len(src.Set().Policies()) == 1 })
	ctx := t.Context()
	r := NewReporter(h, src, report.Options{})
	if err := r.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := dyn.Resource(PolicyReports).Namespace("default").Get(ctx, "cpol-need-team", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(rep); got != "pass=1 fail=1" {
		t.Errorf("summary %s, want pass=1 fail=1", got)
	}
	if rep.GetLabels()["app.kubernetes.io/managed-by"] != "kyverno" {
		t.Errorf("labels %v", rep.GetLabels())
	}

	// the failing Pod is deleted: its entry goes, then the report with
	// the last one
	if err := dyn.Resource(schemaPods).Namespace("default").Delete(ctx, "bad", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err = dyn.Resource(PolicyReports).Namespace("default").Get(ctx, "cpol-need-team", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(rep); got != "pass=1 fail=0" {
		t.Errorf("after the deletion: summary %s, want pass=1 fail=0", got)
	}
	if err := dyn.Resource(schemaPods).Namespace("default").Delete(ctx, "good", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(PolicyReports).Namespace("default").Get(ctx, "cpol-need-team", metav1.GetOptions{}); err == nil {
		t.Error("the report of no resource is still there")
	}
}

func summary(u *unstructured.Unstructured) string {
	pass, _, _ := unstructured.NestedFieldNoCopy(u.Object, "summary", "pass")
	fail, _, _ := unstructured.NestedFieldNoCopy(u.Object, "summary", "fail")
	return fmt.Sprintf("pass=%v fail=%v", pass, fail)
}

func TestReporterRunFollowsChanges(t *testing.T) {
	audit := requireLabel("need-team", "team", false)
	_ = unstructured.SetNestedField(audit.Object, "Audit", "spec", "validationFailureAction")
	rules, _, _ := unstructured.NestedSlice(audit.Object, "spec", "rules")
	delete(rules[0].(map[string]any)["validate"].(map[string]any), "failureAction")
	_ = unstructured.SetNestedSlice(audit.Object, rules, "spec", "rules")

	var src *PolicySource
	h, dyn := fakeHost(t, nil, []runtime.Object{audit}, func(h *Host) {
		h.kube.(*kubefake.Clientset).Resources = []*metav1.APIResourceList{{
			GroupVersion: "v1",
			APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: []string{"list", "watch"}}},
		}}
		var err error
		if src, err = NewPolicySource(h, PolicySourceOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	eventually(t, "the policy", func() bool { return len(src.Set().Policies()) == 1 })
	ctx, stop := context.WithCancel(t.Context())
	r := NewReporter(h, src, report.Options{})
	var wg sync.WaitGroup
	wg.Go(func() { r.Run(ctx, time.Hour) })
	defer func() { stop(); wg.Wait() }()

	pods := dyn.Resource(schemaPods).Namespace("default")
	if _, err := pods.Create(ctx, podObject("bad", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	get := func() string {
		rep, err := dyn.Resource(PolicyReports).Namespace("default").Get(ctx, "cpol-need-team", metav1.GetOptions{})
		if err != nil {
			return "none"
		}
		return summary(rep)
	}
	eventually(t, "the fail entry", func() bool { return get() == "pass=0 fail=1" })
	if err := pods.Delete(ctx, "bad", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the report gone", func() bool { return get() == "none" })
}
