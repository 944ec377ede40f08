package wildcard

import (
	"math/rand"
	"testing"
)

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
		if got := Match(tt.pattern, tt.s); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
		if got := Match(tt.pattern, []byte(tt.s)); got != tt.want {
			t.Errorf("Match(%q, []byte(%q)) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
		w := Compile(tt.pattern)
		if got := w.Match(tt.s); got != tt.want {
			t.Errorf("Compile(%q).Match(%q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func TestHas(t *testing.T) {
	for s, want := range map[string]bool{"a*": true, "a?": true, "abc": false, "": false} {
		if Has(s) != want {
			t.Errorf("Has(%q) = %v", s, !want)
		}
	}
}

func BenchmarkMatch(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Match("*.corp.example.com/*:v?.*", "registry.corp.example.com/team/app:v1.2.3")
	}
}

func TestCompiledAgrees(t *testing.T) {
	patterns := []string{"", "*", "?*", "*?", "**", "abc", "abc*", "*abc", "*abc*", "*a*b", "a?c", "é*", "*é", "*\uFFFD", "a\xff*", "?", "*:latest", "!*"}
	texts := []string{"", "a", "abc", "abcd", "xabc", "xabcx", "ab", "é", "éa", "aé", "a\xffc", "\xff", "\uFFFD", "x:latest", ":latest", "*abc", "a?c"}
	for _, p := range patterns {
		w := Compile(p)
		for _, s := range texts {
			if got, want := w.MatchBytes([]byte(s)), Match(p, s); got != want {
				t.Errorf("pattern %q (kind %d), text %q: compiled %v, glob %v", p, w.kind, s, got, want)
			}
			if got, want := w.Match(s), Match(p, s); got != want {
				t.Errorf("pattern %q (kind %d), text %q: compiled for strings %v, glob %v", p, w.kind, s, got, want)
			}
		}
	}
}

func FuzzMatch(f *testing.F) {
	f.Add("*.io/*", "example.io/app")
	f.Add("a?c*", "a\xffcd")
	f.Add("*é", "café")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		w := Compile(pattern)
		if got, want := w.MatchBytes([]byte(s)), Match(pattern, s); got != want {
			t.Fatalf("pattern %q, text %q: compiled %v, glob %v", pattern, s, got, want)
		}
		if got, want := w.Match(s), Match(pattern, s); got != want {
			t.Fatalf("pattern %q, text %q: compiled for strings %v, glob %v", pattern, s, got, want)
		}
		if got, want := Match(pattern, s), referenceMatch(pattern, s); got != want {
			t.Fatalf("pattern %q, text %q: glob %v, reference %v", pattern, s, got, want)
		}
		if got, want := Match(pattern, []byte(s)), Match(pattern, s); got != want {
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

func TestImagePatterns(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "anything", true},
		{"*", "", true},
		{"", "", true},
		{"", "x", false},
		{"nginx*", "nginx:1.25", true},
		{"nginx*", "docker.io/nginx", false},
		{"*/istio/proxyv2*", "docker.io/istio/proxyv2:1.20.2", true},
		{"*/istio/proxyv2*", "istio/proxyv2:1.20.2", false},
		{"redis?7", "redis:7", true},
		{"redis?7", "redis7", false},
		{"a?c", "abc", true},
		{"a?c", "a/c", true},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
		{"*?", "", false},
		{"*?", "x", true},
		{"?", "é", true},
		{"SYS_*", "SYS_ADMIN", true},
		{"nginx", "nginx", true},
		{"nginx", "nginx:latest", false},
		{"**a", "bba", true},
	}
	for _, tt := range tests {
		w := Compile(tt.pattern)
		if got := w.Match(tt.s); got != tt.want {
			t.Errorf("match(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

// TestPrefixPatterns compares patterns of a prefix and a trailing '*',
// matched with strings.HasPrefix, with the general matcher, on random strings
// (invalid UTF-8 and U+FFFD included).
func TestPrefixPatterns(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	frags := []string{"a", "b", "nginx", ":", "/", "é", "\xff", "\xc3", "\ufffd", "?", "*", ""}
	str := func() string {
		s := ""
		for n := r.Intn(5); n > 0; n-- {
			s += frags[r.Intn(len(frags))]
		}
		return s
	}
	prefixes := 0
	for i := 0; i < 200000; i++ {
		p := str() + "*"
		s := str()
		if i%2 == 0 {
			s = p[:r.Intn(len(p))] + str()
		}
		g := Compile(p)
		if g.kind == wildPrefix {
			prefixes++
		}
		if got, want := g.Match(s), Match(p, s); got != want {
			t.Fatalf("match(%q, %q) = %v, general matcher %v", p, s, got, want)
		}
	}
	if prefixes < 10000 {
		t.Fatalf("only %d prefix patterns", prefixes)
	}
}
