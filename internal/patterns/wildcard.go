package patterns

import (
	"strings"
	"unicode/utf8"
)

// WildcardMatch reports whether s matches the Kyverno wildcard pattern:
// '*' matches any run of characters (including none) and '?' matches exactly
// one character. Characters are Unicode code points; every other character
// matches itself. An empty pattern matches only the empty string.
func WildcardMatch(pattern, s string) bool {
	return wildcardMatch(pattern, s)
}

// ContainsWildcard reports whether s holds a '*' or a '?'.
func ContainsWildcard(s string) bool {
	return strings.ContainsAny(s, "*?")
}

// wildcardMatch is the glob matcher behind WildcardMatch, generic so that a
// number formatted into a stack buffer can be matched without a copy.
func wildcardMatch[S string | []byte](pattern string, s S) bool {
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

// wild is a wildcard pattern compiled for the shapes policies use most:
// a literal, "*", "?*", and a literal with a leading or trailing star (or
// both). Everything else goes through wildcardMatch. The byte comparisons of
// the fast shapes agree with the code point semantics because the literal is
// valid UTF-8 without U+FFFD (decoding realigns on its first byte).
type wild struct {
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

func compileWild(p string) wild {
	w := wild{kind: wildGeneral, pat: p}
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

func matchWild[S string | []byte](w *wild, s S) bool {
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
	return wildcardMatch(w.pat, s)
}

// matchWildString is matchWild for a string, with the string comparisons of
// the standard library.
func matchWildString(w *wild, s string) bool {
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
	return wildcardMatch(w.pat, s)
}
