package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The comparison of a resource with its signed manifest, as
// k8s-manifest-sigstore's mapnode makes it: both objects are flattened to
// their leaves ("spec.template.spec.containers.0.image"), and every leaf
// that is added, removed, changed or of another type is a difference,
// {"key": ..., "values": {"before": manifest, "after": resource}}.

// manifestDiff is one difference; before and after are nil when the leaf
// is absent on that side.
type manifestDiff struct {
	Key    string         `json:"key"`
	Values map[string]any `json:"values"`
}

func (d manifestDiff) before() any { return d.Values["before"] }
func (d manifestDiff) after() any  { return d.Values["after"] }

// diffJSON is upstream's DiffResult.String().
func diffJSON(diffs []manifestDiff) string {
	if len(diffs) == 0 {
		return ""
	}
	b, err := json.Marshal(struct {
		Items []manifestDiff `json:"items"`
	}{diffs})
	if err != nil {
		return ""
	}
	return string(b)
}

// ravel flattens a canonical JSON-like value into its leaves; null
// leaves and empty maps and lists have none.
func ravel(v any, prefix string, out map[string]any) {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			ravel(x, join(k), out)
		}
	case []any:
		for i, x := range t {
			ravel(x, join(strconv.Itoa(i)), out)
		}
	case nil:
	case string, float64, bool:
		out[prefix] = v
	default:
		// not JSON-like data (canonical data has none): compared and
		// reported by its text
		out[prefix] = fmt.Sprintf("%v", v)
	}
}

// mask removes the exact keys ("metadata.name") from a flattened object,
// with what is below them.
func mask(flat map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(flat))
	for k, v := range flat {
		drop := false
		for _, m := range keys {
			if k == m || strings.HasPrefix(k, m+".") {
				drop = true
				break
			}
		}
		if !drop {
			out[k] = v
		}
	}
	return out
}

// diffFlat compares two flattened objects, before (the signed manifest)
// and after (the resource).
func diffFlat(before, after map[string]any) []manifestDiff {
	var items, typeDiffs []manifestDiff
	for k, b := range before {
		a, ok := after[k]
		switch {
		case !ok:
			items = append(items, manifestDiff{k, map[string]any{"before": b, "after": nil}})
		case reflect.TypeOf(a) != reflect.TypeOf(b):
			typeDiffs = append(typeDiffs, manifestDiff{k, map[string]any{
				"before": fmt.Sprintf("(type: %T) %s", b, b), "after": fmt.Sprintf("(type: %T) %s", a, a)}})
		case a != b:
			items = append(items, manifestDiff{k, map[string]any{"before": b, "after": a}})
		}
	}
	for k, a := range after {
		if _, ok := before[k]; !ok {
			items = append(items, manifestDiff{k, map[string]any{"before": nil, "after": a}})
		}
	}
	items = append(dropListMoves(items), typeDiffs...)
	sort.SliceStable(items, func(i, j int) bool { return items[i].Key < items[j].Key })
	return items
}

var listIndex = regexp.MustCompile(`\.\d+\.`)

// dropListMoves removes the differences of a list element that only
// moved: a leaf removed at one index and added with the same value at
// another (upstream's removeKeyDiffsInListNode, which matches the other
// key with a regular expression made of this one).
func dropListMoves(items []manifestDiff) []manifestDiff {
	out := items[:0:0]
	for _, it := range items {
		keep := true
		beforeNil, afterNil := it.before() == nil, it.after() == nil
		if listIndex.MatchString(it.Key) && (beforeNil || afterNil) {
			search, err := regexp.Compile(listIndex.ReplaceAllString(it.Key, `\.\d+\.`))
			if err == nil {
				for _, o := range items {
					if !search.MatchString(o.Key) {
						continue
					}
					if (afterNil && o.before() == nil && it.before() == o.after()) || (beforeNil && o.after() == nil && it.after() == o.before()) {
						keep = false
						break
					}
				}
			}
		}
		if keep {
			out = append(out, it)
		}
	}
	return out
}

// dropCanonicalImages removes the differences of images that only gained
// the default registry or tag ("nginx" and "docker.io/nginx:latest").
func dropCanonicalImages(items []manifestDiff) []manifestDiff {
	out := items[:0:0]
	for _, d := range items {
		if strings.HasSuffix(d.Key, "image") {
			b, ok1 := d.before().(string)
			a, ok2 := d.after().(string)
			if ok1 && ok2 && ("docker.io/"+b == a || b+":latest" == a) {
				continue
			}
		}
		out = append(out, d)
	}
	return out
}

// dropIgnored removes the differences whose key an ignored field matches.
func dropIgnored(items []manifestDiff, ignored []*regexp.Regexp) []manifestDiff {
	if len(ignored) == 0 {
		return items
	}
	out := items[:0:0]
	for _, d := range items {
		skip := false
		for _, re := range ignored {
			if re.MatchString(d.Key) {
				skip = true
				break
			}
		}
		if !skip {
			out = append(out, d)
		}
	}
	return out
}

// findManifests returns the signed manifests that may stand for the
// resource, as k8s-manifest-sigstore's FindManifestYAML: those of its kind;
// of them, the one of its group and name (of its namespace, when several),
// else the (up to 3) that share most field values with it.
func findManifests(docs []map[string]any, obj map[string]any, ignored []*regexp.Regexp) []map[string]any {
	ref := objectRef(obj)
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
		r := objectRef(d)
		if r.Group == ref.Group && r.Name == ref.Name {
			named = append(named, d)
		}
	}
	if len(named) == 1 {
		return named
	}
	if len(named) > 1 {
		for _, d := range named {
			if objectRef(d).Namespace == ref.Namespace {
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
