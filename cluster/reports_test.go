package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gavelpolicy/gavel/engine"
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

	h, dyn, src := podsHost(t, []runtime.Object{audit,
		podObject("good", map[string]any{"team": "a"}), podObject("bad", nil)}, 1, "list", "get")
	ctx := t.Context()
	r := newReporter(h, src, report.Options{})
	if err := r.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	// one report per Pod, named after it, owned by it
	for uid, want := range map[string]string{"uid-good": "pass=1 fail=0", "uid-bad": "pass=0 fail=1"} {
		if got := reportSummary(t, dyn, PolicyReports, uid); got != want {
			t.Errorf("%s: summary %s, want %s", uid, got, want)
		}
	}
	checkOwnedReport(t, dyn, PolicyReports, "good")
	checkOwnedReport(t, dyn, PolicyReports, "bad")

	// the failing Pod is deleted: its report goes (the reporter deletes
	// it, where no garbage collector runs), the other stays
	if err := dyn.Resource(schemaPods).Namespace("default").Delete(ctx, "bad", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if got := reportSummary(t, dyn, PolicyReports, "uid-bad"); got != "none" {
		t.Errorf("after the deletion: the Pod's report is %s", got)
	}
	if got := reportSummary(t, dyn, PolicyReports, "uid-good"); got != "pass=1 fail=0" {
		t.Errorf("after the deletion: the other Pod's report is %s", got)
	}
	if err := dyn.Resource(schemaPods).Namespace("default").Delete(ctx, "good", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if got := reportSummary(t, dyn, PolicyReports, "uid-good"); got != "none" {
		t.Errorf("the report of a deleted Pod is still there: %s", got)
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

	h, dyn, src := podsHost(t, []runtime.Object{audit}, 1, "list", "watch")
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
		rep, err := dyn.Resource(PolicyReports).Namespace("default").Get(ctx, "uid-bad", metav1.GetOptions{})
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
// in the reports of their resources: a ValidatingPolicy (Audit), a
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
	h, dyn, src := podsHost(t, objs, 3, "list", "get")
	ctx := t.Context()
	if err := newReporter(h, src, report.Options{}).Scan(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ policy, source, summary string }{
		{"need-owner", report.SourceValidatingPolicy, "pass=1 fail=1"},
		{"add-team", report.SourceMutatingPolicy, "pass=1 fail=1"},
		{"no-latest", report.SourceValidatingAdmissionPolicy, "pass=2 fail=0"},
	} {
		if got := entrySummary(t, dyn, PolicyReports, tt.policy, "uid-good", "uid-bad"); got != tt.summary {
			t.Errorf("%s: summary %s, want %s", tt.policy, got, tt.summary)
		}
	}
	// every policy's entries in the report of their resource, each with
	// its source
	for _, uid := range []string{"uid-good", "uid-bad"} {
		rep, err := dyn.Resource(PolicyReports).Namespace("default").Get(ctx, uid, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", uid, err)
		}
		results, _, _ := unstructured.NestedSlice(rep.Object, "results")
		sources := map[string]string{}
		for _, r := range results {
			m := r.(map[string]any)
			sources[m["policy"].(string)] = m["source"].(string)
			if uid == "uid-bad" && m["policy"] == "add-team" && m["message"] != "mutation is not applied" {
				t.Errorf("%s: message %v", uid, m["message"])
			}
		}
		want := map[string]string{"need-owner": report.SourceValidatingPolicy, "add-team": report.SourceMutatingPolicy,
			"no-latest": report.SourceValidatingAdmissionPolicy}
		if !maps.Equal(sources, want) {
			t.Errorf("%s: sources %v, want %v", uid, sources, want)
		}
	}
}

// TestReporterWritesPerChangeSet counts the objects a Reporter writes
// (creates, patches and deletes of reports) for the change sets of a
// cluster of 1,000 Pods and three Audit policies: one report per Pod, so
// a change of one Pod writes one object, and a scan that changes nothing
// writes none, nor does a new leader's when the reports are there.
func TestReporterWritesPerChangeSet(t *testing.T) {
	const n = 1000
	objs := []runtime.Object{auditPolicy("need-team", "team", true), auditPolicy("need-app", "app", true), auditPolicy("need-owner", "owner", true)}
	for i := range n {
		p := podObject(fmt.Sprintf("p%d", i), map[string]any{"app": "a"})
		p.SetNamespace("default")
		objs = append(objs, p)
	}
	h, dyn, src := podsHost(t, objs, 3, "list", "get")
	ctx := t.Context()
	r := newReporter(h, src, report.Options{})
	pods := dyn.Resource(schemaPods).Namespace("default")
	steps := []struct {
		name   string
		change func()
		writes int // objects written by the scan after the change
	}{
		{"first scan", func() {}, n},
		{"nothing changed", func() {}, 0},
		{"one Pod labelled", func() {
			p, err := pods.Get(ctx, "p7", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p.SetLabels(map[string]string{"app": "a", "team": "t"})
			if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"one Pod deleted", func() {
			if err := pods.Delete(ctx, "p8", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}, 1},
	}
	// scan runs a scan of r and counts the objects it writes
	scan := func(name string, r *reporter) int {
		dyn.ClearActions()
		if err := r.Scan(ctx); err != nil {
			t.Fatal(err)
		}
		writes, bytes := 0, 0
		for _, a := range dyn.Actions() {
			if a.GetResource() != PolicyReports {
				continue
			}
			switch a := a.(type) {
			case k8stesting.CreateAction:
				writes++
				data, _ := json.Marshal(a.GetObject())
				bytes += len(data)
			case k8stesting.PatchAction:
				writes++
				bytes += len(a.GetPatch())
			case k8stesting.DeleteAction:
				writes++
			}
		}
		t.Logf("%s: %d objects written, %d bytes", name, writes, bytes)
		return writes
	}
	for _, st := range steps {
		st.change()
		if writes := scan(st.name, r); writes != st.writes {
			t.Errorf("%s: %d objects written, want %d", st.name, writes, st.writes)
		}
	}
	// a new leader finds the reports it would write in the cluster
	if writes := scan("a new leader's scan", newReporter(h, src, report.Options{})); writes != 0 {
		t.Errorf("a new leader's scan: %d objects written, want 0", writes)
	}
}

// TestReporterWriteBudget checks that a Write writes at most maxWrites
// reports, the older changes first, and the rest on the next Writes.
func TestReporterWriteBudget(t *testing.T) {
	h, src, dyn := reportsHost(t, auditPolicy("need-team", "team", true))
	ctx := t.Context()
	r := newReporter(h, src, report.Options{})
	r.maxWrites = 100
	record := func(i int) {
		p := podObject(fmt.Sprintf("p%03d", i), nil)
		p.SetNamespace("default")
		resp, err := src.Set().Validate(ctx, &engine.Request{Object: p.Object, Background: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.store.Update(string(p.GetUID()), resp.Policies, true); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 250 {
		record(i)
	}
	creates := func() []string {
		var out []string
		for _, a := range dyn.Actions() {
			if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource() == PolicyReports {
				out = append(out, c.GetObject().(*unstructured.Unstructured).GetName())
			}
		}
		dyn.ClearActions()
		return out
	}
	for i, want := range []int{100, 100, 51, 0} {
		if i == 1 {
			record(999) // a later change waits for the backlog
		}
		if err := r.Write(ctx); err != nil {
			t.Fatal(err)
		}
		got := creates()
		if len(got) != want {
			t.Errorf("write %d: %d reports created, want %d", i, len(got), want)
		}
		if i == 1 && slices.Contains(got, "uid-p999") {
			t.Errorf("write %d: the later change was written before the backlog", i)
		}
		if i == 2 && !slices.Contains(got, "uid-p999") {
			t.Errorf("write %d: the later change is not written", i)
		}
	}
	if r.pending() {
		t.Error("a backlog is left")
	}
}

// podsHost is a fake host serving objs, whose discovery lists Pods with
// the given verbs, and its policy source once it holds the given number
// of policies.
func podsHost(t *testing.T, objs []runtime.Object, policies int, verbs ...string) (*Host, *dynfake.FakeDynamicClient, *PolicySource) {
	t.Helper()
	var src *PolicySource
	h, dyn := fakeHost(t, nil, objs, func(h *Host) {
		h.kube.(*kubefake.Clientset).Resources = []*metav1.APIResourceList{{
			GroupVersion: "v1",
			APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: verbs}},
		}}
		var err error
		if src, err = NewPolicySource(h, PolicySourceOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	eventually(t, "the policies", func() bool { return len(src.Set().Policies()) == policies })
	return h, dyn, src
}

// The informers' transform drops managedFields and leaves an object
// without them untouched: such an object may be shared with its source,
// so the race detector must see no write to it.
func TestDropManagedFields(t *testing.T) {
	cases := []struct {
		name string
		in   map[string]any
		want map[string]any
	}{
		{
			name: "dropped",
			in:   map[string]any{"name": "a", "managedFields": []any{map[string]any{"manager": "kubectl"}}},
			want: map[string]any{"name": "a"},
		},
		{
			name: "absent",
			in:   map[string]any{"name": "a"},
			want: map[string]any{"name": "a"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{"metadata": tc.in}}
			var wg sync.WaitGroup
			if tc.name == "absent" {
				wg.Go(func() { _ = len(tc.in["name"].(string)) + len(tc.in) })
			}
			got, err := dropManagedFields(u)
			wg.Wait()
			if err != nil || got != any(u) {
				t.Fatalf("dropManagedFields = %v, %v; want the same object", got, err)
			}
			if md := u.Object["metadata"]; !reflect.DeepEqual(md, tc.want) {
				t.Errorf("metadata = %v, want %v", md, tc.want)
			}
		})
	}
	if got, err := dropManagedFields("not an object"); got != "not an object" || err != nil {
		t.Errorf("a non-object = %v, %v; want it returned as is", got, err)
	}
}
