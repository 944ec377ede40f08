package conditions

import (
	"strings"

	"github.com/gavelpolicy/gavel/internal/patterns"
)

// The set operators accept a numeric range as their value ("1-10", "-5-5",
// "100Mi-1Gi"); classify recognises one so that the operators can hand it
// to the pattern matcher.

type patternOp int

const (
	opEqual patternOp = iota
	opNotEqual
	opMore
	opMoreEqual
	opLess
	opLessEqual
	opInRange
	opNotInRange
)

// classify returns the operator a pattern string starts with, the way
// upstream does: the two-character comparisons first, then '>', '<', '!',
// then the range forms.
func classify(p string) patternOp {
	if len(p) < 2 {
		return opEqual
	}
	switch {
	case strings.HasPrefix(p, ">="):
		return opMoreEqual
	case strings.HasPrefix(p, "<="):
		return opLessEqual
	case p[0] == '>':
		return opMore
	case p[0] == '<':
		return opLess
	case p[0] == '!':
		return opNotEqual
	}
	if !strings.Contains(p, "-") || !(numberStart(p) || p[0] == '|' && numberStart(p[1:])) {
		return opEqual
	}
	return rangeForm(p)
}

// rangeForm classifies p as upstream's range expressions do:
// opNotInRange for B!-B, opInRange for B-B, where B is a bound
// [-|+]?\d+(\.\d+)?[A-Za-z]* (ASCII digits and letters), else opEqual.
// A bound read as far as it goes is the only one that can be followed by
// "-" or "!-" (the characters it takes are neither), so one pass decides.
func rangeForm(p string) patternOp {
	n := rangeBound(p)
	if n < 0 {
		return opEqual
	}
	op, rest := opInRange, p[n:]
	switch {
	case strings.HasPrefix(rest, "!-"):
		op, rest = opNotInRange, rest[2:]
	case strings.HasPrefix(rest, "-"):
		rest = rest[1:]
	default:
		return opEqual
	}
	if rangeBound(rest) != len(rest) {
		return opEqual
	}
	return op
}

// rangeBound returns the length of the longest prefix of s that is a
// range bound, [-|+]?\d+(\.\d+)?[A-Za-z]*, or -1 when none is.
func rangeBound(s string) int {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '|' || s[i] == '+') {
		i++
	}
	digits := func() {
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	start := i
	digits()
	if i == start {
		return -1
	}
	if i+1 < len(s) && s[i] == '.' && s[i+1] >= '0' && s[i+1] <= '9' {
		i++
		digits()
	}
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z') {
		i++
	}
	return i
}

func (o patternOp) prefixLen() int {
	switch o {
	case opMoreEqual, opLessEqual:
		return 2
	case opMore, opLess, opNotEqual:
		return 1
	}
	return 0
}

// matchPattern reports whether the string value satisfies a validate-style
// pattern (operators, '|' and '&', ranges, quantities, durations,
// wildcards): upstream evaluates ranges of the set operators with its
// validate-pattern machinery, which package patterns implements.
func matchPattern(value, pattern string) bool { return patterns.MatchValue(value, pattern) }
