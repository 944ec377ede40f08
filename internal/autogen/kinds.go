package autogen

import (
	"regexp"
	"strings"
)

// versionRE recognizes the version part of "version/Kind" and
// "version/Kind/subresource" kind strings, as upstream does.
var versionRE = regexp.MustCompile(`^v\d((alpha|beta)\d)?|\*$`)

// kindOf returns the kind (possibly with a subresource) of a match kind
// written as Kind, Kind.subresource, version/Kind, group/version/Kind and
// similar forms.
func kindOf(s string) string {
	parts := strings.Split(s, "/")
	switch len(parts) {
	case 1:
		return strings.Replace(s, ".", "/", 1)
	case 2:
		if parts[0] == "*" && parts[1] == "*" {
			return s
		}
		if versionRE.MatchString(parts[0]) {
			return strings.Replace(parts[1], ".", "/", 1)
		}
		return s
	case 3:
		if versionRE.MatchString(parts[0]) {
			return parts[1] + "/" + parts[2]
		}
		return strings.Replace(parts[2], ".", "/", 1)
	case 4:
		return parts[2] + "/" + parts[3]
	}
	return ""
}

// containsKind reports whether a kind list names kind, ignoring group,
// version and subresource.
func containsKind(list []string, kind string) bool {
	for _, e := range list {
		k := kindOf(e)
		if parts := strings.Split(k, "/"); len(parts) == 2 {
			k = parts[0]
		}
		if k == kind {
			return true
		}
	}
	return false
}
