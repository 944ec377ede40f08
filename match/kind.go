package match

import (
	"strings"

	"github.com/gavelpolicy/gavel/internal/wildcard"
)

// KindSelector is one parsed entry of a resources.kinds list. Each field is a
// wildcard pattern (see Wildcard); "*" matches anything.
//
// The accepted forms, as upstream parses them (the last segment may also
// separate the subresource with '.'):
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
// v1alpha2. Matching is case sensitive.
type KindSelector struct {
	Group, Version, Kind, Subresource string
}

// ParseKindSelector parses one entry of resources.kinds. A selector of more
// than four segments yields the zero KindSelector, which matches only an
// empty GVK.
func ParseKindSelector(s string) KindSelector {
	parts := strings.Split(s, "/")
	last := parts[len(parts)-1]
	if strings.Contains(last, ".") {
		parts = append(parts[:len(parts)-1], strings.Split(last, ".")...)
	}
	switch len(parts) {
	case 1:
		return KindSelector{Group: "*", Version: "*", Kind: parts[0]}
	case 2:
		if parts[0] == "*" && parts[1] == "*" {
			return KindSelector{Group: "*", Version: "*", Kind: "*", Subresource: "*"}
		}
		if parts[0] == "*" && strings.ToLower(parts[1]) == parts[1] {
			return KindSelector{Group: "*", Version: "*", Kind: "*", Subresource: parts[1]}
		}
		if isVersionSegment(parts[0]) {
			return KindSelector{Group: "*", Version: parts[0], Kind: parts[1]}
		}
		return KindSelector{Group: "*", Version: "*", Kind: parts[0], Subresource: parts[1]}
	case 3:
		if isVersionSegment(parts[0]) {
			return KindSelector{Group: "*", Version: parts[0], Kind: parts[1], Subresource: parts[2]}
		}
		return KindSelector{Group: parts[0], Version: parts[1], Kind: parts[2]}
	case 4:
		return KindSelector{Group: parts[0], Version: parts[1], Kind: parts[2], Subresource: parts[3]}
	default:
		return KindSelector{}
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

// String returns the selector in group/version/Kind[/subresource] form.
func (k KindSelector) String() string {
	s := k.Group + "/" + k.Version + "/" + k.Kind
	if k.Subresource != "" {
		s += "/" + k.Subresource
	}
	return s
}

// Matches reports whether the request GVK and subresource are selected. As
// upstream, a selector for exactly v1 Pod (group "", with wildcards allowed in
// the selector) also selects the "ephemeralcontainers" subresource of Pods
// even when it does not name that subresource.
func (k KindSelector) Matches(group, version, kind, subresource string) bool {
	if !wildcard.Match(k.Group, group) || !wildcard.Match(k.Version, version) || !wildcard.Match(k.Kind, kind) {
		return false
	}
	return wildcard.Match(k.Subresource, subresource) || isPodEphemeral(group, version, kind, subresource)
}

func isPodEphemeral(group, version, kind, subresource string) bool {
	return group == "" && version == "v1" && kind == "Pod" && subresource == "ephemeralcontainers"
}

// kindMatcher is a KindSelector with precompiled patterns.
type kindMatcher struct {
	group, version, kind, sub pattern
}

func newKindMatcher(k KindSelector) kindMatcher {
	return kindMatcher{
		group:   newPattern(k.Group),
		version: newPattern(k.Version),
		kind:    newPattern(k.Kind),
		sub:     newPattern(k.Subresource),
	}
}

func (k *kindMatcher) matches(r *Resource) bool {
	if !k.kind.Match(r.Kind) || !k.version.Match(r.Version) || !k.group.Match(r.Group) {
		return false
	}
	return k.sub.Match(r.Subresource) || isPodEphemeral(r.Group, r.Version, r.Kind, r.Subresource)
}
