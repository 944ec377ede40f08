package conditions

import "unicode/utf8"

// TODO(lead): share with patterns (patterns.WildcardMatch).

// wildcardMatch reports whether s matches pattern, in which '*' stands for any
// run of characters (the empty one included) and '?' for exactly one
// character; every other character stands for itself and there is no escape.
// Matching is done per rune (invalid UTF-8 bytes decode to U+FFFD, as in a
// range loop), and only the most recent '*' is ever retried, so the running
// time is O(len(pattern)*len(s)) at worst.
func wildcardMatch(pattern, s string) bool {
	if !hasWildcard(pattern) {
		if pattern == s {
			return true
		}
		if utf8.ValidString(pattern) && utf8.ValidString(s) {
			return false
		}
	}
	p, i := 0, 0          // next byte to match in pattern and s
	starP, starI := -1, 0 // pattern offset after the last '*', and where in s it resumes
	for i < len(s) {
		if p < len(pattern) {
			switch c := pattern[p]; c {
			case '*':
				p++
				if p == len(pattern) {
					return true
				}
				starP, starI = p, i
				continue
			case '?':
				_, w := utf8.DecodeRuneInString(s[i:])
				p++
				i += w
				continue
			default:
				pr, pw := utf8.DecodeRuneInString(pattern[p:])
				sr, sw := utf8.DecodeRuneInString(s[i:])
				if pr == sr {
					p += pw
					i += sw
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		_, w := utf8.DecodeRuneInString(s[starI:])
		starI += w
		p, i = starP, starI
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

func hasWildcard(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '*' || s[i] == '?' {
			return true
		}
	}
	return false
}

// numberStart reports whether s can start a Go duration, a resource quantity
// or a range bound: an optional sign, then a digit or a '.'. It lets the hot
// paths skip parsers that would only fail (and allocate an error).
func numberStart(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	return s != "" && (s[0] == '.' || s[0] >= '0' && s[0] <= '9')
}
