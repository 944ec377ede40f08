package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/loader"
)

// applyEntries flattens results, with the result a policy report would
// show (scored=false and --audit-warn turn fail into warn), and tells
// whether an Enforce validate rule failed.
func applyEntries(results []resourceResult, auditWarn bool) (applyDocument, bool) {
	doc := newApplyDocument()
	blocked := false
	for i := range results {
		entries, b := doc.add(&results[i], auditWarn)
		doc.Results = append(doc.Results, entries...)
		blocked = blocked || b
	}
	doc.Blocked = blocked
	return doc, blocked
}

// writeJUnit is the reference for junitStream: the whole document built
// in memory and written by xml.MarshalIndent.
func writeJUnit(w io.Writer, doc applyDocument, failOnly bool) error {
	if failOnly {
		doc.Results = failing(doc.Results)
	}
	suites := map[string]*junitSuite{}
	var order []string
	for _, e := range doc.Results {
		s, ok := suites[e.Policy]
		if !ok {
			s = &junitSuite{Name: e.Policy}
			suites[e.Policy] = s
			order = append(order, e.Policy)
		}
		c := junitCase{Classname: e.Policy, Name: fmt.Sprintf("rule=%s resource=%s", e.Rule, e.Resource)}
		switch e.Result {
		case "fail":
			c.Failure = &junitProblem{Message: e.Message, Type: "fail", Text: e.Message}
			s.Failures++
		case "error":
			c.Error = &junitProblem{Message: e.Message, Type: "error", Text: e.Message}
			s.Errors++
		}
		s.Tests++
		s.Cases = append(s.Cases, c)
	}
	out := junitSuites{Name: "gavel apply", Suites: []junitSuite{}}
	for _, p := range order {
		s := suites[p]
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
		out.Suites = append(out.Suites, *s)
	}
	b, err := xml.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// TestJUnitStream: the JUnit XML written entry by entry, in memory or
// spilled to a temporary file, is the document xml.MarshalIndent writes
// for all the entries at once, suites in the order of their first entry;
// with no entry too.
func TestJUnitStream(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	var entries []applyEntry
	for i := 0; i < 400; i++ {
		e := applyEntry{
			Policy:   fmt.Sprintf("policy-%d", r.Intn(7)),
			Rule:     fmt.Sprintf("rule-%d", r.Intn(3)),
			Resource: fmt.Sprintf("ns/Pod/p%d", i),
			Result:   []string{"pass", "fail", "error", "skip", "warn"}[r.Intn(5)],
		}
		if e.Result != "pass" {
			e.Message = []string{"plain", `quotes " and <tags> & 'more'`, "line\nbreak\ttab", "ünïcödé"}[r.Intn(4)]
		}
		entries = append(entries, e)
	}
	for _, n := range []int{0, 1, 3, len(entries)} {
		for _, failOnly := range []bool{false, true} {
			doc := newApplyDocument()
			doc.Results = entries[:n]
			var want bytes.Buffer
			if err := writeJUnit(&want, doc, failOnly); err != nil {
				t.Fatal(err)
			}
			kept := entries[:n]
			if failOnly {
				kept = failing(kept)
			}
			for _, budget := range []int{0, 500, 1 << 20} {
				js := newJUnitStream(budget)
				for _, e := range kept {
					if err := js.add(e); err != nil {
						t.Fatal(err)
					}
				}
				spilled := js.spilled.file != nil
				var got bytes.Buffer
				if err := js.writeTo(&got); err != nil {
					t.Fatal(err)
				}
				if err := js.close(); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Fatalf("%d entries, fail-only %v, budget %d: got\n%s\n--- want\n%s", n, failOnly, budget, got.Bytes(), want.Bytes())
				}
				if len(kept) > 10 && spilled != (budget < 1<<20) {
					t.Errorf("%d entries, budget %d: spilled %v", n, budget, spilled)
				}
			}
		}
	}
}

// TestApplyJUnitStreamed: gavel apply -o junit gives the document of all
// the results built at once, whether the cases are kept in memory or
// spilled.
func TestApplyJUnitStreamed(t *testing.T) {
	dir := writeFiles(t, map[string]string{"policies.yaml": streamPolicies, "pods.yaml": pods(200)})
	policies, resources := dir+"/policies.yaml", dir+"/pods.yaml"
	rs, err := loader.Load(resources)
	if err != nil {
		t.Fatal(err)
	}
	ev := evaluator{set: compileFiles(t, policies)}
	var results []resourceResult
	for _, d := range rs.Resources {
		results = append(results, ev.evaluate(d.Object))
	}
	doc, _ := applyEntries(results, false)
	var want bytes.Buffer
	if err := writeJUnit(&want, doc, false); err != nil {
		t.Fatal(err)
	}
	for _, memory := range []int{64 << 20, 512} {
		old := reportMemory
		reportMemory = memory
		code, got, stderr := applyRun(t, "", policies, "--resource", resources, "--output-format", "junit", "--parallel", "3")
		reportMemory = old
		if code != exitFailed || got != want.String() {
			t.Fatalf("memory %d: exit %d, stderr %s, output differs:\n%.300s\n--- want\n%.300s", memory, code, stderr, got, want.String())
		}
		if !strings.Contains(stderr, "pass: ") {
			t.Errorf("no summary on stderr: %s", stderr)
		}
	}
	// two cluster policies on every Pod, the shop Policy on half of them
	var parsed junitSuites
	if err := xml.Unmarshal(want.Bytes(), &parsed); err != nil {
		t.Fatal(err)
	}
	if len(parsed.Suites) != 3 || parsed.Tests != 500 {
		t.Errorf("%d suites, %d tests; want 3 suites (one per policy), 500 tests", len(parsed.Suites), parsed.Tests)
	}
}

var _ io.Writer = (*spool)(nil)

// TestAppendEntries compares the entries of -o json and -o yaml with
// json.MarshalIndent and yaml.Marshal, on entries with every field set or
// omitted and random messages; the YAML entries it cannot write go to
// yaml.Marshal.
func TestAppendEntries(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	frags := []string{"validation error", ": ", "'", `"`, " #", "#", "yes", "\n", "é", "[", " ", "rule r failed at path /spec/", "a"}
	entries := []applyEntry{
		{Policy: "p", Rule: "r", Type: "Validation", Resource: "default/Pod/web", Result: "pass", FailureAction: "Audit", Message: "validation rule 'r' passed."},
		{Policy: "ns/p", Rule: "r", Type: "Mutation", Resource: "Pod/x", Result: "skip"},
		{Policy: "p", Rule: "", Type: "Validation", Resource: "Pod/", Result: "error"},
		{Policy: "yes", Rule: "no", Type: "Generation", Resource: "a: b", Result: "fail", Message: strings.Repeat("long message ", 12)},
	}
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for j := r.Intn(10); j >= 0; j-- {
			b.WriteString(frags[r.Intn(len(frags))])
		}
		e := entries[i%len(entries)]
		e.Message = b.String()
		entries = append(entries, e)
	}
	for _, e := range entries {
		want, err := json.MarshalIndent(e, "    ", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if got := appendEntryJSON([]byte("x"), e); string(got) != "x"+string(want) {
			t.Fatalf("%+v as JSON:\n got %q\nwant %q", e, got[1:], want)
		}
	}
	fast := 0
	for _, e := range entries {
		want, err := yaml.Marshal([]applyEntry{e})
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendEntryYAML([]byte("x"), e)
		if !ok {
			if string(got) != "x" {
				t.Fatalf("%+v: %q appended when falling back", e, got)
			}
			continue
		}
		fast++
		if string(got) != "x"+string(want) {
			t.Fatalf("%+v:\n got %q\nwant %q", e, got[1:], want)
		}
	}
	if fast < 200 {
		t.Fatalf("only %d of %d entries took the fast path", fast, len(entries))
	}
}

// renderCaseXML is renderCase through encoding/xml, the reference of the
// tests.
func renderCaseXML(e applyEntry) (renderedCase, error) {
	c := junitCase{Classname: e.Policy, Name: fmt.Sprintf("rule=%s resource=%s", e.Rule, e.Resource)}
	switch e.Result {
	case "fail":
		c.Failure = &junitProblem{Message: e.Message, Type: "fail", Text: e.Message}
	case "error":
		c.Error = &junitProblem{Message: e.Message, Type: "error", Text: e.Message}
	}
	// a case is the third level of the document
	b, err := marshalIndent(c, "    ", "testcase")
	if err != nil {
		return renderedCase{}, err
	}
	return renderedCase{policy: e.Policy, result: e.Result, text: append([]byte{'\n'}, b...)}, nil
}

// TestRenderCase compares the test cases written directly with those of
// encoding/xml, on entries whose names and messages hold the characters
// XML escapes, runes it cannot hold, invalid UTF-8 and CDATA ends.
func TestRenderCase(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	frags := []string{"a", "\"", "'", "&", "<", ">", "\t", "\n", "\r", "]]>", "]]", "]", "\x00", "\x01", "\x7f", "é", "\ufffe", "\uFFFD", "\xff", "\U0001F600", "\xed\xa0\x80", " "}
	random := func() string {
		var b strings.Builder
		for j := r.Intn(8); j >= 0; j-- {
			b.WriteString(frags[r.Intn(len(frags))])
		}
		return b.String()
	}
	results := []string{"pass", "fail", "error", "skip", "warn"}
	for i := 0; i < 3000; i++ {
		e := applyEntry{Policy: random(), Rule: random(), Resource: random(), Result: results[i%len(results)], Message: random()}
		if i%7 == 0 {
			e.Message = ""
		}
		want, err := renderCaseXML(e)
		if err != nil {
			t.Fatal(err)
		}
		got := renderCase(e)
		if string(got.text) != string(want.text) || got.policy != want.policy || got.result != want.result {
			t.Fatalf("%+v:\n got %q\nwant %q", e, got.text, want.text)
		}
	}
}
