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
	r := newReporter(h, src, report.Options{})
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
	r := newReporter(h, src, report.Options{})
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

// The background scans report on the CEL kinds with upstream's sources,
// each kind in reports of its own: a ValidatingPolicy (Audit), a
// MutatingPolicy (a fail for a resource it would change), a
// ValidatingAdmissionPolicy with its binding.
func TestReporterScansCELKinds(t *testing.T) {
	var objs []runtime.Object
	for _, text := range []string{`apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: need-owner}
spec:
  validationActions: [Audit]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}
  validations:
  - expression: "has(object.metadata.labels) && 'owner' in object.metadata.labels"
    message: owner label required
`, `apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: add-team}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'team': 'a'}}}"
`, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-latest}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "object.spec.containers.all(c, !c.image.endsWith(':latest'))"
    message: no latest
`, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-latest}
spec:
  policyName: no-latest
  validationActions: [Audit]
`} {
		objs = append(objs, objectOf(t, text))
	}
	objs = append(objs, podObject("good", map[string]any{"team": "a", "owner": "b"}), podObject("bad", nil))
	var src *PolicySource
	h, dyn := fakeHost(t, nil, objs, func(h *Host) {
		h.kube.(*kubefake.Clientset).Resources = []*metav1.APIResourceList{{
			GroupVersion: "v1",
			APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: []string{"list", "get"}}},
		}}
		var err error
		if src, err = NewPolicySource(h, PolicySourceOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	eventually(t, "the policies", func() bool { return len(src.Set().Policies()) == 3 })
	ctx := t.Context()
	if err := newReporter(h, src, report.Options{}).Scan(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, source, summary string }{
		{"vpol-need-owner", report.SourceValidatingPolicy, "pass=1 fail=1"},
		{"mpol-add-team", report.SourceMutatingPolicy, "pass=1 fail=1"},
		{"vap-no-latest", report.SourceValidatingAdmissionPolicy, "pass=2 fail=0"},
	} {
		rep, err := dyn.Resource(PolicyReports).Namespace("default").Get(ctx, tt.name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got := summary(rep); got != tt.summary {
			t.Errorf("%s: summary %s, want %s", tt.name, got, tt.summary)
		}
		results, _, _ := unstructured.NestedSlice(rep.Object, "results")
		for _, r := range results {
			m := r.(map[string]any)
			if m["source"] != tt.source {
				t.Errorf("%s: source %v, want %s", tt.name, m["source"], tt.source)
			}
			if tt.name == "mpol-add-team" && m["result"] == "fail" && m["message"] != "mutation is not applied" {
				t.Errorf("%s: message %v", tt.name, m["message"])
			}
		}
	}
}
