package cluster

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	deletingPolicies = schema.GroupVersionResource{Group: "policies.kyverno.io", Version: "v1", Resource: "deletingpolicies"}
	cleanupPolicies  = schema.GroupVersionResource{Group: "kyverno.io", Version: "v2", Resource: "cleanuppolicies"}
	jobs             = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
)

func job(ns, name string, complete bool, labels map[string]any) *unstructured.Unstructured {
	status := "False"
	if complete {
		status = "True"
	}
	md := map[string]any{"name": name, "namespace": ns}
	if labels != nil {
		md["labels"] = labels
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": md,
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Complete", "status": status}}}}}
}

var created = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func completedJobsPolicy() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policies.kyverno.io/v1", "kind": "DeletingPolicy",
		"metadata": map[string]any{"name": "completed-jobs", "generation": int64(1), "creationTimestamp": created.Format(time.RFC3339)},
		"spec": map[string]any{
			"schedule":                  "0 * * * *",
			"deletionPropagationPolicy": "Background",
			"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
				"apiGroups": []any{"batch"}, "apiVersions": []any{"v1"}, "resources": []any{"jobs"}}}},
			"conditions": []any{map[string]any{"name": "complete",
				"expression": "object.status.conditions.exists(c, c.type == 'Complete' && c.status == 'True')"}},
		},
	}}
}

func tmpJobsCleanup() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kyverno.io/v2", "kind": "CleanupPolicy",
		"metadata": map[string]any{"name": "tmp-jobs", "namespace": "ci", "generation": int64(1), "creationTimestamp": created.Format(time.RFC3339)},
		"spec": map[string]any{
			"schedule": "*/30 * * * *",
			"match":    map[string]any{"any": []any{map[string]any{"resources": map[string]any{"kinds": []any{"Job"}, "names": []any{"tmp-*"}}}}},
		},
	}}
}

func TestSchedulerRunsDeletingPolicies(t *testing.T) {
	var src *PolicySource
	objs := []runtime.Object{completedJobsPolicy(), tmpJobsCleanup(),
		job("ci", "done", true, nil), job("ci", "running", false, nil), job("ci", "tmp-1", false, nil),
		job("other", "tmp-2", false, nil), job("other", "done-too", true, map[string]any{"app.kubernetes.io/managed-by": "gavel"})}
	// success events: generateSuccessEvents (the omitted reasons do not
	// apply to the cleanup's events)
	h, dyn := fakeHostWith(t, Options{}, nil, objs, func(h *Host) {
		var err error
		if src, err = NewPolicySource(h, PolicySourceOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	h.cfg.Store(&Config{GenerateSuccessEvents: true})
	if !src.WaitForSync(t.Context()) {
		t.Fatal("no sync")
	}
	eventually(t, "both deleting policies", func() bool { return len(src.Set().Policies()) == 2 })
	now := created.Add(29 * time.Minute)
	s := NewScheduler(h, src, SchedulerOptions{Now: func() time.Time { return now }, MaxWait: time.Hour})
	// not due yet: the cleanup policy runs at 00:30, the other at 01:00
	if wait := s.runDue(t.Context()); wait != time.Minute {
		t.Errorf("wait %v, want 1m", wait)
	}
	exists := func(ns, name string) bool {
		_, err := dyn.Resource(jobs).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
		return err == nil
	}
	for _, j := range []string{"ci/done", "ci/running", "ci/tmp-1", "other/tmp-2"} {
		ns, name, _ := cut(j)
		if !exists(ns, name) {
			t.Fatalf("%s deleted before its time", j)
		}
	}
	now = created.Add(31 * time.Minute)
	s.runDue(t.Context())
	if exists("ci", "tmp-1") || !exists("other", "tmp-2") {
		t.Error("the CleanupPolicy must delete ci/tmp-1 only (its namespace)")
	}
	if !exists("ci", "done") {
		t.Error("the DeletingPolicy ran before its time")
	}
	now = created.Add(61 * time.Minute)
	s.runDue(t.Context())
	if exists("ci", "done") || !exists("ci", "running") {
		t.Error("the DeletingPolicy must delete the completed job only")
	}
	if !exists("other", "done-too") {
		t.Error("an object managed by gavel was deleted")
	}
	p, err := dyn.Resource(deletingPolicies).Get(t.Context(), "completed-jobs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(p.Object, "status", "lastExecutionTime"); got != now.Format(time.RFC3339) {
		t.Errorf("status.lastExecutionTime = %q", got)
	}
	want := map[string]string{
		"DeletingPolicy done": "successfully deleted the target resource Job/ci/done",
		"CleanupPolicy tmp-1": "successfully cleaned up the target resource Job/ci/tmp-1",
	}
	found := map[string]string{}
	eventually(t, "the deletion events", func() bool {
		for _, ev := range listEvents(t, h) {
			if ev.Namespace != "ci" && ev.Namespace != "default" || (ev.Regarding.Namespace != "" && ev.Regarding.Namespace != ev.Namespace) {
				t.Errorf("event %s in %s about an object of %q", ev.Name, ev.Namespace, ev.Regarding.Namespace)
			}
			if ev.Reason == EventReasonPolicyApplied && ev.Related != nil && ev.Action == EventActionCleanedUp &&
				ev.ReportingController == EventSourceCleanup && ev.Type == "Normal" {
				found[ev.Regarding.Kind+" "+ev.Related.Name] = ev.Note
			}
		}
		return len(found) == len(want)
	})
	for k, note := range want {
		if found[k] != note {
			t.Errorf("event of %s: %q, want %q", k, found[k], note)
		}
	}
	// a new scheduler (a new leader) reads the last run from the status
	s2 := NewScheduler(h, src, SchedulerOptions{Now: func() time.Time { return now.Add(time.Minute) }, MaxWait: time.Hour})
	if err := dyn.Tracker().Add(job("ci", "done-again", true, nil)); err != nil {
		t.Fatal(err)
	}
	s2.runDue(t.Context())
	if !exists("ci", "done-again") {
		t.Error("the new leader ran the policy again before its next time")
	}
	_ = cleanupPolicies
}

func cut(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return "", s, false
}
