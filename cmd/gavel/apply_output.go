package main

import (
	"encoding/xml"
	"fmt"
	"io"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/policytest"
)

// applyEntry is one rule result of gavel apply in the json, yaml and
// junit outputs.
type applyEntry struct {
	Policy        string `json:"policy"`
	Rule          string `json:"rule"`
	Type          string `json:"type"`
	Resource      string `json:"resource"`
	Result        string `json:"result"`
	FailureAction string `json:"failureAction,omitempty"`
	Message       string `json:"message,omitempty"`
}

type applyDocument struct {
	Summary map[string]int `json:"summary"`
	Blocked bool           `json:"blocked"`
	Results []applyEntry   `json:"results"`
	Errors  []string       `json:"errors,omitempty"`
}

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

func newApplyDocument() applyDocument {
	return applyDocument{Summary: map[string]int{"pass": 0, "fail": 0, "warn": 0, "error": 0, "skip": 0}, Results: []applyEntry{}}
}

// add counts the results of one resource in the summary (an evaluation
// error goes to Errors) and returns their entries, and whether an Enforce
// validate rule failed.
func (doc *applyDocument) add(rr *resourceResult, auditWarn bool) ([]applyEntry, bool) {
	if rr.err != nil {
		doc.Errors = append(doc.Errors, rr.err.Error())
		doc.Summary["error"]++
		return nil, false
	}
	blocked := false
	var entries []applyEntry
	for _, pr := range rr.policies {
		for _, r := range pr.Rules {
			res := policytest.ReportResult(pr.Policy, r)
			if res == "fail" && auditWarn && !pr.FailureAction.IsEnforce() && r.Type == engine.Validation {
				res = "warn"
			}
			doc.Summary[res]++
			if r.Status == engine.StatusFail && r.Type == engine.Validation && pr.FailureAction.IsEnforce() {
				blocked = true
			}
			e := applyEntry{Policy: pr.Policy.Key(), Rule: r.Name, Type: string(r.Type), Resource: resourceName(rr.resource), Result: res, Message: r.Message}
			if r.Type == engine.Validation {
				e.FailureAction = string(pr.FailureAction)
			}
			entries = append(entries, e)
		}
	}
	return entries, blocked
}

// failing keeps the entries that failed or errored (--fail-only).
func failing(entries []applyEntry) []applyEntry {
	kept := entries[:0:0]
	for _, e := range entries {
		if e.Result == "fail" || e.Result == "error" {
			kept = append(kept, e)
		}
	}
	return kept
}

// writeJUnit writes the results as JUnit XML: a test suite per policy, in
// the order of their first entry. (The json and yaml documents are
// written as the resources are evaluated: see streamDocument.)
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
