package conditions

import (
	"regexp"
	"strings"
	"time"
)

// The set operators accept a numeric range as their value ("1-10", "-5-5",
// "100Mi-1Gi"). Upstream evaluates it with its validate-pattern machinery, of
// which this file keeps the part a string key can reach.
// TODO(lead): share with patterns.

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

// matchPattern reports whether the string value satisfies pattern: equality,
// then '|' alternatives of '&' conjunctions of single comparisons.
func matchPattern(value, pattern string) bool {
	if value == pattern {
		return true
	}
	for _, alt := range strings.Split(pattern, "|") {
		if matchAll(value, strings.Trim(alt, " ")) {
			return true
		}
	}
	return false
}

func matchAll(value, pattern string) bool {
	for _, part := range strings.Split(pattern, "&") {
		if !matchOne(value, strings.Trim(part, " ")) {
			return false
		}
	}
	return true
}

func matchOne(value, pattern string) bool {
	switch op := classify(pattern); op {
	case opInRange:
		m := inRangeRE.FindStringSubmatch(pattern)
		return m != nil && matchOne(value, ">= "+m[1]) && matchOne(value, "<= "+m[2])
	case opNotInRange:
		m := notInRangeRE.FindStringSubmatch(pattern)
		return m != nil && (matchOne(value, "< "+m[1]) || matchOne(value, "> "+m[2]))
	default:
		operand := strings.TrimSpace(pattern[op.prefixLen():])
		return compareDurations(value, operand, op) ||
			compareQuantities(value, operand, op) ||
			compareText(value, operand, op)
	}
}

func compareDurations(value, operand string, op patternOp) bool {
	p, err := time.ParseDuration(operand)
	if err != nil {
		return false
	}
	v, err := time.ParseDuration(value)
	if err != nil {
		return false
	}
	return cmpResult(compareInts(int64(v), int64(p)), op)
}

func compareQuantities(value, operand string, op patternOp) bool {
	p, ok := parseQuantity(operand)
	if !ok {
		return false
	}
	v, ok := parseQuantity(value)
	if !ok {
		return false
	}
	return cmpResult(v.Cmp(p), op)
}

func compareText(value, operand string, op patternOp) bool {
	switch op {
	case opEqual:
		return wildcardMatch(operand, value)
	case opNotEqual:
		return !wildcardMatch(operand, value)
	}
	return false
}

func compareInts(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpResult(c int, op patternOp) bool {
	switch op {
	case opEqual:
		return c == 0
	case opNotEqual:
		return c != 0
	case opMore:
		return c > 0
	case opLess:
		return c < 0
	case opMoreEqual:
		return c >= 0
	case opLessEqual:
		return c <= 0
	}
	return false
}
