package podsecurity

import (
	"strings"
	"unicode/utf8"
)

// glob is a Kyverno wildcard pattern: '*' matches any run of characters
// (possibly empty), '?' exactly one character, everything else itself.
type glob struct {
	pattern string
	literal bool // no wildcard: plain comparison
	// prefix: the pattern is a prefix and one trailing '*' (as "nginx*"
	// or "*", image patterns mostly are), matched with strings.HasPrefix
	prefix bool
}

func compileGlob(p string) glob {
	i := strings.IndexAny(p, "*?")
	switch {
	case i < 0:
		return glob{pattern: p, literal: true}
	case i == len(p)-1 && p[i] == '*' && plainUTF8(p[:i]):
		return glob{pattern: p[:i], prefix: true}
	}
	return glob{pattern: p}
}

// plainUTF8 reports whether s is valid UTF-8 without U+FFFD: match then
// compares its runes as bytes (match decodes an invalid byte of a string
// as U+FFFD, equal to an invalid byte or a U+FFFD of the pattern).
func plainUTF8(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, utf8.RuneError)
}

func compileGlobs(ps []string) []glob {
	if len(ps) == 0 {
		return nil
	}
	out := make([]glob, len(ps))
	for i, p := range ps {
		out[i] = compileGlob(p)
	}
	return out
}

// match reports whether s matches the pattern. It runs in O(len(p)*len(s))
// at worst, with no recursion.
func (g glob) match(s string) bool {
	switch {
	case g.literal:
		return g.pattern == s
	case g.prefix:
		return strings.HasPrefix(s, g.pattern)
	}
	p := g.pattern
	pi, si := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(p) {
			switch p[pi] {
			case '*':
				starP, starS = pi, si
				pi++
				continue
			case '?':
				_, n := utf8.DecodeRuneInString(s[si:])
				pi++
				si += n
				continue
			default:
				pr, pn := utf8.DecodeRuneInString(p[pi:])
				sr, sn := utf8.DecodeRuneInString(s[si:])
				if pr == sr {
					pi += pn
					si += sn
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		// Let the last '*' absorb one more character and retry.
		_, n := utf8.DecodeRuneInString(s[starS:])
		starS += n
		pi, si = starP+1, starS
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// matchAny reports whether s matches at least one of the patterns.
func matchAny(gs []glob, s string) bool {
	for _, g := range gs {
		if g.match(s) {
			return true
		}
	}
	return false
}
