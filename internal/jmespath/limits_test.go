package jmespath

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jmespath-community/go-jmespath/pkg/parsing"
)

// doubling returns an expression that doubles its input n times with
// multi-selects (memory stays small, the JSON text grows as 2^n) or, with
// flatten, by flattening (the arrays themselves grow as 2^n).
func doubling(n int, flatten bool) string {
	step := "[@, @]"
	if flatten {
		step = "[@, @][]"
	}
	parts := []string{"@"}
	for range n {
		parts = append(parts, step)
	}
	return strings.Join(parts, " | ")
}

func TestResultSizeLimit(t *testing.T) {
	small := mustNew(t, WithMaxResultSize(1000))
	data := map[string]any{
		"s":     strings.Repeat("a", 100),
		"list":  []any{"x", "y"},
		"words": []any{strings.Repeat("w", 300), strings.Repeat("w", 300), strings.Repeat("w", 300), strings.Repeat("w", 300)},
	}
	cases := []fnCase{
		// within the limit: results as without it
		{name: "pad_left within", expr: "pad_left('a', `3`, '0')", want: "00a"},
		{name: "pad_right within", expr: "pad_right('a', `1000`)", want: "a" + strings.Repeat(" ", 999)},
		{name: "pad with empty pad", expr: "pad_left('a', `100000000`, '')", want: "a"},
		{name: "join within", expr: "join(',', list)", want: "x,y"},
		{name: "replace_all within", expr: "replace_all(s, 'a', 'bb')", want: strings.Repeat("b", 200)},
		{name: "replace count within", expr: "replace(s, 'a', 'bbbbbbbbbbbb', `2`)", want: strings.Repeat("b", 24) + strings.Repeat("a", 98)},
		{name: "regex within", expr: "regex_replace_all('a', s, '$0$0')", want: strings.Repeat("a", 200)},
		{name: "to_string within", expr: "to_string(list)", want: `["x","y"]`},
		{name: "base64 within", expr: "base64_encode('ab')", want: "YWI="},
		{name: "doubling within", expr: doubling(3, true), data: "x", want: []any{"x", "x", "x", "x", "x", "x", "x", "x"}},
		{name: "data is not limited", expr: "words", want: data["words"]},
		{name: "data through a projection is not limited", expr: "words[*]", want: data["words"]},

		// over the limit: an error wrapping ErrTooLarge, before building
		{name: "pad_left over", expr: "pad_left('a', `100000000000`)", err: "JMESPath function 'pad_left': result of"},
		{name: "pad_right over", expr: "pad_right('a', `1001`, 'x')", err: "exceeds the limit of 1000 bytes"},
		{name: "join over", expr: "join('', words)", err: "JMESPath function 'join'"},
		{name: "replace_all over", expr: "replace_all(s, '', 'xxxxxxxxxx')", err: "JMESPath function 'replace_all'"},
		{name: "replace over", expr: "replace(s, 'a', 'xxxxxxxxxxxxxxxxxxxx', `-1`)", err: "JMESPath function 'replace'"},
		{name: "regex expansion over", expr: "regex_replace_all('a+', s, '$0$0$0$0$0$0$0$0$0$0$0')", err: "JMESPath function 'regex_replace_all'"},
		{name: "regex literal over", expr: "regex_replace_all_literal('', s, 'xxxxxxxxxxxxxxxxx')", err: "JMESPath function 'regex_replace_all_literal'"},
		{name: "base64 over", expr: "base64_encode(join('', [s, s, s, s, s, s, s, s]))", err: "JMESPath function 'base64_encode'"},
		{name: "to_string of a doubled value", expr: "to_string(" + doubling(40, false) + ")", data: "x", err: "JMESPath function 'to_string'"},
		{name: "doubled result", expr: doubling(40, false), data: "x", err: "value exceeds the JMESPath size limit"},
		{name: "flatten doubling", expr: doubling(40, true), data: "x", err: "flattening gives more than 62 elements"},
		{name: "flatten inside flatten", expr: "(" + doubling(40, true) + ")[]", data: "x", err: "flattening gives more than"},
		{name: "filter over a doubled list", expr: "(" + doubling(40, true) + ")[?@ == 'x']", data: "x", err: "flattening gives more than"},
	}
	for i := range cases {
		if cases[i].data == nil {
			cases[i].data = data
		}
	}
	start := time.Now()
	runCases(t, small, cases)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("bounded evaluations took %v", d)
	}

	for _, expr := range []string{"pad_left('a', `100000000000`)", doubling(40, false), doubling(40, true)} {
		_, err := small.Search(expr, "x")
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("Search(%q) error = %v, want one wrapping ErrTooLarge", expr, err)
		}
	}

	// the default limit (8 MiB) lets ordinary results through and stops
	// the doubling
	def := mustNew(t)
	if got, err := def.Search("pad_left('a', `100000`)", nil); err != nil || len(got.(string)) != 100000 {
		t.Errorf("default limit: pad_left = %d bytes, %v", len(got.(string)), err)
	}
	if _, err := def.Search(doubling(64, true), "x"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("default limit: flatten doubling error = %v", err)
	}
	if _, err := New(WithMaxResultSize(0)); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("WithMaxResultSize(0) error = %v", err)
	}
}

func TestJSONSize(t *testing.T) {
	v := map[string]any{"a": []any{"xy", 1.0, true, nil}}
	// {"a":["xy",1,true,null]} is 24 bytes; the estimate counts numbers as 8
	n, ok := jsonSize(v, 1000)
	if !ok || n < 24 || n > 40 {
		t.Errorf("jsonSize = %d, %v", n, ok)
	}
	if _, ok := jsonSize(v, 10); ok {
		t.Error("jsonSize over the limit reported ok")
	}
}

// TestBuildsValues: only expressions that can repeat what they read have
// their results measured.
func TestBuildsValues(t *testing.T) {
	for expr, want := range map[string]bool{
		"a.b":                false,
		"a[*].b":             false,
		"a[]":                false,
		"a[].b[]":            false,
		"a[?b == 'x'] | [0]": false,
		"[a, a]":             true,
		"{x: a, y: a}":       true,
		"length(a)":          true,
		"a[].[b, c][]":       false, // disjoint fields: each part once
		"spec.[ephemeralContainers, initContainers, containers][]": false,
		"{x: a.b, y: a.c}":     false,
		"[a[0], a[1]]":         false,
		"[a, a.b]":             true, // a.b is part of a
		"[a.b, a]":             true,
		"[a[0].b, a[0]]":       true,
		"{x: a, y: b, z: a}":   true,
		"[a, b.c, @]":          true, // @ is not a plain path
		"[a, [b, c]]":          true, // nested selects repeat the spine
		"[a, b] | [@, @]":      true,
		"[a, to_string(b)]":    true,
		"a | zip(@, @)":        true,
		"a[?contains(b, 'x')]": true,
	} {
		ast, err := parsing.NewParser().Parse(expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := buildsValues(ast); got != want {
			t.Errorf("buildsValues(%q) = %v, want %v", expr, got, want)
		}
	}
}
