package chainsaw

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadList(t *testing.T) {
	tests := []struct {
		name      string
		text      string
		withClass bool
		want      []Entry
		err       string
	}{
		{
			name: "skip list",
			text: "# comment\n\nkyverno-policies/a/b   needs a kubelet: Pods run\n",
			want: []Entry{{Test: "kyverno-policies/a/b", Reason: "needs a kubelet: Pods run", Line: 3}},
		},
		{
			name:      "known failures",
			text:      "kyverno-policies/a/b product static webhook kinds: Ingress\n",
			withClass: true,
			want:      []Entry{{Test: "kyverno-policies/a/b", Class: "product", Reason: "static webhook kinds: Ingress", Line: 1}},
		},
		{name: "no reason", text: "kyverno-policies/a/b\n", err: "list:1: kyverno-policies/a/b: no reason"},
		{name: "no class", text: "kyverno-policies/a/b\n", withClass: true, err: "list:1: kyverno-policies/a/b: no class"},
		{name: "class, no reason", text: "x engine\n", withClass: true, err: "list:1: x: no reason"},
		{name: "unknown class", text: "x flaky sometimes\n", withClass: true, err: `list:1: x: unknown class "flaky"`},
		{name: "twice", text: "x a\n# c\nx b\n", err: "list:3: x is listed again (first on line 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadList(strings.NewReader(tc.text), "list", tc.withClass)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestListsName checks the judge's own lists: every entry names a test
// of the corpus (when ../shared is there), with a reason and a class.
func TestListsName(t *testing.T) {
	skips, err := ReadListFile("skip.txt", false)
	if err != nil {
		t.Fatal(err)
	}
	known, err := ReadListFile("failing.txt", true)
	if err != nil {
		t.Fatal(err)
	}
	both := map[string]bool{}
	for _, e := range skips {
		both[e.Test] = true
	}
	for _, e := range known {
		if both[e.Test] {
			t.Errorf("failing.txt:%d: %s is in skip.txt too", e.Line, e.Test)
		}
	}
	shared := os.Getenv("SHARED")
	if shared == "" {
		shared = filepath.Join("..", "..", "..", "shared")
	}
	conformance := filepath.Join(shared, "conformance")
	if _, err := os.Stat(conformance); err != nil {
		t.Skipf("no corpus: %v", err)
	}
	tests, err := Discover(conformance, Suites)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckList(skips, tests, "skip.txt"); err != nil {
		t.Error(err)
	}
	if err := CheckList(known, tests, "failing.txt"); err != nil {
		t.Error(err)
	}
}

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{
		"s1/b/pol/.chainsaw-test", "s1/a/pol/.chainsaw-test/nested/.chainsaw-test",
		"s1/a/nochainsaw", "s2/x/.chainsaw-test", "other/y/.chainsaw-test",
	} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Discover(root, []string{"s1", "s2"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Test{{Name: "s1/a/pol", Suite: "s1"}, {Name: "s1/b/pol", Suite: "s1"}, {Name: "s2/x", Suite: "s2"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := Discover(root, []string{"missing"}); err == nil {
		t.Error("a missing suite: no error")
	}
}

func TestCheckList(t *testing.T) {
	tests := []Test{{Name: "s/a"}, {Name: "s/b"}}
	if err := CheckList([]Entry{{Test: "s/a"}}, tests, "l"); err != nil {
		t.Error(err)
	}
	err := CheckList([]Entry{{Test: "s/a"}, {Test: "s/gone", Line: 7}}, tests, "l")
	if err == nil || err.Error() != "entries naming no test:\nl:7: s/gone" {
		t.Errorf("error %v", err)
	}
}

func TestShard(t *testing.T) {
	var tests []Test
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		tests = append(tests, Test{Name: n})
	}
	names := func(shards [][]Test) [][]string {
		var out [][]string
		for _, s := range shards {
			var ns []string
			for _, t := range s {
				ns = append(ns, t.Name)
			}
			out = append(out, ns)
		}
		return out
	}
	cases := []struct {
		n    int
		want [][]string
	}{
		{1, [][]string{{"a", "b", "c", "d", "e"}}},
		{2, [][]string{{"a", "c", "e"}, {"b", "d"}}},
		{0, [][]string{{"a", "b", "c", "d", "e"}}},
		{9, [][]string{{"a"}, {"b"}, {"c"}, {"d"}, {"e"}}},
	}
	for _, c := range cases {
		if got := names(Shard(tests, c.n)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Shard(%d) = %v, want %v", c.n, got, c.want)
		}
	}
}

func TestFailedTests(t *testing.T) {
	out := `=== RUN   chainsaw
--- FAIL: chainsaw (0.00s)
    --- PASS: chainsaw/kyverno-policies/psa/add-privileged-existing-namespaces/.chainsaw-test[add-privileged-existing-namespaces] (23.07s)
    --- FAIL: chainsaw/kyverno-policies/psa/deny-privileged-profile/.chainsaw-test[deny-privileged-profile] (132.48s)
    --- FAIL: chainsaw/kyverno-policies-cel/x/y/.chainsaw-test (1.00s)
- Failed  tests 2
`
	got, err := FailedTests(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"kyverno-policies/psa/deny-privileged-profile": true, "kyverno-policies-cel/x/y": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestParseReport(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]bool{"kyverno-policies/psa/add-psa-labels": true, "kyverno-policies/psa/cleanup-fails": true}
	got, err := ParseReport(data, "/tmp/judge/tests", failed)
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{Test: "kyverno-policies/psa/add-privileged-existing-namespaces", Outcome: Pass, Seconds: 23.5},
		{Test: "kyverno-policies/psa/add-psa-labels", Outcome: Fail, Seconds: 122,
			Failure: "step-03/operation 1 (assert): v1/Namespace/add-psa-labels-ns01: field not found"},
		{Test: "kyverno-policies/psa/cleanup-fails", Outcome: Fail, Seconds: 10,
			Failure: "failed outside its steps' operations (cleanup or finally): see chainsaw's output"},
		{Test: "kyverno-policies/psa/skipped", Outcome: Skip},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if _, err := ParseReport([]byte("{"), "", nil); err == nil {
		t.Error("a broken report: no error")
	}
}

func TestSummarize(t *testing.T) {
	tests := []Test{
		{Name: "a/pass", Suite: "a"}, {Name: "a/skip", Suite: "a"}, {Name: "a/known", Suite: "a"},
		{Name: "a/fixed", Suite: "a"}, {Name: "a/new", Suite: "a"}, {Name: "a/notrun", Suite: "a"},
		{Name: "b/missing", Suite: "b"}, {Name: "b/known2", Suite: "b"}, {Name: "b/racy", Suite: "b"},
	}
	results := []Result{
		{Test: "a/pass", Outcome: Pass}, {Test: "a/known", Outcome: Fail, Failure: "x"},
		{Test: "a/fixed", Outcome: Pass}, {Test: "a/new", Outcome: Fail, Failure: "boom"},
		{Test: "b/missing", Outcome: Missing, Failure: "not in chainsaw's report"},
		{Test: "b/known2", Outcome: Fail, Failure: "y"}, {Test: "b/racy", Outcome: Pass},
	}
	skips := []Entry{{Test: "a/skip", Reason: "kubelet"}}
	known := []Entry{
		{Test: "a/known", Class: "product", Reason: "static webhook kinds"},
		{Test: "a/fixed", Class: "engine", Reason: "was a bug"},
		{Test: "b/missing", Class: "product", Reason: "listed, but missing is never known"},
		{Test: "b/known2", Class: "harness", Reason: "not on kind"},
		{Test: "b/racy", Class: "timing", Reason: "passes at times: not fixed"},
	}
	s := Summarize(tests, results, skips, known)
	var buf bytes.Buffer
	s.Write(&buf, known)
	want := `a                        6 tests:   2 passed,   1 skipped,   2 failed (known: 1 product)
b                        3 tests:   1 passed,   0 skipped,   2 failed (known: 1 harness)

known failures (failing.txt):
  a/known [product] static webhook kinds
  b/known2 [harness] not on kind

known failures that passed (remove them from failing.txt):
  a/fixed

unexpected failures:
  a/new (fail): boom
  b/missing (missing): not in chainsaw's report
`
	if buf.String() != want {
		t.Errorf("summary:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestSelected(t *testing.T) {
	tests := []Test{{Name: "a/x"}, {Name: "a/y"}, {Name: "b/x"}, {Name: "b/z"}}
	skips := []Entry{{Test: "a/y"}}
	names := func(ts []Test) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return out
	}
	cases := []struct {
		run  string
		want []string
		err  bool
	}{
		{run: "", want: []string{"a/x", "b/x", "b/z"}},
		{run: "^b/", want: []string{"b/x", "b/z"}},
		{run: "/x$", want: []string{"a/x", "b/x"}},
		{run: "a/y", want: nil}, // skipped whatever the selection
		{run: "(", err: true},
	}
	for _, c := range cases {
		got, err := selected(tests, skips, c.run)
		if (err != nil) != c.err || !reflect.DeepEqual(names(got), c.want) {
			t.Errorf("selected(%q) = %v, %v; want %v (error %v)", c.run, names(got), err, c.want, c.err)
		}
	}
}

func TestComplete(t *testing.T) {
	shard := []Test{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	got := complete(shard, []Result{{Test: "b", Outcome: Pass}}, map[string]bool{"b": true, "c": true})
	want := []Result{{Test: "b", Outcome: Pass},
		{Test: "a", Outcome: Missing, Failure: "not in chainsaw's report, never started"},
		{Test: "c", Outcome: Missing, Failure: "not in chainsaw's report, started but unfinished"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("complete = %+v, want %+v", got, want)
	}
}
