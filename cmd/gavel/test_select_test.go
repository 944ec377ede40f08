package main

import (
	"testing"

	"github.com/gavelpolicy/gavel/policytest"
)

// TestTestFilterKeep: --test-case-selector keeps the results whose
// policy, rule and one of the resources match its wildcards.
func TestTestFilterKeep(t *testing.T) {
	results := []policytest.Result{
		{Policy: "require-labels", Rule: "check-team", Resources: []string{"web", "db"}},
		{Policy: "disallow-latest", Rule: "validate-image-tag", Resource: "web"},
		{Policy: "require-labels", Rule: "check-owner", Resources: []string{"cache"}},
	}
	for _, tt := range []struct {
		selector string
		want     int
	}{
		{"", 3},
		{"policy=require-*", 2},
		{"policy=require-labels, rule=check-?wner", 1},
		{"resource=web", 2},
		{"resource=d?", 1},
		{"resource=?", 0},
		{"rule=*-?wner, resource=c*", 1},
		{"policy=none", 0},
	} {
		f, err := parseTestFilter(tt.selector)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(f.keep(results)); got != tt.want {
			t.Errorf("%q keeps %d results, want %d", tt.selector, got, tt.want)
		}
	}
}
