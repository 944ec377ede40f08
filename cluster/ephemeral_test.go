package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/report"
)

// auditPolicy is an Audit policy requiring a label on Pods, with
// background: false (admission only) or true.
func auditPolicy(name, label string, background bool) *unstructured.Unstructured {
	p := requireLabel(name, label, false)
	_ = unstructured.SetNestedField(p.Object, "Audit", "spec", "validationFailureAction")
	_ = unstructured.SetNestedField(p.Object, background, "spec", "background")
	rules, _, _ := unstructured.NestedSlice(p.Object, "spec", "rules")
	delete(rules[0].(map[string]any)["validate"].(map[string]any), "failureAction")
	_ = unstructured.SetNestedSlice(p.Object, rules, "spec", "rules")
	return p
}

// reportsHost is a started Host serving pods and the ephemeral reports,
// with a PolicySource of the policies among objs.
func reportsHost(t *testing.T, objs ...runtime.Object) (*Host, *PolicySource, *fake.FakeDynamicClient) {
	t.Helper()
	var src *PolicySource
	h, dyn := fakeHost(t, nil, objs, func(h *Host) {
		h.kube.(*kubefake.Clientset).Resources = []*metav1.APIResourceList{{
			GroupVersion: "v1",
			APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: []string{"list", "watch"}}},
		}}
		m := h.mapper.(*meta.DefaultRESTMapper)
		m.Add(schema.GroupVersionKind{Group: "reports.kyverno.io", Version: "v1", Kind: "EphemeralReport"}, meta.RESTScopeNamespace)
		m.Add(schema.GroupVersionKind{Group: "reports.kyverno.io", Version: "v1", Kind: "ClusterEphemeralReport"}, meta.RESTScopeRoot)
		var err error
		if src, err = NewPolicySource(h, PolicySourceOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	// every policy among objs, not the first one compiled
	if !src.WaitForSync(t.Context()) {
		t.Fatal("policies not synced")
	}
	return h, src, dyn
}

func admissionOf(t *testing.T, src *PolicySource, op api.AdmissionOperation, obj map[string]any) (*engine.Request, *engine.Response) {
	t.Helper()
	req := &engine.Request{Operation: op, Object: obj, UID: "req-" + string(op) + "-" + obj["metadata"].(map[string]any)["name"].(string)}
	resp, err := src.Set().Validate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	return req, resp
}

func TestAdmissionReportsRecord(t *testing.T) {
	h, src, _ := reportsHost(t, auditPolicy("need-team", "team", false), requireLabel("need-app", "app", false))
	a := NewAdmissionReports(h, AdmissionReportsOptions{QueueSize: 1})
	good := podObject("good", map[string]any{"app": "a"}).Object
	noApp := podObject("no-app", nil).Object
	noUID := pod(map[string]any{"app": "a"})
	cases := []struct {
		name string
		op   api.AdmissionOperation
		obj  map[string]any
		edit func(*engine.Request)
		want bool
	}{
		{"dry run", api.Create, good, func(r *engine.Request) { r.DryRun = true }, false},
		{"deletion", api.Delete, good, nil, false},
		{"subresource", api.Update, good, func(r *engine.Request) { r.SubResource = "status" }, false},
		{"no uid", api.Create, noUID, nil, false},
		{"denied", api.Create, noApp, nil, false},
		{"admitted", api.Create, good, nil, true},
		{"queue full", api.Update, good, nil, false},
	}
	for _, c := range cases {
		req, resp := admissionOf(t, src, c.op, c.obj)
		if c.edit != nil {
			c.edit(req)
		}
		if got := a.Record(req, resp, ""); got != c.want {
			t.Errorf("%s: recorded %v, want %v", c.name, got, c.want)
		}
	}
	if a.Dropped() != 1 {
		t.Errorf("dropped %d, want 1", a.Dropped())
	}

	// the leader evaluates the resources of background policies itself:
	// their admission results are not recorded
	h, src, _ = reportsHost(t, auditPolicy("bg-only", "team", true))
	a = NewAdmissionReports(h, AdmissionReportsOptions{})
	if a.recordAll(admissionOf(t, src, api.Create, podObject("p", nil).Object)) {
		t.Error("the results of a background policy are recorded")
	}
}

// TestAdmissionReportsQueueFullDoesNotBlock checks that Record returns at
// once with a full queue and no writer.
func TestAdmissionReportsQueueFullDoesNotBlock(t *testing.T) {
	h, src, _ := reportsHost(t, auditPolicy("need-team", "team", false))
	a := NewAdmissionReports(h, AdmissionReportsOptions{QueueSize: 4})
	req, resp := admissionOf(t, src, api.Create, podObject("p", nil).Object)
	start := time.Now()
	recorded := 0
	for range 1000 {
		if a.Record(req, resp, "") {
			recorded++
		}
	}
	if recorded != 4 || a.Dropped() != 996 {
		t.Errorf("recorded %d, dropped %d", recorded, a.Dropped())
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("1000 records took %s", d)
	}
}

// testFlush is the period of the Reporters' writes in tests.
const testFlush = 50 * time.Millisecond

// runReporter runs a Reporter until the test ends.
func runReporter(t *testing.T, r *reporter) {
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { r.Run(ctx, time.Hour) })
	t.Cleanup(func() { stop(); wg.Wait() })
}

func runAdmissionReports(t *testing.T, a *AdmissionReports) {
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { a.Run(ctx) })
	t.Cleanup(func() { stop(); wg.Wait() })
}

func reportSummary(t *testing.T, dyn *fake.FakeDynamicClient, gvr schema.GroupVersionResource, name string) string {
	rep, err := dyn.Resource(gvr).Namespace("default").Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return "none"
	}
	return summary(rep)
}

// entrySummary is the summary of a policy's entries in the reports of
// the resources with the given UIDs in namespace default, "none" when
// there is none.
func entrySummary(t *testing.T, dyn *fake.FakeDynamicClient, gvr schema.GroupVersionResource, policy string, uids ...string) string {
	pass, fail, n := 0, 0, 0
	for _, uid := range uids {
		rep, err := dyn.Resource(gvr).Namespace("default").Get(t.Context(), uid, metav1.GetOptions{})
		if err != nil {
			continue
		}
		results, _, _ := unstructured.NestedSlice(rep.Object, "results")
		for _, r := range results {
			m, _ := r.(map[string]any)
			if m["policy"] != policy {
				continue
			}
			n++
			switch m["result"] {
			case "pass":
				pass++
			case "fail":
				fail++
			}
		}
	}
	if n == 0 {
		return "none"
	}
	return fmt.Sprintf("pass=%d fail=%d", pass, fail)
}

// checkOwnedReport checks the layout of the report of a Pod of namespace
// default: named after its UID, owned by it, naming it in its scope.
func checkOwnedReport(t *testing.T, dyn *fake.FakeDynamicClient, gvr schema.GroupVersionResource, name string) {
	t.Helper()
	uid := "uid-" + name
	rep, err := dyn.Resource(gvr).Namespace("default").Get(t.Context(), uid, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owners := rep.GetOwnerReferences()
	if len(owners) != 1 || owners[0].APIVersion != "v1" || owners[0].Kind != "Pod" || owners[0].Name != name || string(owners[0].UID) != uid {
		t.Errorf("owner references %+v", owners)
	}
	scope, _, _ := unstructured.NestedStringMap(rep.Object, "scope")
	want := map[string]string{"apiVersion": "v1", "kind": "Pod", "namespace": "default", "name": name, "uid": uid}
	if !maps.Equal(scope, want) {
		t.Errorf("scope %v, want %v", scope, want)
	}
	if rep.GetLabels()[report.LabelManagedBy] != report.ManagedByKyverno {
		t.Errorf("labels %v", rep.GetLabels())
	}
	results, _, _ := unstructured.NestedSlice(rep.Object, "results")
	for _, r := range results {
		if _, ok := r.(map[string]any)["resources"]; ok {
			t.Errorf("an entry names its resource: %v", r)
		}
	}
}

func ephemeralCount(t *testing.T, dyn *fake.FakeDynamicClient) int {
	l, err := dyn.Resource(EphemeralReports).Namespace("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

// TestAdmissionReportsReachThePolicyReport follows an admission-only
// Audit policy's failure from the webhook's recorder to the namespace's
// PolicyReport, and out of it when the Pod is deleted; the ephemeral
// report is deleted once merged.
func TestAdmissionReportsReachThePolicyReport(t *testing.T) {
	for name, format := range map[string]report.Format{"wgpolicy": report.WGPolicy, "openreports": report.OpenReports} {
		t.Run(name, func(t *testing.T) {
			h, src, dyn := reportsHost(t, auditPolicy("need-team", "team", false))
			a := NewAdmissionReports(h, AdmissionReportsOptions{})
			runAdmissionReports(t, a)
			r := newReporter(h, src, report.Options{Format: format})
			r.flushEvery = testFlush
			runReporter(t, r)
			gvr := PolicyReports
			if format == report.OpenReports {
				gvr = OpenReports
			}

			p := podObject("bad", nil)
			p.SetNamespace("default")
			pods := dyn.Resource(schemaPods).Namespace("default")
			if _, err := pods.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			// no background scan reports a background: false policy
			time.Sleep(4 * testFlush)
			if got := reportSummary(t, dyn, gvr, "uid-bad"); got != "none" {
				t.Fatalf("report before the admission: %s", got)
			}
			if !a.recordAll(admissionOf(t, src, api.Create, p.Object)) {
				t.Fatal("not recorded")
			}
			eventually(t, "the admission's fail entry", func() bool {
				return reportSummary(t, dyn, gvr, "uid-bad") == "pass=0 fail=1"
			})
			checkOwnedReport(t, dyn, gvr, "bad")
			eventually(t, "the ephemeral report deleted", func() bool { return ephemeralCount(t, dyn) == 0 })
			if a.Written() != 1 {
				t.Errorf("written %d", a.Written())
			}
			if err := pods.Delete(t.Context(), "bad", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the report gone", func() bool { return reportSummary(t, dyn, gvr, "uid-bad") == "none" })
		})
	}
}

// TestReporterMergeRules checks how admission and background results of
// one resource merge in the cluster: a background policy's scan replaces
// its admission entry, an admission-only policy keeps its own, an
// ephemeral report whose resource never appears is dropped, a changed
// policy's admission entries go, and a rule removed from a policy takes
// its entries along.
func TestReporterMergeRules(t *testing.T) {
	h, src, dyn := reportsHost(t, auditPolicy("bg", "team", true), auditPolicy("adm", "team", false))
	a := NewAdmissionReports(h, AdmissionReportsOptions{})
	runAdmissionReports(t, a)
	r := newReporter(h, src, report.Options{})
	r.ephemeralWait = 300 * time.Millisecond
	r.flushEvery = testFlush
	runReporter(t, r)

	// admitted without the label, then labelled outside admission (no
	// webhook saw the update): the scan of the update passes bg, adm keeps
	// the admission's failure
	bad := podObject("p", nil)
	bad.SetNamespace("default")
	pods := dyn.Resource(schemaPods).Namespace("default")
	created, err := pods.Create(t.Context(), bad, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !a.recordAll(admissionOf(t, src, api.Create, bad.Object)) {
		t.Fatal("not recorded")
	}
	eventually(t, "the admission's entries", func() bool {
		return entrySummary(t, dyn, PolicyReports, "adm", "uid-p") == "pass=0 fail=1" &&
			entrySummary(t, dyn, PolicyReports, "bg", "uid-p") == "pass=0 fail=1"
	})
	fixed := created.DeepCopy()
	fixed.SetLabels(map[string]string{"team": "a"})
	fixed.SetResourceVersion("2")
	if _, err := pods.Update(t.Context(), fixed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the scan's pass", func() bool { return entrySummary(t, dyn, PolicyReports, "bg", "uid-p") == "pass=1 fail=0" })
	time.Sleep(4 * testFlush)
	if got := entrySummary(t, dyn, PolicyReports, "adm", "uid-p"); got != "pass=0 fail=1" {
		t.Errorf("the admission-only policy's entry: %s", got)
	}

	// an admission whose resource never reaches the informers (another
	// webhook denied it after ours): dropped and deleted
	ghost := podObject("ghost", nil)
	ghost.SetNamespace("default")
	if !a.recordAll(admissionOf(t, src, api.Create, ghost.Object)) {
		t.Fatal("not recorded")
	}
	eventually(t, "the ghost's ephemeral report deleted", func() bool { return a.Written() == 2 && ephemeralCount(t, dyn) == 0 })
	if got := entrySummary(t, dyn, PolicyReports, "adm", "uid-p"); got != "pass=0 fail=1" {
		t.Errorf("after the ghost: %s", got)
	}

	// the admission-only policy changes: the entry its previous version
	// made goes; a new admission (the labelled Pod updated) reports again
	editRule := func(generation int64, edit func(rule map[string]any)) {
		t.Helper()
		pol, err := dyn.Resource(ClusterPolicies).Get(t.Context(), "adm", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rules, _, _ := unstructured.NestedSlice(pol.Object, "spec", "rules")
		edit(rules[0].(map[string]any))
		_ = unstructured.SetNestedSlice(pol.Object, rules, "spec", "rules")
		pol.SetGeneration(generation)
		if _, err := dyn.Resource(ClusterPolicies).Update(t.Context(), pol, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	editRule(2, func(rule map[string]any) { rule["validate"].(map[string]any)["message"] = "a team, please" })
	eventually(t, "the stale entry gone", func() bool { return entrySummary(t, dyn, PolicyReports, "adm", "uid-p") == "none" })
	if !a.recordAll(admissionOf(t, src, api.Update, fixed.Object)) {
		t.Fatal("not recorded")
	}
	eventually(t, "the new version's entry", func() bool { return entrySummary(t, dyn, PolicyReports, "adm", "uid-p") == "pass=1 fail=0" })

	// the rule is renamed: its entry goes
	editRule(3, func(rule map[string]any) { rule["name"] = "renamed" })
	eventually(t, "the renamed rule's entry gone", func() bool { return entrySummary(t, dyn, PolicyReports, "adm", "uid-p") == "none" })
}

// TestReporterKeepsAdmissionEntriesAcrossLeaders checks that a new leader
// takes back the entries of admission-only policies from the reports in
// the cluster instead of deleting them.
func TestReporterKeepsAdmissionEntriesAcrossLeaders(t *testing.T) {
	h, src, dyn := reportsHost(t, auditPolicy("adm", "team", false))
	p := podObject("p", nil)
	p.SetNamespace("default")
	if _, err := dyn.Resource(schemaPods).Namespace("default").Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a := NewAdmissionReports(h, AdmissionReportsOptions{})
	runAdmissionReports(t, a)
	first := newReporter(h, src, report.Options{})
	first.flushEvery = testFlush
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { first.Run(ctx, time.Hour) })
	a.recordAll(admissionOf(t, src, api.Create, p.Object))
	eventually(t, "the entry", func() bool { return entrySummary(t, dyn, PolicyReports, "adm", "uid-p") == "pass=0 fail=1" })
	stop()
	wg.Wait()

	second := newReporter(h, src, report.Options{})
	if err := second.Write(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := entrySummary(t, dyn, PolicyReports, "adm", "uid-p"); got != "pass=0 fail=1" {
		t.Errorf("after a new leader's first write: %s", got)
	}
	if len(second.store.UIDs()) != 1 {
		t.Errorf("%d resources in the new leader's store", len(second.store.UIDs()))
	}
	rep, _ := dyn.Resource(PolicyReports).Namespace("default").Get(t.Context(), "uid-p", metav1.GetOptions{})
	msg, _, _ := unstructured.NestedSlice(rep.Object, "results")
	if len(msg) != 1 || !strings.Contains(msg[0].(map[string]any)["message"].(string), "team") {
		t.Errorf("results %v", msg)
	}
}

// TestReporterKeepsEphemeralUntilWritten checks that an ephemeral report
// stays while the report of its resource cannot be written, and goes once
// it is, whatever happens to the reports of other resources.
func TestReporterKeepsEphemeralUntilWritten(t *testing.T) {
	h, src, dyn := reportsHost(t, auditPolicy("need-team", "team", false), auditPolicy("other", "owner", true))
	var failing atomic.Value // "*": every report, or a report's name
	failing.Store("*")
	dyn.PrependReactor("create", "policyreports", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured).GetName()
		if f := failing.Load().(string); f == "*" || f == name {
			return true, nil, errors.New("etcd is down")
		}
		return false, nil, nil
	})
	a := NewAdmissionReports(h, AdmissionReportsOptions{})
	runAdmissionReports(t, a)
	r := newReporter(h, src, report.Options{})
	r.flushEvery = testFlush
	runReporter(t, r)
	p := podObject("p", nil)
	p.SetNamespace("default")
	q := podObject("q", map[string]any{"team": "a"}) // the background policy fails it
	q.SetNamespace("default")
	for _, o := range []*unstructured.Unstructured{p, q} {
		if _, err := dyn.Resource(schemaPods).Namespace("default").Create(t.Context(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	a.recordAll(admissionOf(t, src, api.Create, p.Object))
	eventually(t, "the ephemeral report", func() bool { return a.Written() == 1 })
	time.Sleep(6 * testFlush)
	if n := ephemeralCount(t, dyn); n != 1 {
		t.Fatalf("%d ephemeral reports while the report cannot be written", n)
	}
	failing.Store("uid-q") // the report of the other Pod still fails
	eventually(t, "the report", func() bool { return entrySummary(t, dyn, PolicyReports, "need-team", "uid-p") == "pass=0 fail=1" })
	eventually(t, "the ephemeral report deleted", func() bool { return ephemeralCount(t, dyn) == 0 })
	if got := reportSummary(t, dyn, PolicyReports, "uid-q"); got != "none" {
		t.Errorf("uid-q: %s", got)
	}
}

// recordAll records the results of a webhook that serves every policy.
func (a *AdmissionReports) recordAll(req *engine.Request, resp *engine.Response) bool {
	return a.Record(req, resp, "")
}

// The admission results of admission-only CEL policies reach their
// reports through the ephemeral reports: a ValidatingPolicy's (from
// Validate) and a MutatingPolicy's (from Mutate), with upstream's
// sources, though their results name no rule of the policy.
func TestAdmissionReportsOfCELKinds(t *testing.T) {
	vpol := objectOf(t, `apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: need-owner}
spec:
  validationActions: [Audit]
  evaluation:
    background: {enabled: false}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "has(object.metadata.labels) && 'owner' in object.metadata.labels"
    message: owner label required
`)
	mpol := objectOf(t, `apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: add-team}
spec:
  evaluation:
    background: {enabled: false}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'team': 'a'}}}"
`)
	h, src, dyn := reportsHost(t, vpol, mpol)
	eventually(t, "both policies", func() bool { return len(src.Set().Policies()) == 2 })
	a := NewAdmissionReports(h, AdmissionReportsOptions{})
	runAdmissionReports(t, a)
	r := newReporter(h, src, report.Options{})
	r.flushEvery = testFlush
	runReporter(t, r)

	p := podObject("bad", nil)
	if _, err := dyn.Resource(schemaPods).Namespace("default").Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	req := &engine.Request{Operation: api.Create, Object: p.Object, UID: "req-cel"}
	m, err := src.Set().Mutate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	v, err := src.Set().Validate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Record(req, m, "mutate-fail") || !a.Record(req, v, "fail") {
		t.Fatal("not recorded")
	}
	eventually(t, "the ValidatingPolicy's entry", func() bool { return entrySummary(t, dyn, PolicyReports, "need-owner", "uid-bad") == "pass=0 fail=1" })
	eventually(t, "the MutatingPolicy's entry", func() bool { return entrySummary(t, dyn, PolicyReports, "add-team", "uid-bad") == "pass=1 fail=0" })
	eventually(t, "the ephemeral reports deleted", func() bool { return ephemeralCount(t, dyn) == 0 })
}

// TestReporterReplacesPerPolicyReports checks the move from the reports
// of earlier versions (one per policy, cpol-<policy>): a new leader
// deletes them, and takes the entries of admission-only policies back
// into the reports of their resources.
func TestReporterReplacesPerPolicyReports(t *testing.T) {
	old := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
		"metadata": map[string]any{"name": "cpol-adm", "namespace": "default",
			"labels": map[string]any{report.LabelManagedBy: report.ManagedByKyverno}},
		"results": []any{map[string]any{
			"policy": "adm", "rule": "check", "result": "fail", "source": "kyverno", "message": "label team is required",
			"resources": []any{map[string]any{"apiVersion": "v1", "kind": "Pod", "namespace": "default", "name": "p", "uid": "uid-p"}},
		}},
		"summary": map[string]any{"fail": int64(1)},
	}}
	p := podObject("p", nil)
	p.SetNamespace("default")
	h, src, dyn := reportsHost(t, auditPolicy("adm", "team", false), old, p)
	r := newReporter(h, src, report.Options{})
	if err := r.Write(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := reportSummary(t, dyn, PolicyReports, "cpol-adm"); got != "none" {
		t.Errorf("the per-policy report is still there: %s", got)
	}
	if got := entrySummary(t, dyn, PolicyReports, "adm", "uid-p"); got != "pass=0 fail=1" {
		t.Errorf("the Pod's report: %s", got)
	}
	checkOwnedReport(t, dyn, PolicyReports, "p")
}
