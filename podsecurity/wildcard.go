package podsecurity

import "unicode/utf8"

// glob is a Kyverno wildcard pattern: '*' matches any run of characters
// (possibly empty), '?' exactly one character, everything else itself.
type glob struct {
	pattern string
	literal bool // no wildcard: plain comparison
}

func compileGlob(p string) glob {
	for i := 0; i < len(p); i++ {
		if p[i] == '*' || p[i] == '?' {
			return glob{pattern: p}
		}
	}
	return glob{pattern: p, literal: true}
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
	if g.literal {
		return g.pattern == s
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
