package patterns

import (
	"encoding/json"
	"math"
	"testing"
)

func TestMatchValue(t *testing.T) {
	tests := []struct {
		name    string
		value   any
		pattern any
		want    bool
	}{
		// Booleans match only booleans.
		{"bool/same", true, true, true},
		{"bool/different", true, false, false},
		{"bool/false", false, false, true},
		{"bool/string value", "true", true, false},
		{"bool/nil value", nil, false, false},
		{"bool value/string pattern", true, "true", true},
		{"bool value/string pattern mismatch", false, "true", false},
		{"bool value/negated string pattern", false, "!true", true},

		// Integer patterns.
		{"int/int", 10, 10, true},
		{"int/other int", 8, 10, false},
		{"int64/int64", int64(10), int64(10), true},
		{"int64/int", int64(10), 10, true},
		{"int/integral float", 8.0, 8, true},
		{"int/fractional float", 8.1, 8, false},
		{"int/string", "8", 8, true},
		{"int/fractional string", "8.1", 8, false},
		{"int/string with space", " 8", 8, false},
		{"int/bool", false, 8, false},
		{"int/nil", nil, 0, false},

		// Float patterns (what JSON and YAML decoding produce for numbers).
		{"float/float", 7.9914, 7.9914, true},
		{"float/close float", 7.9914, 7.99141, false},
		{"float/int", 8, 8.0, true},
		{"float/int64", int64(8), 8.0, true},
		{"fractional float/int", 8, 8.1, false},
		{"float/string", "8", 8.0, true},
		{"float/fractional string", "8.1", 8.1, true},
		{"float/exponent string", "8e0", 8.0, true},
		{"float/not a number", "abc", 8.1, false},
		{"float/bool", false, 8.0, false},
		{"float/json.Number value", json.Number("80"), 80.0, true},
		{"json.Number pattern", 80.0, json.Number("80"), true},
		{"float/uint8 value", uint8(8), 8.0, true},
		{"float/float32 value", float32(0.5), 0.5, true},

		// Null patterns match missing or empty values.
		{"nil/nil", nil, nil, true},
		{"nil/empty string", "", nil, true},
		{"nil/string", "value", nil, false},
		{"nil/zero float", 0.0, nil, true},
		{"nil/zero int", 0, nil, true},
		{"nil/zero int64", int64(0), nil, true},
		{"nil/one", 1.0, nil, false},
		{"nil/false", false, nil, true},
		{"nil/true", true, nil, false},
		{"nil/map", map[string]any{}, nil, false},
		{"nil/list", []any{}, nil, false},

		// Map patterns only check that the value is a map; lists never match.
		{"map/map", map[string]any{"a": true}, map[string]any{"b": false}, true},
		{"map/string", "abc", map[string]any{}, false},
		{"list pattern", nil, []any{}, false},
		{"unsupported pattern", nil, []string{}, false},

		// Strings and wildcards.
		{"string/equal", "nginx", "nginx", true},
		{"string/different", "nginx", "nginx2", false},
		{"string/star", "", "*", true},
		{"string/star nil", nil, "*", false},
		{"string/question star empty", "", "?*", false},
		{"string/question star", "x", "?*", true},
		{"string/suffix", "nginx:latest", "*:latest", true},
		{"string/empty pattern", "", "", true},
		{"string/empty pattern nil", nil, "", false},
		{"string/empty pattern value", "x", "", false},
		{"string/map value", map[string]any{}, "*", false},
		{"string/list value", []any{"a"}, "*", false},

		// Numbers compared with string patterns: as quantities first, then as
		// strings (a float is formatted as 8E+01, an int as 80).
		{"number/string pattern", 80.0, "80", true},
		{"int64/string pattern", int64(80), "80", true},
		{"number/wildcard", 80.0, "8?", false},
		{"int/wildcard", 80, "8?", true},
		{"float/exponent wildcard", 1.0, "1E+*", true},
		{"int/star", int64(1), "*", true},

		// Not equal.
		{"not/different", "5.16.5-arch1-1", "!5.10.84-1", true},
		{"not/equal", "5.10.84-1", "!5.10.84-1", false},
		{"not/pattern text itself", "!5.10.84-1", "!5.10.84-1", true},
		{"not/wildcard", "nginx:1.2", "!*:latest", true},
		{"not/wildcard match", "nginx:latest", "!*:latest", false},
		{"not/nil", nil, "!*:latest", false},
		{"not/number", 7.00001, "!7", true},
		{"not/quantity", "1Gi", "!1024Mi", false},
		{"not/bare", "!", "!", true},

		// Comparisons.
		{">/int", 4, ">3", true},
		{">=/spaces", 4, ">= 3", true},
		{">=/equal", 3, ">=3", true},
		{"</float", 2.5, "<3", true},
		{"<=/string number", "3", "<=3", true},
		{">/string", "abc", ">3", false},
		{">/nil is zero", nil, ">0", false},
		{">=/nil is zero", nil, ">=0", true},
		{">/bool", true, ">0", false},
		{">/six decimals", 7.00001, ">7.000001", true},
		{"</six decimals", 6.000000001, "<6", false},
		{"=/six decimals", 1e-7, "0", true},
		{">/negative", -5, ">-10", true},

		// Quantities.
		{"qty/equal", "1024Mi", "1Gi", true},
		{"qty/milli", "0.2", "200m", true},
		{"qty/more", "1Gi", ">1000Mi", true},
		{"qty/less", "1G", "<1Gi", true},
		{"qty/more equal", "500m", ">=0.5", true},
		{"qty/more equal int", "1", ">=500m", true},
		{"qty/less equal", "0.2", "<=.5", true},
		{"qty/not equal", "0.2", "!.5", true},
		{"qty/not more", "500m", ">=0.6", false},
		{"qty/number value", 2.0, "<4", true},
		{"qty/int value", 8, "<4|8", true},
		{"qty/invalid value", "gii", "1024Gi", false},
		{"qty/invalid pattern", "1024Gi", "", false},

		// Durations are compared before quantities: "1m" is a minute, so
		// "500m" (500 minutes) is more than "1h".
		{"dur/equal", "12s", "12s", true},
		{"dur/less", "12s", "<15s", true},
		{"dur/less equal", "12s", "<=12s", true},
		{"dur/not less", "15s", "<12s", false},
		{"dur/more", "15s", ">12s", true},
		{"dur/minute", "1m", ">=60s", true},
		{"dur/mixed units", "1h30m", ">90m", false},
		{"dur/milli is minute", "500m", ">1h", true},
		{"dur/zero", nil, "<1s", true},
		{"dur/int zero", 0, "<1s", true},
		{"dur/int is a quantity", 5, "<1m", false},
		{"dur/not a duration", "soon", "<1m", false},

		// Ranges.
		{"range/low", 0, "0-2", true},
		{"range/mid", 1, "0-2", true},
		{"range/high", 2, "0-2", true},
		{"range/above", 3, "0-2", false},
		{"range/point", 2, "2-2", true},
		{"range/fraction low", 0, "0.00001-2.00001", false},
		{"range/fraction", 2, "0.00001-2.00001", true},
		{"range/fraction above", 2.0001, "0.00001-2.00001", false},
		{"range/fraction close", 2.99999, "2.99998-3", true},
		{"range/quantities", "256Mi", "128Mi-512Mi", true},
		{"range/quantities above", "1024Mi", "128Mi-512Mi", false},
		{"range/quantities below", "64Mi", "128Mi-512Mi", false},
		{"range/negative", -9, "-10-8", true},
		{"range/negative bounds", 9, "-10--8", false},
		{"range/negative quantities", "-9Mi", "-10Mi-8Mi", true},
		{"range/plus", 0, "-10-+8", true},
		{"range/plus quantities", "7Mi", "-10Mi-+8Mi", true},
		{"range/plus zero", 0, "+0-+1", true},
		{"range/durations", "90s", "1m-2m", true},
		{"range/durations above", "3m", "1m-2m", false},
		{"range/string value", "abc", "1-5", false},
		{"range/not a range", "1-2-3", "1-2-3", true},
		{"range/not a range value", "2", "1-2-3", false},

		{"not range/below", 0, "10!-20", true},
		{"not range/inside", 15, "10!-20", false},
		{"not range/above", 25, "10!-20", true},
		{"not range/point", 2, "2!-2", false},
		{"not range/fraction", 2.0001, "0.00001!-2.00001", true},
		{"not range/fraction inside", 1, "0.00001!-2.00001", false},
		{"not range/quantities", "1024Mi", "128Mi!-512Mi", true},
		{"not range/quantities inside", "256Mi", "128Mi!-512Mi", false},
		{"not range/negative", 9, "-10!--8", true},
		{"not range/negative inside", -9, "-10!--8", false},
		{"not range/negative quantities", "9Mi", "-10Mi!--8Mi", true},
		{"not range/plus", 10, "-10!-+8", true},
		{"not range/plus zero", 10, "+0!-+1", true},
		{"not range/plus quantities", "1025Mi", "+0Mi!-+1024Mi", true},

		// Or and and.
		{"or/first", "192.168.88.1", "192.168.88.1 | 10.100.11.*", true},
		{"or/second", "10.100.11.54", "192.168.88.1 | 10.100.11.*", true},
		{"or/none", "10.100.12.54", "192.168.88.1 | 10.100.11.*", false},
		{"and", "10", ">1 & <20", true},
		{"and/fails", "21", ">1 & <20", false},
		{"or of ands/first", "10", ">1 & <20 | >31 & <33", true},
		{"or of ands/second", "32", ">1 & <20 | >31 & <33", true},
		{"or of ands/none", "21", ">1 & <20 | >31 & <33", false},
		{"and of nots", "5.16.5-arch1-1", "!5.10.84-1 & !5.15.2-1", true},
		{"and of nots/first", "5.10.84-1", "!5.10.84-1 & !5.15.2-1", false},
		{"and of nots/second", "5.15.2-1", "!5.10.84-1 & !5.15.2-1", false},
		{"or/with not", "nginx", "*:latest | !*:*", true},
		{"or/with not tagged", "nginx:1.2", "*:latest | !*:*", false},
		{"or/pattern text itself", "a|b", "a|b", true},
		{"or/empty alternative", "", "a|", true},
		{"or/operand fully trimmed", "a", "a\t | b", true},
		{"or/operand fully trimmed value", "a\t", "a\t | b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MatchValue(tt.value, tt.pattern); got != tt.want {
				t.Errorf("MatchValue(%#v, %#v) = %v, want %v", tt.value, tt.pattern, got, tt.want)
			}
		})
	}
}

func TestOperatorOf(t *testing.T) {
	tests := []struct {
		term string
		want op
	}{
		{"", opEqual},
		{"f", opEqual},
		{">", opEqual},
		{"!", opEqual},
		{">=1", opMoreEqual},
		{"<=1", opLessEqual},
		{">1", opMore},
		{"<1", opLess},
		{"!1", opNotEqual},
		{"!1-2", opNotEqual},
		{"1!-2", opNotInRange},
		{"1-2", opInRange},
		{"1.5Mi-2Gi", opInRange},
		{"-1--2", opInRange},
		{"1-", opEqual},
		{"-1", opEqual},
		{"1.-2", opEqual},
		{"a-b", opEqual},
		{"1e-5", opInRange},
		{"1-2-3", opEqual},
		{"1 - 2", opEqual},
	}
	for _, tt := range tests {
		if got, _ := operatorOf(tt.term); got != tt.want {
			t.Errorf("operatorOf(%q) = %v, want %v", tt.term, got, tt.want)
		}
	}
}

func TestCompileValue(t *testing.T) {
	for _, bad := range []any{[]any{"a"}, []string{"a"}, struct{}{}, map[string]string{}} {
		if _, err := CompileValue(bad); err == nil {
			t.Errorf("CompileValue(%#v) succeeded", bad)
		}
	}
	m, err := CompileValue(">=1Gi")
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[any]bool{"2Gi": true, "512Mi": false, nil: false, 2e9: true} {
		if got := m.Match(v); got != want {
			t.Errorf("Match(%#v) = %v, want %v", v, got, want)
		}
	}
}

func TestToVal(t *testing.T) {
	tests := []struct {
		in   any
		want val
	}{
		{json.Number("12"), val{k: vInt, i: 12}},
		{json.Number("1.5"), val{k: vFloat, f: 1.5}},
		{json.Number("1e3"), val{k: vFloat, f: 1000}},
		{json.Number("99999999999999999999"), val{k: vFloat, f: 1e20}},
		{json.Number("x"), val{k: vOther}},
		{uint64(math.MaxUint64), val{k: vFloat, f: math.MaxUint64}},
		{uint(3), val{k: vInt, i: 3}},
		{int8(-3), val{k: vInt, i: -3}},
		{int16(-3), val{k: vInt, i: -3}},
		{int32(-3), val{k: vInt, i: -3}},
		{uint16(3), val{k: vInt, i: 3}},
		{uint32(3), val{k: vInt, i: 3}},
		{struct{}{}, val{k: vOther}},
	}
	for _, tt := range tests {
		if got := toVal(tt.in); got != tt.want {
			t.Errorf("toVal(%#v) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func BenchmarkMatchValue(b *testing.B) {
	m, err := CompileValue("128Mi-512Mi | >=1Gi & <=2Gi")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m.Match("1536Mi")
	}
}

// TestPlainStringPatternAgrees compares the string fast path of plain string
// patterns (matchString) with the general one (match on a classified value)
// on patterns and texts that exercise operators, alternatives, wildcards,
// durations and quantities.
func TestPlainStringPatternAgrees(t *testing.T) {
	pats := []string{"", "*", "?*", "*?", "a", "!a", "!*", "!?*", "nginx", "!*:latest", "*:*", "!*tiller*",
		"eu.foo.io/* | bar.io/*", "a|b", "a & !b", "!a & !b", " a | b ", "a&", "|", "&", "!", "!!a",
		"null", "true", "false", "0", "1", "!0", "10m", "!10s", "1Gi", "*Mi", "1-5", "1!-5", ">1", "<=2Gi",
		"!/var/run/docker.sock", "RuntimeDefault | Localhost", "?*|", "*é", "caf?", "a\xffc", "Always",
		"!Always", "*.corp.example.com/*:v?.*", "*a*b", "a?c", "*abc*", "abc*", "*abc"}
	texts := []string{"", "a", "b", "ab", "nginx", "nginx:latest", "nginx:1.2", "tiller", "x-tiller-y",
		"eu.foo.io/app", "bar.io/x", "baz.io/x", "0", "1", "10m", "10s", "1Gi", "2Gi", "512Mi", "3", "7",
		"/var/run/docker.sock", "RuntimeDefault", "Localhost", "Unconfined", "é", "café", "a\xffc", "\xff",
		"Always", "IfNotPresent", "true", "false", "null", "*", "?", "a|b", "a & !b", "registry.corp.example.com/a:v1.2",
		"abc", "xabcx", "a?c"}
	plain := 0
	for _, p := range pats {
		sp := parseStringPattern(p)
		if !sp.plain {
			continue
		}
		plain++
		for _, s := range texts {
			v := val{k: vString, s: s}
			if got, want := sp.matchString(s), sp.match(&v); got != want {
				t.Errorf("pattern %q, text %q: matchString %v, match %v", p, s, got, want)
			}
		}
	}
	if plain < len(pats)/2 {
		t.Errorf("only %d plain patterns", plain)
	}
	for _, p := range []string{"10m", "1Gi", "1-5", ">1", "!10s", "a|1Gi"} {
		if parseStringPattern(p).plain {
			t.Errorf("%q is plain", p)
		}
	}
}

func FuzzPlainStringPattern(f *testing.F) {
	f.Add("!*:latest", "nginx:latest")
	f.Add("eu.foo.io/* | bar.io/*", "bar.io/x")
	f.Add("a & !b|c?", "c\xff")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		sp := parseStringPattern(pattern)
		if !sp.plain {
			return
		}
		v := val{k: vString, s: s}
		if got, want := sp.matchString(s), sp.match(&v); got != want {
			t.Fatalf("pattern %q, text %q: matchString %v, match %v", pattern, s, got, want)
		}
	})
}
