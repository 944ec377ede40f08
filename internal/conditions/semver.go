package conditions

import (
	"strconv"
	"strings"
)

// semver is a strictly parsed semantic version, as upstream's comparison
// operators accept it: MAJOR.MINOR.PATCH with optional "-prerelease" and
// "+build" parts, no "v" prefix, no leading zeros in numbers.
type semver struct {
	major, minor, patch uint64
	pre                 []prerelease
}

type prerelease struct {
	num   uint64
	str   string
	isNum bool
}

func parseSemver(s string) (semver, bool) {
	parts := strings.SplitN(s, ".", 3)
	if len(parts) != 3 {
		return semver{}, false
	}
	var v semver
	var ok bool
	if v.major, ok = versionNumber(parts[0]); !ok {
		return semver{}, false
	}
	if v.minor, ok = versionNumber(parts[1]); !ok {
		return semver{}, false
	}
	rest := parts[2]
	var build, pre string
	hasBuild, hasPre := false, false
	if i := strings.IndexByte(rest, '+'); i >= 0 {
		build, rest, hasBuild = rest[i+1:], rest[:i], true
	}
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		pre, rest, hasPre = rest[i+1:], rest[:i], true
	}
	if v.patch, ok = versionNumber(rest); !ok {
		return semver{}, false
	}
	if hasPre {
		for _, id := range strings.Split(pre, ".") {
			p, ok := parsePrerelease(id)
			if !ok {
				return semver{}, false
			}
			v.pre = append(v.pre, p)
		}
	}
	if hasBuild {
		for _, id := range strings.Split(build, ".") {
			if id == "" || !onlyAlphanumHyphen(id) {
				return semver{}, false
			}
		}
	}
	return v, true
}

func versionNumber(s string) (uint64, bool) {
	if s == "" || !onlyDigits(s) || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

func parsePrerelease(s string) (prerelease, bool) {
	if s == "" {
		return prerelease{}, false
	}
	if onlyDigits(s) {
		if len(s) > 1 && s[0] == '0' {
			return prerelease{}, false
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return prerelease{}, false
		}
		return prerelease{num: n, isNum: true}, true
	}
	if !onlyAlphanumHyphen(s) {
		return prerelease{}, false
	}
	return prerelease{str: s}, true
}

func onlyDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func onlyAlphanumHyphen(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
			return false
		}
	}
	return true
}

// compare returns -1, 0 or 1. Build metadata is ignored; a version without
// prerelease is greater than the same version with one; prerelease
// identifiers compare numerically when both are numbers, numbers sort before
// text, and a shorter list that is a prefix of a longer one sorts first.
func (v semver) compare(o semver) int {
	for _, d := range [3][2]uint64{{v.major, o.major}, {v.minor, o.minor}, {v.patch, o.patch}} {
		if d[0] != d[1] {
			if d[0] > d[1] {
				return 1
			}
			return -1
		}
	}
	switch {
	case len(v.pre) == 0 && len(o.pre) == 0:
		return 0
	case len(v.pre) == 0:
		return 1
	case len(o.pre) == 0:
		return -1
	}
	for i := 0; i < len(v.pre) && i < len(o.pre); i++ {
		if c := v.pre[i].compare(o.pre[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(v.pre) == len(o.pre):
		return 0
	case len(v.pre) < len(o.pre):
		return -1
	}
	return 1
}

func (p prerelease) compare(o prerelease) int {
	switch {
	case p.isNum && !o.isNum:
		return -1
	case !p.isNum && o.isNum:
		return 1
	case p.isNum:
		switch {
		case p.num == o.num:
			return 0
		case p.num > o.num:
			return 1
		}
		return -1
	}
	return strings.Compare(p.str, o.str)
}
