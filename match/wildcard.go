package match

import (
	"strings"
	"unicode/utf8"
)

// Wildcard reports whether s matches pattern, where '*' stands for any
// sequence of characters (including none) and '?' for exactly one character.
// No other character is special and there is no escaping. The empty pattern
// matches only the empty string; "*" matches everything. This is the
// wildcard dialect of Kyverno's match/exclude blocks, exception rule names
// and PodSecurity image lists.
//
// Wildcard does not allocate.
func Wildcard(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	if pattern == "*" || pattern == s {
		return true
	}
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		if p < len(pattern) {
			switch c := pattern[p]; {
			case c == '*':
				starP, starI = p, i
				p++
				continue
			case c == '?':
				_, size := utf8.DecodeRuneInString(s[i:])
				i += size
				p++
				continue
			case c == s[i]:
				i++
				p++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		// Let the last star swallow one more character and retry.
		_, size := utf8.DecodeRuneInString(s[starI:])
		starI += size
		i = starI
		p = starP + 1
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// hasWildcard reports whether s contains '*' or '?'.
func hasWildcard(s string) bool {
	return strings.ContainsAny(s, "*?")
}

// pattern is a precompiled wildcard pattern: literal patterns compare with ==.
type pattern struct {
	s    string
	wild bool
}

func newPattern(s string) pattern {
	return pattern{s: s, wild: hasWildcard(s)}
}

func (p pattern) match(s string) bool {
	if !p.wild {
		return p.s == s
	}
	return Wildcard(p.s, s)
}

func newPatterns(in []string) []pattern {
	if len(in) == 0 {
		return nil
	}
	out := make([]pattern, len(in))
	for i, s := range in {
		out[i] = newPattern(s)
	}
	return out
}

func matchAny(ps []pattern, s string) bool {
	for i := range ps {
		if ps[i].match(s) {
			return true
		}
	}
	return false
}
