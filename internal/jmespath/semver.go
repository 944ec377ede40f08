package jmespath

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// This file implements the semantic-version ranges accepted by
// semver_compare, with the same syntax and quirks as the range parser the
// upstream engine uses:
//
//   - comparators: "", "=", "==" (equal), "!", "!=" (not equal), ">", ">=",
//     "<", "<="; a space between a comparator and its version is allowed;
//   - space-separated comparators are ANDed, "||" separates ORed groups;
//   - "x" as the last component is a wildcard: ">=1.2.x" is ">=1.2.0",
//     "<=1.2.x" is "<1.3.0", ">1.2.x" is ">=1.3.0", "1.2.x" is
//     ">=1.2.0 <1.3.0" and "!1.2.x" is "<1.2.0 >=1.3.0" (ANDed, as upstream);
//   - versions are strict MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD], no "v"
//     prefix, no leading zeros.
//
// A first argument that is not a valid version compares as 0.0.0, as
// upstream does.

type semVersion struct {
	major, minor, patch uint64
	pre                 []prePart
}

type prePart struct {
	s       string
	n       uint64
	numeric bool
}

const semverDigits = "0123456789"
const semverAlnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-" + semverDigits

func onlyChars(s, set string) bool {
	for _, r := range s {
		if !strings.ContainsRune(set, r) {
			return false
		}
	}
	return true
}

func hasLeadingZero(s string) bool { return len(s) > 1 && s[0] == '0' }

func parseSemverNumber(what, s string) (uint64, error) {
	if !onlyChars(s, semverDigits) {
		return 0, fmt.Errorf("Invalid character(s) found in %s number %q", what, s)
	}
	if hasLeadingZero(s) {
		return 0, fmt.Errorf("%s number must not contain leading zeroes %q", strings.ToUpper(what[:1])+what[1:], s)
	}
	return strconv.ParseUint(s, 10, 64)
}

func parseSemver(s string) (semVersion, error) {
	if s == "" {
		return semVersion{}, errors.New("Version string empty")
	}
	parts := strings.SplitN(s, ".", 3)
	if len(parts) != 3 {
		return semVersion{}, errors.New("No Major.Minor.Patch elements found")
	}
	var v semVersion
	var err error
	if v.major, err = parseSemverNumber("major", parts[0]); err != nil {
		return semVersion{}, err
	}
	if v.minor, err = parseSemverNumber("minor", parts[1]); err != nil {
		return semVersion{}, err
	}
	patch := parts[2]
	var build, pre []string
	if k := strings.IndexRune(patch, '+'); k != -1 {
		build = strings.Split(patch[k+1:], ".")
		patch = patch[:k]
	}
	if k := strings.IndexRune(patch, '-'); k != -1 {
		pre = strings.Split(patch[k+1:], ".")
		patch = patch[:k]
	}
	if v.patch, err = parseSemverNumber("patch", patch); err != nil {
		return semVersion{}, err
	}
	for _, p := range pre {
		if p == "" {
			return semVersion{}, errors.New("Prerelease is empty")
		}
		if onlyChars(p, semverDigits) {
			if hasLeadingZero(p) {
				return semVersion{}, fmt.Errorf("Numeric PreRelease version must not contain leading zeroes %q", p)
			}
			n, err := strconv.ParseUint(p, 10, 64)
			if err != nil {
				return semVersion{}, err
			}
			v.pre = append(v.pre, prePart{n: n, numeric: true})
			continue
		}
		if !onlyChars(p, semverAlnum) {
			return semVersion{}, fmt.Errorf("Invalid character(s) found in prerelease %q", p)
		}
		v.pre = append(v.pre, prePart{s: p})
	}
	for _, b := range build {
		if b == "" {
			return semVersion{}, errors.New("Build meta data is empty")
		}
		if !onlyChars(b, semverAlnum) {
			return semVersion{}, fmt.Errorf("Invalid character(s) found in build meta data %q", b)
		}
	}
	return v, nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compare orders versions by precedence (build metadata is ignored).
func (v semVersion) compare(o semVersion) int {
	if c := cmpUint(v.major, o.major); c != 0 {
		return c
	}
	if c := cmpUint(v.minor, o.minor); c != 0 {
		return c
	}
	if c := cmpUint(v.patch, o.patch); c != 0 {
		return c
	}
	switch {
	case len(v.pre) == 0 && len(o.pre) == 0:
		return 0
	case len(v.pre) == 0:
		return 1
	case len(o.pre) == 0:
		return -1
	}
	for k := 0; k < len(v.pre) && k < len(o.pre); k++ {
		a, b := v.pre[k], o.pre[k]
		var c int
		switch {
		case a.numeric && b.numeric:
			c = cmpUint(a.n, b.n)
		case a.numeric:
			c = -1
		case b.numeric:
			c = 1
		default:
			c = strings.Compare(a.s, b.s)
		}
		if c != 0 {
			return c
		}
	}
	return cmpInt(len(v.pre), len(o.pre))
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

type semComparator struct {
	op string
	v  semVersion
}

func (c semComparator) matches(v semVersion) bool {
	r := v.compare(c.v)
	switch c.op {
	case "", "=", "==":
		return r == 0
	case "!", "!=":
		return r != 0
	case ">":
		return r > 0
	case ">=":
		return r >= 0
	case "<":
		return r < 0
	case "<=":
		return r <= 0
	}
	return false
}

// semRange is an OR of AND groups.
type semRange [][]semComparator

func (r semRange) matches(v semVersion) bool {
	for _, group := range r {
		ok := true
		for _, c := range group {
			if !c.matches(v) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// splitRangeParts splits on spaces except right after a comparator character
// (so "> 1.0.0" stays one part) and removes inner spaces. Like upstream it
// drops one-character parts (a lone "1" is not a version anyway).
func splitRangeParts(s string) []string {
	var out []string
	last := 0
	var lastChar byte
	for k := 0; k < len(s); k++ {
		if s[k] == ' ' && lastChar != '>' && lastChar != '<' && lastChar != '=' {
			if last < k-1 {
				out = append(out, s[last:k])
			}
			last = k + 1
		} else if s[k] != ' ' {
			lastChar = s[k]
		}
	}
	if last < len(s)-1 {
		out = append(out, s[last:])
	}
	for k, p := range out {
		out[k] = strings.ReplaceAll(p, " ", "")
	}
	return out
}

func splitComparator(s string) (string, string, error) {
	k := strings.IndexFunc(s, unicode.IsDigit)
	if k == -1 {
		return "", "", fmt.Errorf("Could not get version from string: %q", s)
	}
	return strings.TrimSpace(s[:k]), s[k:], nil
}

// expandWildcard rewrites one comparator holding an "x" wildcard into one or
// two plain comparators.
func expandWildcard(part string) ([]string, error) {
	op, ver, err := splitComparator(part)
	if err != nil {
		return nil, err
	}
	comps := strings.Split(ver, ".")
	wildcard := 0 // 2: minor wildcard (1.x), 3: patch wildcard (1.2.x)
	if comps[len(comps)-1] == "x" && (len(comps) == 2 || len(comps) == 3) {
		wildcard = len(comps)
	}
	flat := strings.Replace(ver, ".x.x", ".x", 1)
	flat = strings.Replace(flat, ".x", ".0", 1)
	if len(strings.Split(flat, ".")) == 2 {
		flat += ".0"
	}
	var out []string
	resultOp, increment := "", false
	switch op {
	case ">":
		resultOp, increment = ">=", true
	case ">=":
		resultOp = ">="
	case "<":
		resultOp = "<"
	case "<=":
		resultOp, increment = "<", true
	case "", "=", "==":
		out = append(out, ">="+flat)
		resultOp, increment = "<", true
	case "!=", "!":
		out = append(out, "<"+flat)
		resultOp, increment = ">=", true
	}
	result := flat
	if increment {
		result = ""
		fields := strings.Split(flat, ".")
		bump := -1
		switch wildcard {
		case 3:
			bump = 1
		case 2:
			bump = 0
		}
		if bump >= 0 && bump < len(fields) {
			if n, err := strconv.Atoi(fields[bump]); err == nil {
				fields[bump] = strconv.Itoa(n + 1)
				result = strings.Join(fields, ".")
			}
		}
	}
	return append(out, resultOp+result), nil
}

func parseSemverRange(s string) (semRange, error) {
	parts := splitRangeParts(s)
	var groups [][]string
	last := 0
	for k, p := range parts {
		if p == "||" {
			if k == 0 {
				return nil, errors.New("First element in range is '||'")
			}
			groups = append(groups, parts[last:k])
			last = k + 1
		}
	}
	if last == len(parts) {
		return nil, errors.New("Last element in range is '||'")
	}
	groups = append(groups, parts[last:])
	var r semRange
	for _, group := range groups {
		var expanded []string
		for _, p := range group {
			if strings.Contains(p, "x") {
				e, err := expandWildcard(p)
				if err != nil {
					return nil, err
				}
				expanded = append(expanded, e...)
				continue
			}
			expanded = append(expanded, p)
		}
		var and []semComparator
		for _, p := range expanded {
			op, ver, err := splitComparator(p)
			if err != nil {
				return nil, err
			}
			switch op {
			case "", "=", "==", "!", "!=", ">", ">=", "<", "<=":
			default:
				return nil, fmt.Errorf("Could not parse Range %q: Could not parse comparator %q in %q", p, op, p)
			}
			v, err := parseSemver(ver)
			if err != nil {
				return nil, fmt.Errorf("Could not parse Range %q: Could not parse version %q in %q: %s", p, ver, p, err)
			}
			and = append(and, semComparator{op: op, v: v})
		}
		r = append(r, and)
	}
	return r, nil
}

func jpSemverCompare(args []any) (any, error) {
	v, _ := parseSemver(args[0].(string))
	r, err := parseSemverRange(args[1].(string))
	if err != nil {
		return nil, fnWrap("semver_compare", 2, err)
	}
	return r.matches(v), nil
}
