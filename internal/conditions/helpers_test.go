package conditions

import (
	"strings"
	"testing"
	"time"

	"github.com/gavelpolicy/gavel/internal/wildcard"
)

func TestWildcardMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"*", "anything/at:all", true},
		{"?", "", false},
		{"?", "a", true},
		{"?", "é", true},
		{"??", "é", false},
		{"a*", "a", true},
		{"a*b", "ab", true},
		{"a*b", "axxb", true},
		{"a*b", "axxbc", false},
		{"*.mycompany.com", "x.mycompany.com", true},
		{"*.mycompany.com", "mycompany.com", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"*a*a*a*b", strings.Repeat("a", 40), false},
		{"*a*a*a*b", strings.Repeat("a", 40) + "b", true},
		{"**", "x", true},
		{"a**", "a", true},
		{"abc", "abc", true},
		{"abc", "abd", false},
		{"\xff", "\xfe", true}, // both decode to U+FFFD, as upstream
		{"x\xff*", "x\xfey", true},
	}
	for _, tc := range tests {
		if got := wildcard.Match(tc.pattern, tc.s); got != tc.want {
			t.Errorf("wildcard.Match(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

// TestSemverOperands: strings that are semantic versions (and no
// number, quantity or duration) compare as versions, strictly parsed as
// upstream's library parses them; others do not compare.
func TestSemverOperands(t *testing.T) {
	valid := []string{"0.0.0", "1.2.3", "10.20.30", "1.2.3-alpha", "1.2.3-alpha.1", "1.2.3-0.3.7", "1.2.3-x-y-z.--", "1.2.3+build", "1.2.3-rc.1+build.5", "1.2.3+001"}
	for _, s := range valid {
		if !numericString(s, s, GreaterThanOrEquals) {
			t.Errorf("%q >= itself does not hold", s)
		}
	}
	invalid := []string{"", "v1.2.3", "01.2.3", "1.02.3", "1.2.03", "1.2.3.4", "1.2.3-", "1.2.3-01", "1.2.3-a..b", "1.2.3+", "1.2.3+a_b", "1.2.3-é", "a.b.c", "1.2.-3", "99999999999999999999.0.0"}
	for _, s := range invalid {
		if numericString(s, s, GreaterThanOrEquals) || numericString("1.0.0", s, GreaterThanOrEquals) {
			t.Errorf("%q compares as a version", s)
		}
	}
	order := []string{"1.0.0-1", "1.0.0-2", "1.0.0-10", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0", "1.0.1", "1.1.0", "1.10.0", "2.0.0"}
	for i := 0; i+1 < len(order); i++ {
		a, b := order[i], order[i+1]
		if !numericString(a, b, LessThan) || !numericString(b, a, GreaterThan) || numericString(a, a, LessThan) {
			t.Errorf("%s < %s does not hold", a, b)
		}
	}
	if !numericString("1.2.3+a", "1.2.3+b", GreaterThanOrEquals) || !numericString("1.2.3+a", "1.2.3+b", LessThanOrEquals) {
		t.Error("build metadata is not ignored")
	}
}

func TestClassifyAndMatchPattern(t *testing.T) {
	classes := map[string]patternOp{
		"":       opEqual,
		"5":      opEqual,
		">=5":    opMoreEqual,
		"<=5":    opLessEqual,
		">5":     opMore,
		"<5":     opLess,
		"!5":     opNotEqual,
		"1-10":   opInRange,
		"1!-10":  opNotInRange,
		"-5-5":   opInRange,
		"+1-2Gi": opInRange,
		"|5-10":  opInRange, // upstream's sign class includes '|'
		"a-b":    opEqual,
		"1-10-1": opEqual,
		"1h-2h":  opInRange,
		"1.5-2":  opInRange,
	}
	for p, want := range classes {
		if got := classify(p); got != want {
			t.Errorf("classify(%q) = %v, want %v", p, got, want)
		}
	}
	matches := []struct {
		value, pattern string
		want           bool
	}{
		{"5", "1-10", true},
		{"1", "1-10", true},
		{"0", "1-10", false},
		{"0", "1!-10", true},
		{"5", "1!-10", false},
		{"30m", "1h-2h", false}, // 30 minutes, below the range
		{"90m", "1h-2h", true},  // 90 minutes, as a duration
		{"2Gi", "1Gi-4Gi", true},
		{"abc", "abc", true},
		{"abc", "a*", true},
		{"abc", "!a*", false},
		{"5", ">3 & <7", true},
		{"9", ">3 & <7", false},
		{"9", "<3 | >7", true},
		{"x", "|5-10", false},
		{"", "|5-10", true},
	}
	for _, tc := range matches {
		if got := matchPattern(tc.value, tc.pattern); got != tc.want {
			t.Errorf("matchPattern(%q, %q) = %v, want %v", tc.value, tc.pattern, got, tc.want)
		}
	}
}

func TestDurations(t *testing.T) {
	tests := []struct {
		key, value any
		kd, vd     time.Duration
		ok         bool
	}{
		{"1h", "30m", time.Hour, 30 * time.Minute, true},
		{"1h", 60.0, time.Hour, time.Minute, true},
		{90.0, "1m", 90 * time.Second, time.Minute, true},
		{1.9, "1s", time.Second, time.Second, true},
		{"0", "1s", 0, 0, false},
		{"0", 1.0, 0, 0, false},
		{"1h", "x", 0, 0, false},
		{"1h", true, 0, 0, false},
		{1.0, 2.0, 0, 0, false},
	}
	for _, tc := range tests {
		kd, vd, ok := durations(tc.key, tc.value)
		if ok != tc.ok || (ok && (kd != tc.kd || vd != tc.vd)) {
			t.Errorf("durations(%v, %v) = %v, %v, %v", tc.key, tc.value, kd, vd, ok)
		}
	}
	if d := floatDuration(1e300); d != time.Duration(-1<<63) {
		t.Errorf("floatDuration(1e300) = %v", d)
	}
}

func TestText(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{"s", "s"},
		{1.0, "1"},
		{1.5, "1.5"},
		{1e6, "1e+06"},
		{123456.0, "123456"},
		{int64(7), "7"},
		{true, "true"},
		{nil, "<nil>"},
		{[]any{1.0, "a"}, "[1 a]"},
		{map[string]any{"b": 2.0, "a": int64(1)}, "map[a:1 b:2]"},
	}
	for _, tc := range tests {
		if got := text(tc.in); got != tc.want {
			t.Errorf("text(%#v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
