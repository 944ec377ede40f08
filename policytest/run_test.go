package policytest_test

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/policytest"
)

type rowKey struct {
	resource, rule, expected string
}

func TestRunCountsAsUpstream(t *testing.T) {
	tests := []struct {
		strict bool
		want   map[rowKey]string // reason of each row
		passed int
	}{
		{
			strict: false,
			want: map[rowKey]string{
				{"good", "team-label", "pass"}:     "Ok",
				{"prod/bad", "team-label", "fail"}: "Ok",
				// dev is in the default namespace: the rule does not
				// apply, which upstream counts as passed
				{"dev", "team-label", "pass"}:     "excluded",
				{"good", "add-env", "pass"}:       "Ok",
				{"missing", "team-label", "pass"}: "not found",
				{"good", "team-label", "skip"}:    "Want skip, got pass",
			},
			passed: 4,
		},
		{
			strict: true,
			want: map[rowKey]string{
				{"good", "team-label", "pass"}:     "Ok",
				{"prod/bad", "team-label", "fail"}: "Ok",
				{"dev", "team-label", "pass"}:      "excluded: the rule did not apply, want pass",
				{"good", "add-env", "pass"}:        "Ok",
				{"missing", "team-label", "pass"}:  "not found",
				{"good", "team-label", "skip"}:     "Want skip, got pass",
			},
			passed: 3,
		},
	}
	for _, tt := range tests {
		tc, err := policytest.Load("testdata/basic/kyverno-test.yaml")
		if err != nil {
			t.Fatal(err)
		}
		rows, err := policytest.Run(context.Background(), tc, policytest.Options{Strict: tt.strict})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(tt.want) {
			t.Fatalf("strict=%v: %d rows, want %d: %+v", tt.strict, len(rows), len(tt.want), rows)
		}
		passed := 0
		for _, r := range rows {
			k := rowKey{r.Resource, r.Rule, r.Expected}
			want, ok := tt.want[k]
			if !ok {
				t.Errorf("strict=%v: unexpected row %+v", tt.strict, r)
				continue
			}
			if r.Reason != want {
				t.Errorf("strict=%v: row %v reason %q, want %q", tt.strict, k, r.Reason, want)
			}
			if r.Passed {
				passed++
			}
		}
		if passed != tt.passed {
			t.Errorf("strict=%v: %d rows passed, want %d", tt.strict, passed, tt.passed)
		}
	}
}

func TestDiscover(t *testing.T) {
	files, err := policytest.Discover("", "testdata")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 || files[0] != "testdata/basic/kyverno-test.yaml" || filepath.Dir(filepath.Dir(files[1])) != "testdata/features" {
		t.Errorf("Discover = %v", files)
	}
	for i := 1; i < len(files); i++ {
		if files[i-1] >= files[i] {
			t.Errorf("Discover: %s before %s", files[i-1], files[i])
		}
	}
}

// TestRowsAsUpstream checks the rows of results whose policies give
// several responses per resource: an "excluded" row is written after a
// response without the rule only while the resource has no row yet (so
// not after a response that had the rule), and a generate rule that
// generated nothing is compared by its status alone.
func TestRowsAsUpstream(t *testing.T) {
	type row struct {
		rule, reason string
		passed       bool
	}
	common := []row{
		{"team-label", "Ok", true},
		// the validate response, first, lacks the generate rule
		{"quota", "excluded", true},
		{"quota", "Ok", true},
		{"nothing", "excluded", true},
		{"nothing", "Ok", true},
		// the mutate response, first, lacks the validate rule
		{"require-app", "excluded", true},
		{"require-app", "Ok", true},
	}
	tests := []struct {
		strict bool
		want   []row
	}{
		{false, append(common[:len(common):len(common)], row{"add-label", "excluded", true})},
		{true, append(common[:len(common):len(common)], row{"add-label", "excluded: the rule did not apply, want pass", false})},
	}
	for _, tt := range tests {
		tc, err := policytest.Load("testdata/rows/kyverno-test.yaml")
		if err != nil {
			t.Fatal(err)
		}
		rows, err := policytest.Run(context.Background(), tc, policytest.Options{Strict: tt.strict})
		if err != nil {
			t.Fatal(err)
		}
		var got []row
		for _, r := range rows {
			got = append(got, row{r.Rule, r.Reason, r.Passed})
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("strict=%v: rows\n%+v\nwant\n%+v", tt.strict, got, tt.want)
		}
	}
}

// TestVerifyImagesWithoutVerifier: verifyImages rules are evaluated (the
// verify step between mutation and validation, as upstream's CLI), and
// without an image verifier a rule is one error row, not also a "missing
// digest" failure from validation.
func TestVerifyImagesWithoutVerifier(t *testing.T) {
	tc, err := policytest.Load("testdata/unverified/kyverno-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := policytest.Run(context.Background(), tc, policytest.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || !rows[0].Passed || rows[0].Got != "error" || !strings.Contains(rows[0].Message, "no image verifier: not configured") {
		t.Fatalf("rows %+v, want one passing error row", rows)
	}
}
