package conditions

import (
	"regexp"
	"strings"

	"github.com/gavelpolicy/gavel/patterns"
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

var (
	inRangeRE    = regexp.MustCompile(`^([-|+]?\d+(?:\.\d+)?[A-Za-z]*)-([-|+]?\d+(?:\.\d+)?[A-Za-z]*)$`)
	notInRangeRE = regexp.MustCompile(`^([-|+]?\d+(?:\.\d+)?[A-Za-z]*)!-([-|+]?\d+(?:\.\d+)?[A-Za-z]*)$`)
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
	if notInRangeRE.MatchString(p) {
		return opNotInRange
	}
	if inRangeRE.MatchString(p) {
		return opInRange
	}
	return opEqual
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
