package match

import (
	"strings"

	"github.com/gavelpolicy/gavel/internal/patterns"
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
	return patterns.WildcardMatch(pattern, s)
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
