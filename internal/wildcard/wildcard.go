// Package wildcard is the one wildcard matcher of gavel: Kyverno's dialect
// ('*' any run of characters, '?' exactly one, no escaping) used by
// validate patterns, condition operators, match/exclude blocks, exception
// names, Pod Security exclusions and the wildcard JMESPath function.
package wildcard

import (
	"strings"
	"unicode/utf8"
)

// Has reports whether s holds a '*' or a '?'.
func Has(s string) bool { return strings.ContainsAny(s, "*?") }

// Match reports whether s matches the wildcard pattern: '*' matches any
// run of characters (including none) and '?' exactly one. Characters are
// code points (an invalid byte is one U+FFFD, as in a []rune conversion);
// every other character matches itself, with no escaping. An empty pattern
// matches only the empty string. It is generic so that a number formatted
// into a stack buffer is matched without a copy, and does not allocate.
func Match[S string | []byte](pattern string, s S) bool {
	if pattern == "" {
		return len(s) == 0
	}
	if pattern == "*" || equalBytes(pattern, s) {
		return true
	}
	// Iterative glob with backtracking to the most recent star: for patterns
	// made of literals, '*' and '?' this finds a match whenever one exists.
	p, i := 0, 0        // positions in pattern and s
	star, mark := -1, 0 // last star seen in pattern, and how far into s it reaches
	for i < len(s) {
		if p < len(pattern) {
			// ASCII characters are read in place; others are decoded.
			// This halves the matcher's cost on ASCII text (its
			// BenchmarkMatch: 1.8k instructions/op against 3.5k
			// decoding every character; 0.4% of BenchmarkValidate).
			pc, pw := rune(pattern[p]), 1
			if pc >= utf8.RuneSelf {
				pc, pw = utf8.DecodeRuneInString(pattern[p:])
			}
			sc, sw := rune(s[i]), 1
			if sc >= utf8.RuneSelf {
				sc, sw = runeAt(s, i)
			}
			switch pc {
			case '*':
				star, mark = p, i
				p += pw
				continue
			case '?':
				p += pw
				i += sw
				continue
			default:
				if sc == pc {
					p += pw
					i += sw
					continue
				}
			}
		}
		if star < 0 {
			return false
		}
		// Let the last star absorb one more character of s and retry.
		if s[mark] < utf8.RuneSelf {
			mark++
		} else {
			_, sw := runeAt(s, mark)
			mark += sw
		}
		i = mark
		p = star + 1
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

func equalBytes[S string | []byte](a string, b S) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// runeAt decodes the code point starting at s[i] the way a []rune conversion
// does: an invalid byte is one utf8.RuneError.
func runeAt[S string | []byte](s S, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	var buf [utf8.UTFMax]byte
	n := copy(buf[:], s[i:])
	return utf8.DecodeRune(buf[:n])
}

// Pattern is a wildcard pattern compiled for the shapes policies use most:
// a literal, "*", "?*", and a literal with a leading or trailing star (or
// both: image patterns such as "nginx*" mostly are), compared as bytes.
// Everything else goes through Match. The byte comparisons of the fast
// shapes agree with the code point semantics because the literal is valid
// UTF-8 without U+FFFD (decoding realigns on its first byte).
type Pattern struct {
	kind wildKind
	lit  string // the literal part
	pat  string // the whole pattern
}

type wildKind uint8

const (
	wildGeneral wildKind = iota
	wildLiteral
	wildAny
	wildNonEmpty
	wildPrefix
	wildSuffix
	wildContains
)

// Compile compiles p.
func Compile(p string) Pattern {
	w := Pattern{kind: wildGeneral, pat: p}
	switch {
	case p == "*":
		w.kind = wildAny
		return w
	case p == "?*" || p == "*?":
		w.kind = wildNonEmpty
		return w
	case strings.ContainsRune(p, '?') || !utf8.ValidString(p) || strings.ContainsRune(p, utf8.RuneError):
		return w
	}
	lit := strings.TrimPrefix(p, "*")
	leading := len(lit) < len(p)
	trailing := strings.HasSuffix(lit, "*")
	lit = strings.TrimSuffix(lit, "*")
	if strings.ContainsRune(lit, '*') || (leading && trailing && lit == "") {
		return w
	}
	w.lit = lit
	switch {
	case leading && trailing:
		w.kind = wildContains
	case leading:
		w.kind = wildSuffix
	case trailing:
		w.kind = wildPrefix
	default:
		w.kind = wildLiteral
	}
	return w
}

// Literal returns the text the pattern matches when it matches only that
// text (no wildcard, valid UTF-8 without U+FFFD).
func (w *Pattern) Literal() (string, bool) { return w.lit, w.kind == wildLiteral }

// MatchBytes is Match of the compiled pattern against b. It is not inlined:
// the generic matcher instantiated in the caller's package would make b
// escape (a number formatted into a stack buffer would move to the heap).
//
//go:noinline
func (w *Pattern) MatchBytes(b []byte) bool { return matchCompiled(w, b) }

func matchCompiled[S string | []byte](w *Pattern, s S) bool {
	switch w.kind {
	case wildAny:
		return true
	case wildNonEmpty:
		return len(s) > 0
	case wildLiteral:
		return equalBytes(w.lit, s)
	case wildPrefix:
		return len(s) >= len(w.lit) && equalBytes(w.lit, s[:len(w.lit)])
	case wildSuffix:
		return len(s) >= len(w.lit) && equalBytes(w.lit, s[len(s)-len(w.lit):])
	case wildContains:
		for i := 0; i+len(w.lit) <= len(s); i++ {
			if equalBytes(w.lit, s[i:i+len(w.lit)]) {
				return true
			}
		}
		return false
	}
	return Match(w.pat, s)
}

// Match is Match of the compiled pattern against s, with the string
// comparisons of the standard library.
func (w *Pattern) Match(s string) bool {
	switch w.kind {
	case wildAny:
		return true
	case wildNonEmpty:
		return s != ""
	case wildLiteral:
		return s == w.lit
	case wildPrefix:
		return strings.HasPrefix(s, w.lit)
	case wildSuffix:
		return strings.HasSuffix(s, w.lit)
	case wildContains:
		return strings.Contains(s, w.lit)
	}
	return Match(w.pat, s)
}

// CompileAll compiles each pattern of ps; nil when there are none.
func CompileAll(ps []string) []Pattern {
	if len(ps) == 0 {
		return nil
	}
	out := make([]Pattern, len(ps))
	for i, p := range ps {
		out[i] = Compile(p)
	}
	return out
}

// MatchAny reports whether s matches at least one of ps.
func MatchAny(ps []Pattern, s string) bool {
	for i := range ps {
		if ps[i].Match(s) {
			return true
		}
	}
	return false
}
