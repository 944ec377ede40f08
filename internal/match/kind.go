package match

import (
	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/wildcard"
)

// KindSelector is one parsed entry of a resources.kinds list (see
// api.ParseKindSelector for its forms). Each field is a wildcard pattern
// (internal/wildcard); "*" matches anything. Matching is case sensitive.
type KindSelector struct {
	Group, Version, Kind, Subresource string
}

// ParseKindSelector parses one entry of resources.kinds
// (api.ParseKindSelector).
func ParseKindSelector(s string) KindSelector {
	g, v, k, sub := api.ParseKindSelector(s)
	return KindSelector{Group: g, Version: v, Kind: k, Subresource: sub}
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
