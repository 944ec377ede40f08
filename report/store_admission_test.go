package report

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// TestStoreBackgroundReplacesAdmission checks the merge of the two
// triggers: a scan replaces the admission entries of the policies with
// background enabled, even where it has no entry of its own, and keeps
// those of admission-only policies.
func TestStoreBackgroundReplacesAdmission(t *testing.T) {
	f := newStoreFixture(t)
	p := pod("payments", "p", "uid-p", "nginx:1.25", map[string]any{"app": "web"})
	s := NewStore(Options{Clock: fixedClock})
	if err := s.Update("uid-p", validate(t, f.set, p, false), false); err != nil {
		t.Fatal(err)
	}
	// the scan evaluates require-team without a rule result (its rule no
	// longer applies): its admission entry goes; team-label is not
	// evaluated: its admission entry stays, as enforce-only's (background:
	// false)
	res := validate(t, f.set, p, true)
	res = slices.DeleteFunc(res, func(pr engine.PolicyResult) bool { return pr.Policy.Source().GetName() == "team-label" })
	for i := range res {
		if res[i].Policy.Source().GetName() == "require-team" {
			res[i].Rules = nil
		}
	}
	if err := s.Update("uid-p", res, true); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(entries(s.reportObjects()), "\n")
	want := strings.Join([]string{
		"uid-p|payments|enforce-bg|no-latest|p|pass",
		"uid-p|payments|enforce-only|need-app|p|pass",
		"uid-p|payments|payments/team-label|check-team|p|fail",
	}, "\n")
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestStoreSetAdmission(t *testing.T) {
	f := newStoreFixture(t)
	failing := pod("default", "p", "uid-p", "nginx:1.25", map[string]any{"app": "a"})
	fixed := pod("default", "p", "uid-p", "nginx:1.25", map[string]any{"app": "a", "team": "a"})
	blocked := pod("default", "p", "uid-p", "nginx:latest", map[string]any{"app": "a"})
	admit := func(obj map[string]any) []api.PolicyReportResult {
		t.Helper()
		e, err := AdmissionEntries(validate(t, f.set, obj, false), "", Options{Clock: fixedClock})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	if got := admit(blocked); got != nil {
		t.Errorf("entries of a denied request: %v", got)
	}
	s := NewStore(Options{Clock: fixedClock})
	team := func() string {
		for _, e := range entries(s.reportObjects()) {
			if strings.Contains(e, "|require-team|") {
				return e[strings.LastIndexByte(e, '|')+1:]
			}
		}
		return "none"
	}
	steps := []struct {
		obj     map[string]any
		at      int64
		applied bool
		want    string
	}{
		{failing, 10, true, "fail"},
		{fixed, 5, false, "fail"}, // older than what the store has
		{fixed, 20, true, "pass"},
		{failing, 20, true, "fail"}, // same time: the later call wins
	}
	for i, st := range steps {
		ok, err := s.SetAdmission("uid-p", st.at, admit(st.obj))
		if err != nil || ok != st.applied {
			t.Errorf("step %d: applied %v, %v; want %v", i, ok, err, st.applied)
		}
		if got := team(); got != st.want {
			t.Errorf("step %d: %s, want %s", i, got, st.want)
		}
	}
	// the same results through Update and through SetAdmission render the
	// same reports
	u := NewStore(Options{Clock: fixedClock})
	_ = u.Update("uid-p", validate(t, f.set, failing, false), false)
	if a, b := reportsYAML(t, u.reportObjects()), reportsYAML(t, s.reportObjects()); string(a) != string(b) {
		t.Errorf("Update and SetAdmission differ:\n%s\n%s", a, b)
	}
	if _, err := s.SetAdmission("", 1, nil); !errors.Is(err, ErrNoUID) {
		t.Errorf("empty uid: %v", err)
	}
	if _, err := AdmissionEntries([]engine.PolicyResult{{}}, "u", Options{}); err == nil {
		t.Error("a result without a policy is accepted")
	}
}

func TestStorePrune(t *testing.T) {
	f := newStoreFixture(t)
	p := pod("payments", "p", "uid-p", "nginx:1.25", nil)
	cases := []struct {
		name string
		live func(policy, rule string) (bool, bool)
		want []string
	}{
		{"all live", func(string, string) (bool, bool) { return true, true }, []string{
			"uid-p|payments|enforce-bg|no-latest|p|pass",
			"uid-p|payments|payments/team-label|check-team|p|fail",
			"uid-p|payments|require-team|check-team|p|fail",
		}},
		{"a rule renamed", func(policy, rule string) (bool, bool) { return rule != "no-latest", true }, []string{
			"uid-p|payments|payments/team-label|check-team|p|fail",
			"uid-p|payments|require-team|check-team|p|fail",
		}},
		{"background turned off", func(policy, rule string) (bool, bool) { return true, policy != "require-team" }, []string{
			"uid-p|payments|enforce-bg|no-latest|p|pass",
			"uid-p|payments|payments/team-label|check-team|p|fail",
		}},
		{"policy deleted", func(policy, rule string) (bool, bool) { return policy != "payments/team-label", true }, []string{
			"uid-p|payments|enforce-bg|no-latest|p|pass",
			"uid-p|payments|require-team|check-team|p|fail",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewStore(Options{Clock: fixedClock})
			if err := s.Update("uid-p", validate(t, f.set, p, true), true); err != nil {
				t.Fatal(err)
			}
			s.TakeChanged()
			s.Prune(c.live)
			if got := entries(s.reportObjects()); !slices.Equal(got, c.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			changed := len(s.TakeChanged()) > 0
			if changed != (len(c.want) < 3) {
				t.Errorf("changed %v", changed)
			}
		})
	}
}

// TestStoreChanged checks the reports a writer is told to write: only
// those whose entries changed, timestamps aside, and those that emptied;
// one report per resource, whatever the number of its policies.
func TestStoreChanged(t *testing.T) {
	f := newStoreFixture(t)
	now := int64(100)
	s := NewStore(Options{Clock: func() time.Time { return time.Unix(now, 0) }})
	keys := func() string {
		var out []string
		for _, k := range s.TakeChanged() {
			r, ok := s.Render(k)
			state := "gone"
			if ok {
				state = fmt.Sprint(len(entries([]any{r.Object()})))
			}
			out = append(out, fmt.Sprintf("%s/%s=%s", k.Namespace, k.Name, state))
		}
		return strings.Join(out, " ")
	}
	a := pod("payments", "a", "uid-a", "nginx:1.25", nil)
	b := pod("other", "b", "uid-b", "nginx:1.25", nil)
	bFixed := pod("other", "b", "uid-b", "nginx:1.25", map[string]any{"team": "x"})
	steps := []struct {
		name string
		do   func()
		want string
	}{
		{"first scan", func() {
			_ = s.Update("uid-a", validate(t, f.set, a, true), true)
			_ = s.Update("uid-b", validate(t, f.set, b, true), true)
		}, "other/uid-b=2 payments/uid-a=3"},
		{"same results later", func() {
			now += 60
			_ = s.Update("uid-a", validate(t, f.set, a, true), true)
			_ = s.Update("uid-b", validate(t, f.set, b, true), true)
		}, ""},
		{"one resource changes", func() { _ = s.Update("uid-b", validate(t, f.set, bFixed, true), true) }, "other/uid-b=2"},
		{"deletion", func() { s.Delete("uid-b") }, "other/uid-b=gone"},
		{"deleting again", func() { s.Delete("uid-b") }, ""},
	}
	for _, st := range steps {
		st.do()
		if got := keys(); got != st.want {
			t.Errorf("%s: changed %q, want %q", st.name, got, st.want)
		}
	}
	s.MarkChanged(ReportKey{Namespace: "payments", Name: "uid-a"})
	if got := keys(); got != "payments/uid-a=3" {
		t.Errorf("marked again: %q", got)
	}
	if rendered := s.reportObjects(); len(rendered) != 1 || len(s.UIDs()) != 1 {
		t.Errorf("%d reports, %d resources", len(rendered), len(s.UIDs()))
	}
}

// TestStoreSharesWhatEntriesHaveAlike checks that the store keeps one copy
// of the process-only properties and messages of many resources, and one
// resource reference per resource (its report's scope), and that renders
// still copy them.
func TestStoreSharesWhatEntriesHaveAlike(t *testing.T) {
	f := newStoreFixture(t)
	s := NewStore(Options{Clock: fixedClock})
	for _, uid := range []string{"a", "b"} {
		if err := s.Update(uid, validate(t, f.set, pod("payments", uid, uid, "nginx:1.25", nil), true), true); err != nil {
			t.Fatal(err)
		}
	}
	a, b := s.res["a"].background, s.res["b"].background
	if len(a) < 2 || len(a) != len(b) {
		t.Fatalf("%d and %d entries", len(a), len(b))
	}
	ptr := func(m map[string]string) uintptr { return reflect.ValueOf(m).Pointer() }
	if ptr(a[0].result.Properties) != ptr(b[0].result.Properties) {
		t.Error("the process-only properties are not shared")
	}
	if unsafe.StringData(a[0].result.Message) != unsafe.StringData(b[0].result.Message) {
		t.Error("equal messages are not shared")
	}
	if len(a[0].result.Resources) != 0 || s.res["a"].scope.Name != "a" || s.res["b"].scope.Name != "b" {
		t.Error("resource references: one per resource, the scope")
	}
	r := s.reportObjects()[0].(*api.PolicyReport)
	if ptr(r.Results[0].Properties) == ptr(a[0].result.Properties) {
		t.Error("a render shares the store's properties")
	}
}

func TestStoreRemoveAdmission(t *testing.T) {
	f := newStoreFixture(t)
	p := pod("payments", "p", "uid-p", "nginx:1.25", map[string]any{"app": "web"})
	s := NewStore(Options{Clock: fixedClock})
	_ = s.Update("uid-p", validate(t, f.set, p, false), false)
	_ = s.Update("uid-p", validate(t, f.set, p, true), true)
	if got := strings.Join(entries(s.reportObjects()), "\n"); !strings.Contains(got, "enforce-only|need-app|p|pass") {
		t.Fatalf("no admission entry of enforce-only:\n%s", got)
	}
	s.TakeChanged()
	s.RemoveAdmission("enforce-only") // an admission-only policy changed
	s.RemoveAdmission("require-team") // its admission entry is gone already: the scan replaced it
	want := []string{
		"uid-p|payments|enforce-bg|no-latest|p|pass",
		"uid-p|payments|payments/team-label|check-team|p|fail",
		"uid-p|payments|require-team|check-team|p|fail",
	}
	if got := entries(s.reportObjects()); !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := s.TakeChanged(); len(got) != 1 || got[0].Name != "uid-p" {
		t.Errorf("changed %v", got)
	}
}

// The parts of one admission request (its Fail and Ignore webhooks'
// policies) merge; a later request replaces them all, an earlier one is
// ignored.
func TestStoreMergeAdmission(t *testing.T) {
	f := newStoreFixture(t)
	failing := pod("default", "p", "uid-p", "nginx:1.25", map[string]any{"app": "a"})
	all, err := AdmissionEntries(validate(t, f.set, failing, false), "", Options{Clock: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	var first, second []api.PolicyReportResult
	for _, e := range all {
		if e.Policy == all[0].Policy {
			first = append(first, e)
		} else {
			second = append(second, e)
		}
	}
	if len(first) == 0 || len(second) == 0 {
		t.Fatalf("the fixture's results come from one policy: %v", all)
	}
	count := func(s *Store) int { return len(entries(s.reportObjects())) }
	whole := NewStore(Options{Clock: fixedClock})
	if _, err := whole.SetAdmission("uid-p", 10, all); err != nil {
		t.Fatal(err)
	}
	s := NewStore(Options{Clock: fixedClock})
	for i, part := range [][]api.PolicyReportResult{first, second} {
		if ok, err := s.MergeAdmission("uid-p", "req-1", int64(10+i), part); !ok || err != nil {
			t.Fatalf("part %d: %v, %v", i, ok, err)
		}
	}
	if a, b := reportsYAML(t, whole.reportObjects()), reportsYAML(t, s.reportObjects()); string(a) != string(b) {
		t.Errorf("two parts of one request differ from the whole:\n%s\n%s", b, a)
	}
	if ok, _ := s.MergeAdmission("uid-p", "req-0", 5, second); ok {
		t.Error("an earlier request was merged")
	}
	if ok, _ := s.MergeAdmission("uid-p", "req-2", 20, first); !ok || count(s) != len(first) {
		t.Errorf("a later request: applied %v, %d entries, want %d", ok, count(s), len(first))
	}
}
