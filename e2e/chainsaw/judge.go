// Package chainsaw is gavel's judge: it runs the end-to-end tests of
// upstream's policy library (the .chainsaw-test folder beside each policy
// of ../shared/conformance/kyverno-policies, kyverno-policies-cel and
// kyverno-policies-new) with chainsaw v0.2.12 against gavel's cluster
// mode, installed as a user installs it on a control plane of etcd,
// kube-apiserver and the controllers of kube-controller-manager that a
// bare API server lacks (see run_test.go, build tag e2e):
//
//	go test -tags e2e -v -timeout 30m ./e2e/chainsaw/
//
// This file keeps the judge's books: the skip list (skip.txt: tests that
// need a kubelet, a controller manager beyond the judge's or the
// internet), the list of known failures (failing.txt, each with its class
// and cause), the discovery and sharding of the tests, chainsaw's JSON
// reports read back, and the summary per suite.
//
// GAVEL_JUDGE_SHARDS sets the number of control planes run side by side
// (default 4), GAVEL_JUDGE_RUN a regular expression on the test names
// (e.g. kyverno-policies/psa/), GAVEL_JUDGE_KNOWN_TIMEOUT chainsaw's
// timeouts for the known failures (default 20s, upstream's are 1m30s),
// GAVEL_E2E_KEEP keeps every shard's logs and chainsaw output, SHARED
// moves ../shared.
package chainsaw

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// Suites are the folders of ../shared/conformance whose tests the judge
// runs, in the order of its summary.
var Suites = []string{"kyverno-policies", "kyverno-policies-cel", "kyverno-policies-new"}

// TestDir is the folder of a policy's chainsaw test, beside the policy.
const TestDir = ".chainsaw-test"

// Test is one chainsaw test of the library.
type Test struct {
	// Name is the policy's folder relative to the conformance folder,
	// e.g. kyverno-policies/psa/deny-privileged-profile: the key of the
	// skip list and of the known failures.
	Name string
	// Suite is Name's first element.
	Suite string
}

// Discover returns the tests under the suites of conformance, sorted by
// name: every folder holding a .chainsaw-test folder.
func Discover(conformance string, suites []string) ([]Test, error) {
	var tests []Test
	for _, s := range suites {
		root := filepath.Join(conformance, s)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() || d.Name() != TestDir {
				return nil
			}
			rel, err := filepath.Rel(conformance, filepath.Dir(p))
			if err != nil {
				return err
			}
			tests = append(tests, Test{Name: filepath.ToSlash(rel), Suite: s})
			return fs.SkipDir
		})
		if err != nil {
			return nil, fmt.Errorf("discovering %s: %w", s, err)
		}
	}
	sort.Slice(tests, func(i, j int) bool { return tests[i].Name < tests[j].Name })
	return tests, nil
}

// Entry is a line of the skip list or of the known failures: a test and
// why it is skipped or fails.
type Entry struct {
	Test string
	// Class is the known failure's class (see Classes); empty in the skip
	// list.
	Class  string
	Reason string
	Line   int
}

// Classes are the classes of known failures, as the judge's brief
// defines them.
var Classes = map[string]string{
	// gavel's engine decides differently from upstream: a bug to fix
	"engine": "gavel engine semantics",
	// the cluster mode lacks what upstream's installation has
	"product": "cluster-mode product gap",
	// the judge's cluster differs from upstream's kind cluster
	"harness": "harness",
	// the test races with upstream's own background processing: under
	// upstream's current semantics its outcome depends on when a queued
	// background pass runs against the test's next step
	"timing": "timing-dependent test",
}

// ReadList reads a list file: one entry a line, `test reason...` in the
// skip list, `test class reason...` in the known failures (withClass);
// blank lines and lines starting with # are ignored. Every entry must have
// a reason, a known class, and name a test once.
func ReadList(r io.Reader, name string, withClass bool) ([]Entry, error) {
	var out []Entry
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		e := Entry{Test: fields[0], Line: n}
		rest := fields[1:]
		if withClass {
			if len(rest) == 0 {
				return nil, fmt.Errorf("%s:%d: %s: no class", name, n, e.Test)
			}
			e.Class, rest = rest[0], rest[1:]
			if _, ok := Classes[e.Class]; !ok {
				return nil, fmt.Errorf("%s:%d: %s: unknown class %q", name, n, e.Test, e.Class)
			}
		}
		if len(rest) == 0 {
			return nil, fmt.Errorf("%s:%d: %s: no reason", name, n, e.Test)
		}
		e.Reason = strings.Join(rest, " ")
		if prev, ok := seen[e.Test]; ok {
			return nil, fmt.Errorf("%s:%d: %s is listed again (first on line %d)", name, n, e.Test, prev)
		}
		seen[e.Test] = n
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// ReadListFile reads a list file (see ReadList).
func ReadListFile(path string, withClass bool) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadList(f, path, withClass)
}

// CheckList returns an error naming the entries of a list that name no
// discovered test.
func CheckList(list []Entry, tests []Test, name string) error {
	known := map[string]bool{}
	for _, t := range tests {
		known[t.Name] = true
	}
	var unknown []string
	for _, e := range list {
		if !known[e.Test] {
			unknown = append(unknown, fmt.Sprintf("%s:%d: %s", name, e.Line, e.Test))
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("entries naming no test:\n%s", strings.Join(unknown, "\n"))
	}
	return nil
}

// Shard splits tests into n shards of nearly equal size, dealing them in
// turn so that each shard gets tests of every suite and folder.
func Shard(tests []Test, n int) [][]Test {
	if n < 1 {
		n = 1
	}
	if n > len(tests) {
		n = max(len(tests), 1)
	}
	shards := make([][]Test, n)
	for i, t := range tests {
		shards[i%n] = append(shards[i%n], t)
	}
	return shards
}

// Outcome is what became of a test.
type Outcome string

const (
	Pass    Outcome = "pass"
	Fail    Outcome = "fail"
	Skip    Outcome = "skip"    // in the skip list, not run
	Missing Outcome = "missing" // run, but absent from chainsaw's report (its shard broke)
)

// Result is a test's outcome, with the first failure when it failed.
type Result struct {
	Test    string
	Outcome Outcome
	// Failure is the first failed operation: "step/operation (type): error".
	Failure string
	Seconds float64
}

// report is the part of chainsaw's JSON report (--report-format JSON)
// the judge reads.
type report struct {
	Tests []struct {
		BasePath  string    `json:"basePath"`
		Name      string    `json:"name"`
		StartTime time.Time `json:"startTime"`
		EndTime   time.Time `json:"endTime"`
		Skipped   bool      `json:"skipped"`
		Steps     []struct {
			Name       string `json:"name"`
			Operations []struct {
				Name    string `json:"name"`
				Type    string `json:"type"`
				Failure *struct {
					Error string `json:"error"`
				} `json:"failure"`
			} `json:"operations"`
		} `json:"steps"`
	} `json:"tests"`
}

// ParseReport reads chainsaw's JSON report of a run whose test folders
// were given relative to root: each test's base path names it (the
// policy's folder, without .chainsaw-test). failed holds the tests that
// chainsaw's output reports failed (FailedTests), which counts failures
// the report does not hold, such as those of cleanup.
func ParseReport(data []byte, root string, failed map[string]bool) ([]Result, error) {
	var r report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("chainsaw report: %w", err)
	}
	var out []Result
	for _, t := range r.Tests {
		base := filepath.ToSlash(t.BasePath)
		if root != "" && filepath.IsAbs(t.BasePath) {
			if rel, err := filepath.Rel(root, t.BasePath); err == nil {
				base = filepath.ToSlash(rel)
			}
		}
		name := strings.TrimSuffix(path.Clean(base), "/"+TestDir)
		res := Result{Test: name, Outcome: Pass, Seconds: t.EndTime.Sub(t.StartTime).Seconds()}
		if t.Skipped {
			res.Outcome = Skip
		}
		for _, s := range t.Steps {
			for _, op := range s.Operations {
				if op.Failure != nil && res.Failure == "" {
					res.Outcome = Fail
					res.Failure = fmt.Sprintf("%s/%s (%s): %s", s.Name, op.Name, op.Type, op.Failure.Error)
				}
			}
		}
		if res.Outcome == Pass && failed[name] {
			res.Outcome = Fail
			res.Failure = "failed outside its steps' operations (cleanup or finally): see chainsaw's output"
		}
		out = append(out, res)
	}
	return out, nil
}

// FailedTests returns the tests that chainsaw's output (Go's testing
// output of its `chainsaw` test) reports failed, from their
// "--- FAIL: chainsaw/<folder>[<test name>] (<duration>)" lines; with
// fullName, folder is the test folder as given, which the judge gives
// relative to its copy of the conformance folder.
func FailedTests(output io.Reader) (map[string]bool, error) {
	failed := map[string]bool{}
	sc := bufio.NewScanner(output)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "--- FAIL: chainsaw/"); ok {
			failed[outputName(rest)] = true
		}
	}
	return failed, sc.Err()
}

// outputName returns the test of a line of chainsaw's output from what
// follows "chainsaw/": "<folder>[<test name>]", then " (<duration>)" on
// the line that ends it.
func outputName(rest string) string {
	if i := strings.LastIndex(rest, " ("); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndex(rest, "["); i >= 0 && strings.HasSuffix(rest, "]") {
		rest = rest[:i]
	}
	return strings.TrimSuffix(path.Clean(rest), "/"+TestDir)
}

// Summary is the judge's verdict.
type Summary struct {
	Suites []SuiteSummary
	// Unexpected are the failures not in the known failures, and the
	// tests missing from the reports: the judge fails on them.
	Unexpected []Result
	// Fixed are known failures that passed: their line in failing.txt can
	// go.
	Fixed []Entry
	// Known are the known failures that failed again.
	Known []Result
}

// SuiteSummary counts a suite's outcomes.
type SuiteSummary struct {
	Suite                     string
	Tests, Pass, Skip, Failed int
	// KnownFailed counts the failures in the known failures, by class.
	KnownFailed map[string]int
}

// Summarize gives the verdict on the results of the tests run, the
// tests skipped and the known failures.
func Summarize(tests []Test, results []Result, skips, known []Entry) Summary {
	byTest := map[string]Result{}
	for _, r := range results {
		byTest[r.Test] = r
	}
	skip := map[string]bool{}
	for _, e := range skips {
		skip[e.Test] = true
	}
	knownBy := map[string]Entry{}
	for _, e := range known {
		knownBy[e.Test] = e
	}
	var s Summary
	idx := map[string]int{}
	for _, t := range tests {
		i, ok := idx[t.Suite]
		if !ok {
			i = len(s.Suites)
			idx[t.Suite] = i
			s.Suites = append(s.Suites, SuiteSummary{Suite: t.Suite, KnownFailed: map[string]int{}})
		}
		ss := &s.Suites[i]
		ss.Tests++
		if skip[t.Name] {
			ss.Skip++
			continue
		}
		r, ran := byTest[t.Name]
		if !ran {
			continue // not selected by GAVEL_JUDGE_RUN
		}
		k, isKnown := knownBy[t.Name]
		switch r.Outcome {
		case Pass:
			ss.Pass++
			if isKnown && k.Class != "timing" { // a timing test passes at times
				s.Fixed = append(s.Fixed, k)
			}
		case Skip:
			ss.Skip++
		default:
			ss.Failed++
			if isKnown && r.Outcome == Fail {
				ss.KnownFailed[k.Class]++
				s.Known = append(s.Known, r)
			} else {
				s.Unexpected = append(s.Unexpected, r)
			}
		}
	}
	return s
}

// Write prints the summary: a line per suite with its counts and the
// known failures by class, then the unexpected failures and the known
// failures that now pass.
func (s Summary) Write(w io.Writer, known []Entry) {
	reason := map[string]Entry{}
	for _, e := range known {
		reason[e.Test] = e
	}
	for _, ss := range s.Suites {
		fmt.Fprintf(w, "%-22s %3d tests: %3d passed, %3d skipped, %3d failed", ss.Suite, ss.Tests, ss.Pass, ss.Skip, ss.Failed)
		if len(ss.KnownFailed) > 0 {
			var parts []string
			for _, c := range slices.Sorted(maps.Keys(ss.KnownFailed)) {
				parts = append(parts, fmt.Sprintf("%d %s", ss.KnownFailed[c], c))
			}
			fmt.Fprintf(w, " (known: %s)", strings.Join(parts, ", "))
		}
		fmt.Fprintln(w)
	}
	if len(s.Known) > 0 {
		fmt.Fprintf(w, "\nknown failures (failing.txt):\n")
		for _, r := range s.Known {
			e := reason[r.Test]
			fmt.Fprintf(w, "  %s [%s] %s\n", r.Test, e.Class, e.Reason)
		}
	}
	if len(s.Fixed) > 0 {
		fmt.Fprintf(w, "\nknown failures that passed (remove them from failing.txt):\n")
		for _, e := range s.Fixed {
			fmt.Fprintf(w, "  %s\n", e.Test)
		}
	}
	if len(s.Unexpected) > 0 {
		fmt.Fprintf(w, "\nunexpected failures:\n")
		for _, r := range s.Unexpected {
			fmt.Fprintf(w, "  %s (%s): %s\n", r.Test, r.Outcome, r.Failure)
		}
	}
}

// selected returns the tests to run: those not skipped whose name the
// regular expression run (when set) matches.
func selected(tests []Test, skips []Entry, run string) ([]Test, error) {
	var re *regexp.Regexp
	if run != "" {
		var err error
		if re, err = regexp.Compile(run); err != nil {
			return nil, fmt.Errorf("GAVEL_JUDGE_RUN: %w", err)
		}
	}
	skip := map[string]bool{}
	for _, e := range skips {
		skip[e.Test] = true
	}
	var out []Test
	for _, t := range tests {
		if !skip[t.Name] && (re == nil || re.MatchString(t.Name)) {
			out = append(out, t)
		}
	}
	return out, nil
}

// complete adds a Missing result for each test of the shard that its
// results lack, saying whether chainsaw had started it.
func complete(shard []Test, results []Result, started map[string]bool) []Result {
	seen := map[string]bool{}
	for _, r := range results {
		seen[r.Test] = true
	}
	for _, t := range shard {
		if seen[t.Name] {
			continue
		}
		why := "not in chainsaw's report, never started"
		if started[t.Name] {
			why = "not in chainsaw's report, started but unfinished"
		}
		results = append(results, Result{Test: t.Name, Outcome: Missing, Failure: why})
	}
	return results
}
