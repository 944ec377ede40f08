package migrate

import (
	"regexp"
	"strings"
)

// hasWildcard reports whether a Kyverno value uses the wildcards * or ?.
func hasWildcard(p string) bool { return strings.ContainsAny(p, "*?") }

// wildcardMatch tests the string s against a Kyverno wildcard pattern
// (* any run of characters, ? one character), in the plainest CEL form:
// equality, startsWith, endsWith, contains, or an anchored regular
// expression.
func wildcardMatch(s ex, p string) ex {
	if !hasWildcard(p) {
		return rel(s, "==", strLit(p))
	}
	if strings.Trim(p, "*") == "" {
		return exTrue
	}
	if !strings.Contains(p, "?") {
		inner := strings.Trim(p, "*")
		if !strings.Contains(inner, "*") {
			switch {
			case strings.HasPrefix(p, "*") && strings.HasSuffix(p, "*"):
				return method(s, "contains", strLit(inner))
			case strings.HasPrefix(p, "*"):
				return method(s, "endsWith", strLit(inner))
			case strings.HasSuffix(p, "*"):
				return method(s, "startsWith", strLit(inner))
			}
		}
		// a*b: a prefix and a suffix that do not overlap
		if parts := strings.Split(p, "*"); len(parts) == 2 {
			return and(method(s, "startsWith", strLit(parts[0])), method(s, "endsWith", strLit(parts[1])),
				rel(call("size", s), ">=", numLit(float64(len(parts[0])+len(parts[1])))))
		}
	}
	if p == "?*" || p == "*?" {
		return rel(s, "!=", strLit(""))
	}
	return method(s, "matches", strLit(wildcardRegexp(p)))
}

// wildcardRegexp is the anchored regular expression of a wildcard pattern.
func wildcardRegexp(p string) string {
	var b strings.Builder
	b.WriteByte('^')
	for _, r := range p {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteByte('.')
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteByte('$')
	return b.String()
}

// balanced reports whether the parentheses, brackets and braces of s
// (outside string literals) balance, never closing a group early.
func balanced(s string) bool {
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quote != 0 {
			switch c {
			case '\\':
				i++
			case quote:
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"':
			quote = c
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth < 0 {
				return false
			}
		}
	}
	return depth == 0 && quote == 0
}
