package conditions

import "github.com/gavelpolicy/gavel/internal/patterns"

// wildcardMatch is Kyverno's wildcard match ('*' any run of characters,
// '?' exactly one), shared with validate patterns.
func wildcardMatch(pattern, s string) bool { return patterns.WildcardMatch(pattern, s) }

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
