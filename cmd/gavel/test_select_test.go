package main

import (
	"testing"

	"github.com/gavelpolicy/gavel/policytest"
)

func TestWildcardMatch(t *testing.T) {
	for _, tt := range []struct {
		pattern, s string
		want       bool
	}{
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"*", "anything", true},
		{"?", "", false},
		{"?", "é", true},
		{"??", "é", false},
		{"a*", "a", true},
		{"a*", "abc", true},
		{"a*", "ba", false},
		{"*c", "abc", true},
		{"*c", "abcd", false},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"a*b?d", "abbbcd", true},
		{"*a*a*a*", "aaa", true},
		{"*a*a*a*", "aa", false},
		{"require-*", "require-labels", true},
		{"require-*", "disallow-latest", false},
		{"[a]", "a", false}, // no character classes
		{`\*`, "*", false},  // no escaping
		{`\*`, `\x`, true},
		{"日?", "日本", true},
	} {
		if got := wildcardMatch(tt.pattern, tt.s); got != tt.want {
			t.Errorf("wildcardMatch(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

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
