package manifests

import (
	"fmt"
	"regexp"
)

// Find returns the signed manifests that may stand for the resource, as
// k8s-manifest-sigstore's FindManifestYAML: those of its kind; of them,
// the one of its group and name (of its namespace, when several), else
// the (up to 3) that share most field values with it (ignored fields
// left out).
func Find(docs []map[string]any, obj map[string]any, ignored []*regexp.Regexp) []map[string]any {
	ref := Ref(obj)
	var sameKind []map[string]any
	for _, d := range docs {
		if k, _ := d["kind"].(string); k == ref.Kind {
			sameKind = append(sameKind, d)
		}
	}
	if len(sameKind) == 0 {
		return nil
	}
	var named []map[string]any
	for _, d := range sameKind {
		r := Ref(d)
		if r.Group == ref.Group && r.Name == ref.Name {
			named = append(named, d)
		}
	}
	if len(named) == 1 {
		return named
	}
	if len(named) > 1 {
		for _, d := range named {
			if Ref(d).Namespace == ref.Namespace {
				return []map[string]any{d}
			}
		}
		return named[:1]
	}
	// by value
	flatObj := map[string]any{}
	ravel(obj, "", flatObj)
	flatObj = dropIgnoredKeys(flatObj, ignored)
	counts := make([]int, len(sameKind))
	best := 0
	for i, d := range sameKind {
		flat := map[string]any{}
		ravel(d, "", flat)
		flat = dropIgnoredKeys(flat, ignored)
		for k, v := range flatObj {
			if x, ok := flat[k]; ok && fmt.Sprint(x) == fmt.Sprint(v) {
				counts[i]++
			}
		}
		best = max(best, counts[i])
	}
	var out []map[string]any
	for i, d := range sameKind {
		if counts[i] == best && len(out) < 3 {
			out = append(out, d)
		}
	}
	return out
}

func dropIgnoredKeys(flat map[string]any, ignored []*regexp.Regexp) map[string]any {
	for k := range flat {
		for _, re := range ignored {
			if re.MatchString(k) {
				delete(flat, k)
				break
			}
		}
	}
	return flat
}
