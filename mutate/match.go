package mutate

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// This file holds a small, self-contained port of upstream's pattern
// matching, used to evaluate the conditions of strategic merge anchors.
//
// TODO(lead): replace matchCondition with patterns.MatchPattern and matchLeaf
// with patterns.MatchValue once package patterns is merged; the semantics
// below follow the same upstream code (validate.MatchPattern and
// pattern.Validate).

// anchorSkipError is a conditional or global anchor mismatch inside a
// condition. Inside lists such errors only skip the element.
type anchorSkipError struct{ msg string }

func (e *anchorSkipError) Error() string { return e.msg }

func isSkip(err error) bool {
	var s *anchorSkipError
	return errors.As(err, &s)
}

// matchCondition reports whether resource matches pattern; nil means match.
// Both values are JSON-like trees as produced by toJSONAny.
func matchCondition(resource, pattern any) error {
	return matchElement(resource, pattern, "/")
}

func matchElement(resource, pattern any, p string) error {
	switch pt := pattern.(type) {
	case map[string]any:
		rm, ok := resource.(map[string]any)
		if !ok {
			return fmt.Errorf("pattern and resource have different structures. Path: %s. Expected %T, found %T", p, pattern, resource)
		}
		return matchMap(rm, pt, p)
	case []any:
		rl, ok := resource.([]any)
		if !ok {
			return fmt.Errorf("validation rule failed at path %s, resource does not satisfy the expected overlay pattern", p)
		}
		return matchArray(rl, pt, p)
	case string, float64, int, int64, bool, nil:
		if rl, ok := resource.([]any); ok {
			for _, e := range rl {
				if !matchLeaf(e, pattern) {
					return fmt.Errorf("resource value '%v' does not match '%v' at path %s", resource, pattern, p)
				}
			}
			return nil
		}
		if !matchLeaf(resource, pattern) {
			return fmt.Errorf("resource value '%v' does not match '%v' at path %s", resource, pattern, p)
		}
		return nil
	}
	return fmt.Errorf("failed at '%s', pattern contains unknown type", p)
}

func matchMap(rm, pm map[string]any, p string) error {
	keys := make([]string, 0, len(pm))
	for k := range pm {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// anchors first, then plain keys, as upstream does
	var plain []string
	for _, k := range keys {
		a, ok := parseAnchor(k)
		if !ok || a.kind == anchorGlobal || a.kind == anchorAdd {
			plain = append(plain, k)
			continue
		}
		if err := matchKey(rm, k, pm[k], p); err != nil {
			return err
		}
	}
	for _, k := range plain {
		if err := matchKey(rm, k, pm[k], p); err != nil {
			return err
		}
	}
	return nil
}

func matchKey(rm map[string]any, k string, pv any, p string) error {
	a, ok := parseAnchor(k)
	if ok {
		cur := p + a.key + "/"
		rv, present := rm[a.key]
		switch a.kind {
		case anchorCondition:
			if !present {
				return &anchorSkipError{msg: "conditional anchor key doesn't exist in the resource"}
			}
			if err := matchElement(rv, pv, cur); err != nil {
				return &anchorSkipError{msg: err.Error()}
			}
			return nil
		case anchorGlobal:
			if !present {
				return nil
			}
			if err := matchElement(rv, pv, cur); err != nil {
				return &anchorSkipError{msg: err.Error()}
			}
			return nil
		case anchorEquality:
			if !present {
				return nil
			}
			return matchElement(rv, pv, cur)
		case anchorNegation:
			if present {
				return fmt.Errorf("%s is not allowed", cur)
			}
			return nil
		case anchorExistence:
			if !present {
				return nil
			}
			rl, ok := rv.([]any)
			if !ok {
				return fmt.Errorf("invalid resource type %T: Existence ^ () anchor can be used only on list/array type resource", rv)
			}
			pl, ok := pv.([]any)
			if !ok {
				return fmt.Errorf("invalid pattern type %T: Pattern has to be of list to compare against resource", pv)
			}
			for _, item := range pl {
				pmi, ok := item.(map[string]any)
				if !ok {
					return fmt.Errorf("invalid pattern type %T: Pattern has to be of type map to compare against items in resource", pv)
				}
				found := false
				for i, re := range rl {
					if matchElement(re, pmi, cur+strconv.Itoa(i)+"/") == nil {
						found = true
						break
					}
				}
				if !found {
					return fmt.Errorf("existence anchor validation failed at path %s", cur)
				}
			}
			return nil
		}
	}
	// plain key (add anchors have no validation handler upstream)
	if s, ok := pv.(string); ok && s == "*" {
		if rm[k] == nil {
			return fmt.Errorf("%s/%s not found", p, k)
		}
		return nil
	}
	return matchElement(rm[k], pv, p+k+"/")
}

func matchArray(rl, pl []any, p string) error {
	if len(pl) == 0 {
		return fmt.Errorf("pattern Array empty")
	}
	switch first := pl[0].(type) {
	case map[string]any:
		applied := 0
		var skipped []string
		for i, re := range rl {
			if err := matchElement(re, first, p+strconv.Itoa(i)+"/"); err != nil {
				if isSkip(err) {
					skipped = append(skipped, err.Error())
					continue
				}
				return err
			}
			applied++
		}
		if applied == 0 && len(skipped) > 0 {
			return &anchorSkipError{msg: strings.Join(skipped, "; ")}
		}
		return nil
	case string, float64, int, int64, bool, nil:
		return matchElement(rl, first, p)
	}
	if len(rl) < len(pl) {
		return fmt.Errorf("validate Array failed, array length mismatch, resource Array len is %d and pattern Array len is %d", len(rl), len(pl))
	}
	applied := 0
	var skipped []string
	for i, pe := range pl {
		if err := matchElement(rl[i], pe, p+strconv.Itoa(i)+"/"); err != nil {
			if isSkip(err) {
				skipped = append(skipped, err.Error())
				continue
			}
			return err
		}
		applied++
	}
	if applied == 0 && len(skipped) > 0 {
		return &anchorSkipError{msg: strings.Join(skipped, "; ")}
	}
	return nil
}

// matchLeaf reports whether a scalar value matches a pattern with upstream's
// value semantics: wildcards, "|" and "&", comparison operators, ranges,
// quantities and durations.
//
// TODO(lead): replace with patterns.MatchValue.
func matchLeaf(value, pattern any) bool {
	switch pt := pattern.(type) {
	case bool:
		b, ok := value.(bool)
		return ok && b == pt
	case int:
		return matchInt(value, int64(pt))
	case int64:
		return matchInt(value, pt)
	case float64:
		return matchFloat(value, pt)
	case nil:
		switch v := value.(type) {
		case float64:
			return v == 0
		case int:
			return v == 0
		case int64:
			return v == 0
		case string:
			return v == ""
		case bool:
			return !v
		case nil:
			return true
		}
		return false
	case map[string]any:
		_, ok := value.(map[string]any)
		return ok
	case string:
		return matchStringPattern(value, pt)
	}
	return false
}

func matchInt(value any, pattern int64) bool {
	switch v := value.(type) {
	case int:
		return int64(v) == pattern
	case int64:
		return v == pattern
	case float64:
		return v == math.Trunc(v) && int64(v) == pattern
	case string:
		i, err := strconv.ParseInt(v, 10, 64)
		return err == nil && i == pattern
	}
	return false
}

func matchFloat(value any, pattern float64) bool {
	switch v := value.(type) {
	case int:
		return pattern == math.Trunc(pattern) && int(pattern) == v
	case int64:
		return pattern == math.Trunc(pattern) && int64(pattern) == v
	case float64:
		return v == pattern
	case string:
		f, err := strconv.ParseFloat(v, 64)
		return err == nil && f == pattern
	}
	return false
}

func matchStringPattern(value any, pattern string) bool {
	if s, ok := value.(string); ok && s == pattern {
		return true
	}
	for _, alt := range strings.Split(pattern, "|") {
		alt = strings.Trim(alt, " ")
		all := true
		for _, c := range strings.Split(alt, "&") {
			if !matchOperatorTerm(value, strings.Trim(c, " ")) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

type cmpOp uint8

const (
	opEqual cmpOp = iota
	opNotEqual
	opMore
	opLess
	opMoreEqual
	opLessEqual
)

var (
	notInRange = regexp.MustCompile(`^([-+]?\d+(?:\.\d+)?[A-Za-z]*)!-([-+]?\d+(?:\.\d+)?[A-Za-z]*)$`)
	inRange    = regexp.MustCompile(`^([-+]?\d+(?:\.\d+)?[A-Za-z]*)-([-+]?\d+(?:\.\d+)?[A-Za-z]*)$`)
)

func matchOperatorTerm(value any, term string) bool {
	if len(term) >= 2 {
		if m := notInRange.FindStringSubmatch(term); m != nil && !strings.HasPrefix(term, "!") {
			return matchOperatorTerm(value, "< "+m[1]) || matchOperatorTerm(value, "> "+m[2])
		}
		if m := inRange.FindStringSubmatch(term); m != nil && !strings.HasPrefix(term, "<") && !strings.HasPrefix(term, ">") {
			return matchOperatorTerm(value, ">= "+m[1]) && matchOperatorTerm(value, "<= "+m[2])
		}
	}
	op, n := opEqual, 0
	if len(term) >= 2 {
		switch {
		case strings.HasPrefix(term, ">="):
			op, n = opMoreEqual, 2
		case strings.HasPrefix(term, "<="):
			op, n = opLessEqual, 2
		case term[0] == '>':
			op, n = opMore, 1
		case term[0] == '<':
			op, n = opLess, 1
		case term[0] == '!':
			op, n = opNotEqual, 1
		}
	}
	operand := strings.TrimSpace(term[n:])
	if d, err := time.ParseDuration(operand); err == nil {
		if vs, ok := numberString(value); ok {
			if vd, err := time.ParseDuration(vs); err == nil {
				return compare(op, cmp3(int64(vd), int64(d)))
			}
		}
	}
	if q, err := resource.ParseQuantity(operand); err == nil {
		if vs, ok := numberString(value); ok {
			if vq, err := resource.ParseQuantity(vs); err == nil {
				return compare(op, vq.Cmp(q))
			}
		}
	}
	if op != opEqual && op != opNotEqual {
		return false
	}
	var s string
	switch v := value.(type) {
	case float64:
		s = strconv.FormatFloat(v, 'E', -1, 64)
	case int:
		s = strconv.Itoa(v)
	case int64:
		s = strconv.FormatInt(v, 10)
	case string:
		s = v
	case bool:
		s = strconv.FormatBool(v)
	default:
		return false
	}
	m := wildcardMatch(operand, s)
	if op == opNotEqual {
		return !m
	}
	return m
}

func cmp3(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compare(op cmpOp, c int) bool {
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

// numberString converts a value for duration and quantity parsing the way
// upstream does (nil is "0", floats use %f).
func numberString(v any) (string, bool) {
	switch t := v.(type) {
	case nil:
		return "0", true
	case string:
		return t, true
	case float64:
		return fmt.Sprintf("%f", t), true
	case int64:
		return strconv.FormatInt(t, 10), true
	case int:
		return strconv.Itoa(t), true
	}
	return "", false
}

// wildcardMatch matches s against a pattern where '*' matches any sequence
// (including the empty one) and '?' exactly one character.
func wildcardMatch(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	if pattern == "*" {
		return true
	}
	p, str := []rune(pattern), []rune(s)
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(str) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == str[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
