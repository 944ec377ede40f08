package report_test

import (
	"context"
	"fmt"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/report"
)

// A controller writes only the reports that changed since its last
// write, one per resource, named after its UID: TakeChanged names them, Render renders each (false: it emptied,
// delete it), and MarkChanged takes back those it failed to write.
func ExampleStore_TakeChanged() {
	_, set := exampleSet()
	store := report.NewStore(report.Options{Clock: exampleClock})
	scan := func(pod map[string]any) {
		resp, err := set.Validate(context.Background(), &engine.Request{Object: pod, Background: true})
		if err != nil {
			panic(err)
		}
		uid := pod["metadata"].(map[string]any)["uid"].(string)
		if err := store.Update(uid, resp.Policies, true); err != nil {
			panic(err)
		}
	}
	write := func() {
		for _, key := range store.TakeChanged() {
			r, ok := store.Render(key)
			if !ok {
				fmt.Println("delete", key.Namespace, key.Name)
				continue
			}
			fmt.Println("write", key.Namespace, key.Name, r.Scope.Kind, r.Scope.Name, r.Summary.Pass, r.Summary.Fail)
		}
	}
	scan(examplePod("web", "u1", map[string]any{"team": "shop"}))
	scan(examplePod("db", "u2", nil))
	write()
	scan(examplePod("db", "u2", nil)) // the same results: nothing to write
	write()
	store.Delete("u1")
	store.Delete("u2")
	write()
	// Output:
	// write default u1 Pod web 1 0
	// write default u2 Pod db 0 1
	// delete default u1
	// delete default u2
}

// A webhook replica turns its admission results into report entries; the
// controller's Store records them with SetAdmission, ordered by the time
// of the request.
func ExampleAdmissionEntries() {
	_, set := exampleSet()
	pod := examplePod("db", "u2", nil)
	resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod})
	if err != nil {
		panic(err)
	}
	entries, err := report.AdmissionEntries(resp.Policies, "u2", report.Options{Clock: exampleClock})
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		fmt.Println(e.Policy, e.Rule, e.Result, e.Properties["process"])
	}

	store := report.NewStore(report.Options{Clock: exampleClock})
	recorded, _ := store.SetAdmission("u2", 200, entries)
	stale, _ := store.SetAdmission("u2", 100, nil) // an earlier request, seen later
	fmt.Println(recorded, stale, store.Keys())
	// Output:
	// require-team check-team fail background scan
	// true false [{default u2}]
}

// EntryResult is the result a report would show, without the entry: fail
// becomes warn for an Audit policy with the CLI's --audit-warn.
func ExampleEntryResult() {
	_, set := exampleSet()
	resp, err := set.Validate(context.Background(), &engine.Request{Object: examplePod("db", "u2", nil)})
	if err != nil {
		panic(err)
	}
	pr := &resp.Policies[0]
	fmt.Println(report.EntryResult(pr, &pr.Rules[0], false), report.EntryResult(pr, &pr.Rules[0], true))
	// Output: fail warn
}
