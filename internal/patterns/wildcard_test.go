package patterns

import "testing"

func TestWildcardMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"", "", true},
		{"", "x", false},
		{"?", "", false},
		{"?", "a", true},
		{"?", "ab", false},
		{"?*", "", false},
		{"?*", "a", true},
		{"*?", "abc", true},
		{"**", "", true},
		{"nginx", "nginx", true},
		{"nginx", "nginx2", false},
		{"*:latest", "nginx:latest", true},
		{"*:latest", "nginx:1.2", false},
		{"*:*", "nginx", false},
		{"*/ping*", "/ping", true},
		{"ab*ba", "abbeba", true},
		{"ab*ba", "abbca", false},
		{"ab?ba", "abbba", true},
		{"ab?ba", "abbbba", false},
		{"*right", "leftright", true},
		{"*right", "leftmiddle", false},
		{"a*b*c", "aXXbYYbZZc", true},
		{"a*b*c", "aXXbYYbZZ", false},
		{"bucket/In*/Ka*/Ban", "bucket/India/State/Karnataka/Area/Ban", true},
		{"bucket/In*/Ka*/Ban", "bucket/India/Karnataka/Bangalore", false},
		{"bucket/mnop*?and", "bucket/mnopand", false},
		{"bucket/mnop*?and", "bucket/mnopqand", true},
		{"bucket/mnop*?and?", "bucket/mnopqanda", true},
		{"my??bucket", "mybucket", false},
		{"my??bucket", "my4abucket", true},
		{"abc?efg", "abc/efg", true},
		// '?' is one code point, not one byte.
		{"caf?", "café", true},
		{"?", "é", true},
		{"??", "é", false},
		{"*é", "café", true},
		// An invalid byte is one (replacement) character on both sides.
		{"a?c", "a\xffc", true},
		{"a\xfec", "a\xffc", true},
		// A pattern equal to the text matches even with wildcard characters.
		{"a?", "a?", true},
		{"a*b", "a*b", true},
	}
	for _, tt := range tests {
		if got := WildcardMatch(tt.pattern, tt.s); got != tt.want {
			t.Errorf("WildcardMatch(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
		if got := wildcardMatch(tt.pattern, []byte(tt.s)); got != tt.want {
			t.Errorf("wildcardMatch(%q, []byte(%q)) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func TestContainsWildcard(t *testing.T) {
	for s, want := range map[string]bool{"a*": true, "a?": true, "abc": false, "": false} {
		if ContainsWildcard(s) != want {
			t.Errorf("ContainsWildcard(%q) = %v", s, !want)
		}
	}
}

func BenchmarkWildcardMatch(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		WildcardMatch("*.corp.example.com/*:v?.*", "registry.corp.example.com/team/app:v1.2.3")
	}
}

func TestCompiledWildcardAgrees(t *testing.T) {
	patterns := []string{"", "*", "?*", "*?", "**", "abc", "abc*", "*abc", "*abc*", "*a*b", "a?c", "é*", "*é", "*\uFFFD", "a\xff*", "?", "*:latest", "!*"}
	texts := []string{"", "a", "abc", "abcd", "xabc", "xabcx", "ab", "é", "éa", "aé", "a\xffc", "\xff", "\uFFFD", "x:latest", ":latest", "*abc", "a?c"}
	for _, p := range patterns {
		w := compileWild(p)
		for _, s := range texts {
			if got, want := matchWild(&w, s), wildcardMatch(p, s); got != want {
				t.Errorf("pattern %q (kind %d), text %q: compiled %v, glob %v", p, w.kind, s, got, want)
			}
			if got, want := matchWildString(&w, s), wildcardMatch(p, s); got != want {
				t.Errorf("pattern %q (kind %d), text %q: compiled for strings %v, glob %v", p, w.kind, s, got, want)
			}
		}
	}
}

func FuzzWildcard(f *testing.F) {
	f.Add("*.io/*", "example.io/app")
	f.Add("a?c*", "a\xffcd")
	f.Add("*é", "café")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		w := compileWild(pattern)
		if got, want := matchWild(&w, s), wildcardMatch(pattern, s); got != want {
			t.Fatalf("pattern %q, text %q: compiled %v, glob %v", pattern, s, got, want)
		}
		if got, want := matchWildString(&w, s), wildcardMatch(pattern, s); got != want {
			t.Fatalf("pattern %q, text %q: compiled for strings %v, glob %v", pattern, s, got, want)
		}
		if got, want := wildcardMatch(pattern, s), referenceMatch(pattern, s); got != want {
			t.Fatalf("pattern %q, text %q: glob %v, reference %v", pattern, s, got, want)
		}
		if got, want := wildcardMatch(pattern, []byte(s)), wildcardMatch(pattern, s); got != want {
			t.Fatalf("pattern %q, text %q: bytes %v, string %v", pattern, s, got, want)
		}
	})
}

// referenceMatch is a plain dynamic-programming glob over code points (an
// invalid byte is one U+FFFD, as in a []rune conversion).
func referenceMatch(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	p, r := []rune(pattern), []rune(s)
	// ok[j] reports whether p[:i] matches r[:j].
	ok := make([]bool, len(r)+1)
	ok[0] = true
	for i := range p {
		next := make([]bool, len(r)+1)
		for j := 0; j <= len(r); j++ {
			switch {
			case p[i] == '*':
				next[j] = ok[j] || (j > 0 && next[j-1])
			case j > 0 && (p[i] == '?' || p[i] == r[j-1]):
				next[j] = ok[j-1]
			}
		}
		ok = next
	}
	return ok[len(r)]
}
