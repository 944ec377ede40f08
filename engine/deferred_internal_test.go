package engine

import (
	"regexp"
	"testing"
)

// TestMentions checks mentions against upstream's regular expression for
// the names and queries of the cases, and against the expected answer.
func TestMentions(t *testing.T) {
	tests := []struct {
		query, name string
		want        bool
	}{
		{"x", "x", true},
		{"x.y", "x", true},
		{"length(x)", "x", true},
		{"{{ x }}", "x", true},
		{"items[?name=='x']", "x", true},
		{"my_x", "x", true}, // "_" is not in upstream's excluded class
		{"y.x", "x", false},
		{"xy", "x", false},
		{"yx", "x", false},
		{"x1", "x", false},
		{"1x", "x", false},
		{"a.x b.x x", "x", true}, // the third occurrence
		{"emptydirnames", "emptydirnames", true},
		{"request.object.spec.volumes", "emptydirnames", false},
		{"join('-', ['bye', name])", "name", true},
		{"request.object.metadata.name", "name", false},
		{"metadata.name || name", "name", true},
		{"a-b", "a-", true},   // a name ending with a non-word character
		{"a- b", "a-", false}, // then the boundary needs a word character after it
		{"", "x", false},
	}
	for _, tc := range tests {
		re := regexp.MustCompile(`(?:\A|\z|\s|[^.0-9A-Za-z])` + regexp.QuoteMeta(tc.name) + `\b`)
		if upstream := re.MatchString(tc.query); upstream != tc.want {
			t.Errorf("upstream's expression on %q, %q = %v, the case says %v", tc.query, tc.name, upstream, tc.want)
		}
		if got := mentions(tc.query, tc.name); got != tc.want {
			t.Errorf("mentions(%q, %q) = %v, want %v", tc.query, tc.name, got, tc.want)
		}
	}
}
