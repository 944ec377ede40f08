package patterns

import (
	"slices"
	"sort"

	"github.com/gavelpolicy/gavel/internal/wildcard"
)

// metaInfo describes wildcard keys in metadata.labels or metadata.annotations
// of a map pattern. Before such a map is evaluated, Kyverno replaces each
// wildcard key there with a resource key it matches, keeping any anchor, so
// that "X(fluxcd.io/*)" or "app.kubernetes.io/*" address real fields.
type metaInfo struct {
	metaIdx int   // entry of the map holding the metadata pattern
	meta    *node // the metadata pattern (a map)
	tags    []tagInfo
}

// tagInfo is one of labels or annotations under the metadata pattern.
type tagInfo struct {
	tag    string // "labels" or "annotations"
	idx    int    // its entry in meta.entries
	sorted []rawEntry
}

// buildMetaInfo prepares the expansion for map pattern n, or returns nil
// when n has no metadata pattern with wildcard label or annotation keys.
// Kyverno reads label and annotation patterns as strings only; a map whose
// values are not all strings is left as written.
func buildMetaInfo(n *node) *metaInfo {
	metaIdx := findTag(n, "metadata")
	if metaIdx < 0 || n.entries[metaIdx].value.kind != mapNode {
		return nil
	}
	mi := &metaInfo{metaIdx: metaIdx, meta: n.entries[metaIdx].value}
	for _, tag := range []string{"labels", "annotations"} {
		idx := findTag(mi.meta, tag)
		if idx < 0 {
			continue
		}
		labels := mi.meta.entries[idx].value
		if labels.kind != mapNode {
			continue
		}
		wild, allStrings := false, true
		sorted := make([]rawEntry, 0, len(labels.entries))
		for _, e := range labels.entries {
			if e.value.kind != leafNode || e.value.leaf.k != vString {
				allStrings = false
			}
			wild = wild || wildcard.Has(e.raw)
			sorted = append(sorted, rawEntry{raw: e.raw, value: e.value})
		}
		if !wild || !allStrings {
			continue
		}
		// Match reports these values under the keys they are expanded to.
		for _, e := range labels.entries {
			e.value.path = ""
		}
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].raw < sorted[j].raw })
		mi.tags = append(mi.tags, tagInfo{tag: tag, idx: idx, sorted: sorted})
	}
	if len(mi.tags) == 0 {
		return nil
	}
	return mi
}

// findTag returns the entry of map pattern n whose key is tag, plain or
// anchored (the first in key order), or -1.
func findTag(n *node, tag string) int {
	best := -1
	for i, e := range n.entries {
		if e.raw != tag {
			if a, ok := ParseAnchor(e.raw); !ok || a.Key != tag {
				continue
			}
		}
		if best < 0 || e.raw < n.entries[best].raw {
			best = i
		}
	}
	return best
}

// expandMeta returns the metadata pattern with wildcard keys replaced by the
// keys of resource metadata md they match, or nil when nothing changes.
func (m *matcher) expandMeta(mi *metaInfo, md any) *node {
	rmd, ok := md.(map[string]any)
	if !ok {
		return nil
	}
	var out *node
	for _, t := range mi.tags {
		keys := stringMapKeys(resourceTag(rmd, t.tag))
		if keys == nil {
			continue
		}
		expanded := m.expandKeys(t.sorted, keys)
		if expanded == nil {
			continue
		}
		if out == nil {
			cp := *mi.meta
			cp.entries = slices.Clone(mi.meta.entries)
			cp.meta = nil
			out = &cp
		}
		out.entries[t.idx].value = expanded
	}
	return out
}

// resourceTag returns the labels or annotations of resource metadata: the
// value under tag, else under an anchored form of tag.
func resourceTag(rmd map[string]any, tag string) any {
	if v, ok := rmd[tag]; ok {
		return v
	}
	best, found := "", false
	for k := range rmd {
		if a, ok := ParseAnchor(k); ok && a.Key == tag && (!found || k < best) {
			best, found = k, true
		}
	}
	if !found {
		return nil
	}
	return rmd[best]
}

// stringMapKeys returns the sorted keys of v when v is a map of strings, the
// only shape Kyverno expands against; otherwise nil.
func stringMapKeys(v any) []string {
	mv, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	keys := make([]string, 0, len(mv))
	for k, x := range mv {
		if _, ok := x.(string); !ok {
			return nil
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// expandKeys replaces each wildcard key with the first resource key (in
// sorted order) it matches; a key matching nothing stays as written. When two
// keys end up equal, the later one in sorted order wins.
func (m *matcher) expandKeys(sorted []rawEntry, keys []string) *node {
	changed := false
	byKey := make(map[string]int, len(sorted))
	out := make([]rawEntry, 0, len(sorted))
	for _, r := range sorted {
		raw := r.raw
		if wildcard.Has(raw) {
			if a, ok := ParseAnchor(raw); ok {
				a.Key = firstMatch(a.Key, keys)
				raw = a.String()
			} else {
				raw = firstMatch(raw, keys)
			}
		}
		changed = changed || raw != r.raw
		if i, ok := byKey[raw]; ok {
			out[i].value = r.value
			continue
		}
		byKey[raw] = len(out)
		out = append(out, rawEntry{raw: raw, value: r.value})
	}
	if !changed {
		return nil
	}
	return buildMap(out, m.p.lookupID)
}

// firstMatch returns the first key that pattern matches, or pattern.
func firstMatch(pattern string, keys []string) string {
	for _, k := range keys {
		if wildcard.Match(pattern, k) {
			return k
		}
	}
	return pattern
}

// lookupID returns the number of an anchor key known at compile time, or -1.
func (p *Pattern) lookupID(raw string) int {
	if id, ok := p.anchorIDs[raw]; ok {
		return id
	}
	return -1
}
