package manifests

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

// Diff is one difference; before and after are nil when the leaf is
// absent on that side.
type Diff struct {
	Key    string         `json:"key"`
	Values map[string]any `json:"values"`
}

func (d Diff) before() any { return d.Values["before"] }
func (d Diff) after() any  { return d.Values["after"] }

// DiffJSON is upstream's DiffResult.String(): empty without differences.
func DiffJSON(diffs []Diff) string {
	if len(diffs) == 0 {
		return ""
	}
	b, err := json.Marshal(struct {
		Items []Diff `json:"items"`
	}{diffs})
	if err != nil {
		return ""
	}
	return string(b)
}

// Compare returns the differences between a signed manifest and the
// resource, without those of images that only gained the default
// registry or tag, and those whose key an ignored field matches.
func Compare(manifest, obj map[string]any, ignored []*regexp.Regexp) []Diff {
	before, after := map[string]any{}, map[string]any{}
	ravel(manifest, "", before)
	ravel(obj, "", after)
	return dropIgnored(dropCanonicalImages(diffFlat(before, after)), ignored)
}

// CompareDryRun is Compare of the object a dry run created from the
// signed manifest (DryRunObject) and the resource: the names the dry run
// changed (metadata.name, metadata.namespace of a namespaced resource, a
// CRD's names) are not compared.
func CompareDryRun(created, obj map[string]any, ignored []*regexp.Regexp) []Diff {
	masked := []string{"metadata.name"}
	if Ref(obj).Namespace != "" {
		masked = append(masked, "metadata.namespace")
	}
	if k, _ := obj["kind"].(string); k == "CustomResourceDefinition" {
		masked = append(masked, "spec.names.kind", "spec.names.listKind", "spec.names.singular", "spec.names.plural")
	}
	before, after := map[string]any{}, map[string]any{}
	ravel(created, "", before)
	ravel(obj, "", after)
	diffs := diffFlat(mask(before, masked...), mask(after, masked...))
	return dropIgnored(dropCanonicalImages(diffs), ignored)
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
func diffFlat(before, after map[string]any) []Diff {
	var items, typeDiffs []Diff
	for k, b := range before {
		a, ok := after[k]
		switch {
		case !ok:
			items = append(items, Diff{k, map[string]any{"before": b, "after": nil}})
		case reflect.TypeOf(a) != reflect.TypeOf(b):
			typeDiffs = append(typeDiffs, Diff{k, map[string]any{
				"before": fmt.Sprintf("(type: %T) %s", b, b), "after": fmt.Sprintf("(type: %T) %s", a, a)}})
		case a != b:
			items = append(items, Diff{k, map[string]any{"before": b, "after": a}})
		}
	}
	for k, a := range after {
		if _, ok := before[k]; !ok {
			items = append(items, Diff{k, map[string]any{"before": nil, "after": a}})
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
func dropListMoves(items []Diff) []Diff {
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
func dropCanonicalImages(items []Diff) []Diff {
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
func dropIgnored(items []Diff, ignored []*regexp.Regexp) []Diff {
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
