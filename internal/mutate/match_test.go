package mutate

import (
	"testing"

	"github.com/gavelpolicy/gavel/internal/patterns"
	"github.com/gavelpolicy/gavel/internal/wildcard"
)

func TestMatchLeaf(t *testing.T) {
	tests := []struct {
		value, pattern any
		want           bool
	}{
		{"nginx:latest", "*:latest", true},
		{"nginx:1.25", "*:latest", false},
		{"", "?*", false},
		{"a", "?*", true},
		{"abc", "a?c", true},
		{"ac", "a?c", false},
		{"mongo:7", "*cassandra* | *mongo*", true},
		{"nginx", "!nginx", false},
		{"redis", "!nginx", true},
		{"5", ">3", true},
		{"3", ">3", false},
		{"3", ">=3", true},
		{"2Gi", "<=1Gi", false},
		{"512Mi", "<1Gi", true},
		{"5", "1-10", true},
		{"11", "1-10", false},
		{"11", "1!-10", true},
		{"5", "1!-10", false},
		{"30s", "<1m", true},
		{"2m", "<1m", false},
		{float64(3), float64(3), true},
		{"3", float64(3), true},
		{float64(3.5), float64(3), false},
		{true, true, true},
		{"true", true, false},
		{"", nil, true},
		{float64(0), nil, true},
		{"x", nil, false},
		{map[string]any{}, map[string]any{"a": "b"}, true},
		{"x", []any{"x"}, false},
		{"a&b", "a&b", true},
		{"abc", "a* & *c", true},
		{"abd", "a* & *c", false},
	}
	for _, tt := range tests {
		if got := patterns.MatchValue(tt.value, tt.pattern); got != tt.want {
			t.Errorf("matchLeaf(%#v, %#v) = %v, want %v", tt.value, tt.pattern, got, tt.want)
		}
	}
}

func TestMatchCondition(t *testing.T) {
	tests := []struct {
		name              string
		resource, pattern any
		want              bool
	}{
		{"map subset", map[string]any{"a": "x", "b": "y"}, map[string]any{"a": "x"}, true},
		{"map mismatch", map[string]any{"a": "x"}, map[string]any{"a": "z"}, false},
		{"missing key", map[string]any{}, map[string]any{"a": "x"}, false},
		{"star needs a value", map[string]any{"a": nil}, map[string]any{"a": "*"}, false},
		{"star with value", map[string]any{"a": "v"}, map[string]any{"a": "*"}, true},
		{"negation absent", map[string]any{"b": "x"}, map[string]any{"X(a)": "null"}, true},
		{"negation present", map[string]any{"a": "x"}, map[string]any{"X(a)": "null"}, false},
		{"equality absent", map[string]any{}, map[string]any{"=(a)": "x"}, true},
		{"equality mismatch", map[string]any{"a": "y"}, map[string]any{"=(a)": "x"}, false},
		{"conditional absent", map[string]any{}, map[string]any{"(a)": "x"}, false},
		{"global absent", map[string]any{}, map[string]any{"<(a)": "x"}, true},
		{
			"list of maps: one element applies",
			[]any{map[string]any{"image": "a"}, map[string]any{"image": "b"}},
			[]any{map[string]any{"(image)": "b"}}, true,
		},
		{
			"list of maps: none applies",
			[]any{map[string]any{"image": "a"}},
			[]any{map[string]any{"(image)": "b"}}, false,
		},
		{
			"list of maps: every element must match",
			[]any{map[string]any{"image": "a"}, map[string]any{"image": "b"}},
			[]any{map[string]any{"image": "a"}}, false,
		},
		{"scalar list", []any{"a1", "a2"}, []any{"a*"}, true},
		{"scalar list mismatch", []any{"a1", "b2"}, []any{"a*"}, false},
		{"empty pattern list", []any{"a"}, []any{}, false},
		{
			"existence",
			map[string]any{"c": []any{map[string]any{"n": "x"}, map[string]any{"n": "y"}}},
			map[string]any{"^(c)": []any{map[string]any{"n": "y"}}}, true,
		},
		{
			"existence fails",
			map[string]any{"c": []any{map[string]any{"n": "x"}}},
			map[string]any{"^(c)": []any{map[string]any{"n": "y"}}}, false,
		},
		{"structure mismatch", "x", map[string]any{"a": "x"}, false},
	}
	for _, tt := range tests {
		err := matchCondition(tt.resource, tt.pattern)
		if (err == nil) != tt.want {
			t.Errorf("%s: matchCondition = %v, want match %v", tt.name, err, tt.want)
		}
	}
}

func TestWildcardMatch(t *testing.T) {
	tests := []struct {
		p, s string
		want bool
	}{
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"*.*", "a.b", true},
		{"??", "é!", true},
		{"?", "", false},
		{"a**", "a", true},
	}
	for _, tt := range tests {
		if got := wildcard.Match(tt.p, tt.s); got != tt.want {
			t.Errorf("wildcardMatch(%q, %q) = %v", tt.p, tt.s, got)
		}
	}
}
