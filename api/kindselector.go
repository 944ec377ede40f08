package api

import "strings"

// ParseKindSelector parses one entry of a resources.kinds list
// (ResourceDescription.Kinds) into its group, version, kind and
// subresource, each a wildcard pattern ("*" matches anything; an empty
// subresource selects none). The accepted forms, as upstream parses them
// (the last segment may also separate the subresource with '.'):
//
//	Kind                       Pod             -> */*/Pod, no subresource
//	Kind/subresource           Pod/exec        -> */*/Pod/exec (also Pod.exec)
//	*/subresource              */scale         -> */*/*/scale (lower-case second part)
//	version/Kind               v1/Pod          -> */v1/Pod
//	version/Kind/subresource   v1/Pod/eviction
//	group/version/Kind         apps/v1/Deployment
//	group/version/Kind/sub     apps/v1/Deployment/scale
//	*                          every kind, but no subresource
//	*/*                        every kind and every subresource
//
// A first segment is a version when it is "*" or looks like v1, v2beta1,
// v1alpha2. A selector of more than four segments yields four empty
// strings, which select only an empty kind.
func ParseKindSelector(s string) (group, version, kind, subresource string) {
	parts := strings.Split(s, "/")
	last := parts[len(parts)-1]
	if strings.Contains(last, ".") {
		parts = append(parts[:len(parts)-1], strings.Split(last, ".")...)
	}
	switch len(parts) {
	case 1:
		return "*", "*", parts[0], ""
	case 2:
		if parts[0] == "*" && parts[1] == "*" {
			return "*", "*", "*", "*"
		}
		if parts[0] == "*" && strings.ToLower(parts[1]) == parts[1] {
			return "*", "*", "*", parts[1]
		}
		if isVersionSegment(parts[0]) {
			return "*", parts[0], parts[1], ""
		}
		return "*", "*", parts[0], parts[1]
	case 3:
		if isVersionSegment(parts[0]) {
			return "*", parts[0], parts[1], parts[2]
		}
		return parts[0], parts[1], parts[2], ""
	case 4:
		return parts[0], parts[1], parts[2], parts[3]
	default:
		return "", "", "", ""
	}
}

// isVersionSegment reports whether s is "*" or matches v\d+((alpha|beta)\d+)?.
func isVersionSegment(s string) bool {
	if s == "*" {
		return true
	}
	if len(s) < 2 || s[0] != 'v' {
		return false
	}
	i := 1
	digits := func() bool {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > start
	}
	if !digits() {
		return false
	}
	if i == len(s) {
		return true
	}
	rest := s[i:]
	switch {
	case strings.HasPrefix(rest, "alpha"):
		i += len("alpha")
	case strings.HasPrefix(rest, "beta"):
		i += len("beta")
	default:
		return false
	}
	return digits() && i == len(s)
}
