package main

import (
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/report"
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

func newApplyDocument() applyDocument {
	return applyDocument{Summary: map[string]int{"pass": 0, "fail": 0, "warn": 0, "error": 0, "skip": 0}, Results: []applyEntry{}}
}

// add counts the results of one resource in the summary (an evaluation
// error goes to Errors) and returns their entries, and whether they block
// the resource (blocks).
func (doc *applyDocument) add(rr *resourceResult, auditWarn bool) ([]applyEntry, bool) {
	if rr.err != nil {
		doc.addError(rr.err)
		return nil, false
	}
	entries, blocked := resourceEntries(rr, auditWarn)
	doc.count(entries)
	return entries, blocked
}

// take counts the entries of a resource rendered by entryFinish, or
// records its error; it reports whether the resource has entries to write.
func (doc *applyDocument) take(rr *resourceResult) bool {
	if rr.err != nil {
		doc.addError(rr.err)
		return false
	}
	doc.count(rr.entries)
	return true
}

// addError records an evaluation error.
func (doc *applyDocument) addError(err error) {
	doc.Errors = append(doc.Errors, err.Error())
	doc.Summary["error"]++
}

// count adds entries to the summary.
func (doc *applyDocument) count(entries []applyEntry) {
	for i := range entries {
		doc.Summary[entries[i].Result]++
	}
}

// resourceEntries returns the entries of the results of one resource, with
// the result a policy report would show (scored=false and --audit-warn
// turn fail into warn), and whether they block the resource (blocks).
func resourceEntries(rr *resourceResult, auditWarn bool) ([]applyEntry, bool) {
	var entries []applyEntry
	for i := range rr.policies {
		pr := &rr.policies[i]
		for j := range pr.Rules {
			r := &pr.Rules[j]
			res := string(report.EntryResult(pr, r, auditWarn))
			e := applyEntry{Policy: pr.Policy.Key(), Rule: r.Name, Type: string(r.Type), Resource: resourceName(rr.resource), Result: res, Message: r.Message}
			if r.Type == engine.Validation {
				e.FailureAction = string(pr.FailureAction)
			}
			entries = append(entries, e)
		}
	}
	return entries, blocks(rr.policies)
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
