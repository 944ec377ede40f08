package variables

import (
	"errors"
	"fmt"
	"github.com/gavelpolicy/gavel/internal/jsonnum"
	"github.com/gavelpolicy/gavel/internal/patterns"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The reference syntax is upstream's, including its greedy match: a
// reference runs to the last ")" before the next space.
var (
	// `$(...)` at the start of the string, or `x$(...)` where x is not `\`
	referenceRegex = regexp.MustCompile(`^\$\(.[^\ ]*\)|[^\\]\$\(.[^\ ]*\)`)
	// `\$(...)`
	escapedReferenceRegex = regexp.MustCompile(`\\\$\(.[^\ ]*\)`)
	inRangeRegex          = regexp.MustCompile(`^([-|\+]?\d+(?:\.\d+)?[A-Za-z]*)-([-|\+]?\d+(?:\.\d+)?[A-Za-z]*)$`)
	notInRangeRegex       = regexp.MustCompile(`^([-|\+]?\d+(?:\.\d+)?[A-Za-z]*)!-([-|\+]?\d+(?:\.\d+)?[A-Za-z]*)$`)
)

// ResolveReferences resolves `$(./../path)` references in every string value
// and map key of doc against doc itself, as upstream does for validate
// patterns before substituting variables:
//
//   - a reference path is relative to the path of the string holding it (for a
//     key, to the path of the map) unless it starts with "/"; anchors such as
//     `(name)` or `^(name)` in the document's keys are ignored when matching
//     the path, anchors written in the reference are not;
//   - without operator the referenced value must be a string, which replaces
//     the reference ([*NotResolvedReferenceError] otherwise);
//   - with an operator (`$(<./../x)`, `$(>=...)`, `$(!...)`, ...) the result is
//     the operator followed by the value: a string as is, a number formatted
//     with six decimals as upstream does ("<3000.000000");
//   - `\$(...)` becomes the literal text `$(...)`.
//
// doc is not modified; the result shares every unchanged subtree with doc and
// is doc itself when nothing changes. The first failure is returned as a
// [*ReferenceError] or [*NotResolvedReferenceError]. A map referenced as a
// whole resolves, as upstream, to one of its keys (upstream picks one at
// random; gavel the last in sorted order).
func ResolveReferences(doc any) (any, error) {
	r := refResolver{doc: doc}
	out, _, err := r.value(doc, "")
	return out, err
}

type refResolver struct {
	doc   any
	index map[string]any // cleaned path -> value, built on first use
}

func (r *refResolver) value(v any, p string) (any, bool, error) {
	switch t := v.(type) {
	case string:
		s, changed, err := r.str(t, p)
		return s, changed, err
	case map[string]any:
		var out map[string]any
		for _, k := range slices.Sorted(maps.Keys(t)) {
			newKey, kChanged, err := r.str(k, p)
			if err != nil {
				return nil, false, err
			}
			val, vChanged, err := r.value(t[k], p+"/"+k)
			if err != nil {
				return nil, false, err
			}
			if !kChanged && !vChanged {
				continue
			}
			if out == nil {
				out = maps.Clone(t)
			}
			if kChanged {
				delete(out, k)
			}
			out[newKey] = val
		}
		if out == nil {
			return v, false, nil
		}
		return out, true, nil
	case []map[string]any:
		l := make([]any, len(t))
		for i, m := range t {
			l[i] = m
		}
		out, changed, err := r.value(l, p)
		if err != nil || !changed {
			return v, false, err
		}
		return out, true, nil
	case []any:
		var out []any
		for i, e := range t {
			val, changed, err := r.value(e, p+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, false, err
			}
			if changed {
				if out == nil {
					out = slices.Clone(t)
				}
				out[i] = val
			}
		}
		if out == nil {
			return v, false, nil
		}
		return out, true, nil
	}
	return v, false, nil
}

// str resolves the references of one string at path p.
func (r *refResolver) str(s, p string) (string, bool, error) {
	if !strings.Contains(s, "$(") {
		return s, false, nil
	}
	value := s
	for _, m := range referenceRegex.FindAllString(s, -1) {
		ref, prefix := m, ""
		if m[:2] != "$(" {
			// the character before the reference was matched with it
			_, w := utf8.DecodeRuneInString(m)
			ref, prefix = m[w:], m[:w]
		}
		resolved, err := r.resolve(ref, p)
		if err != nil {
			return "", false, &ReferenceError{Reference: ref, Path: p, Err: err}
		}
		if resolved == nil {
			return "", false, &ReferenceError{Reference: ref, Path: p}
		}
		str, ok := resolved.(string)
		if !ok {
			return "", false, &NotResolvedReferenceError{Reference: ref, Path: p}
		}
		value = strings.Replace(value, m, prefix+str, 1)
	}
	for _, m := range escapedReferenceRegex.FindAllString(value, -1) {
		value = strings.ReplaceAll(value, m, m[1:])
	}
	return value, value != s, nil
}

// resolve returns the value designated by ref (e.g. "$(<./../x)") for a
// string at path p.
func (r *refResolver) resolve(ref, p string) (any, error) {
	target := strings.Trim(ref, "$()")
	op := referenceOperator(target)
	target = target[len(op):]
	if target == "" {
		return nil, errors.New("expected path, found empty reference")
	}
	if !path.IsAbs(target) {
		target = path.Join(p, target)
	}
	val := r.lookup(target)
	if op == "" {
		return val, nil
	}
	switch t := val.(type) {
	case string:
		return op + t, nil
	default:
		if f, ok := toFloat(t); ok {
			return op + strconv.FormatFloat(f, 'f', 6, 64), nil
		}
	}
	return nil, fmt.Errorf("incorrect expression: operator %s does not match with value %v", op, val)
}

// referenceOperator returns the operator a reference starts with, as
// upstream's operator.GetOperatorFromStringPattern.
func referenceOperator(s string) string {
	if len(s) < 2 {
		return ""
	}
	for _, op := range [...]string{">=", "<=", ">", "<", "!"} {
		if strings.HasPrefix(s, op) {
			return op
		}
	}
	if notInRangeRegex.MatchString(s) {
		return "!-"
	}
	if inRangeRegex.MatchString(s) {
		return "-"
	}
	return ""
}

func toFloat(v any) (float64, bool) {
	f, ok, err := jsonnum.Float(v)
	return f, ok && err == nil
}

// lookup finds the value at a path of the original document the way upstream
// does: every leaf and every key is visited with its path (a key has the path
// of its map), anchors are removed from the visited paths, and the last match
// wins.
func (r *refResolver) lookup(p string) any {
	if r.index == nil {
		r.index = map[string]any{}
		r.walk(r.doc, "")
	}
	return r.index[p]
}

func (r *refResolver) walk(v any, p string) {
	switch t := v.(type) {
	case map[string]any:
		clean := removeAnchorsFromPath(p)
		for _, k := range slices.Sorted(maps.Keys(t)) {
			r.index[clean] = k
			r.walk(t[k], p+"/"+k)
		}
	case []any:
		for i, e := range t {
			r.walk(e, p+"/"+strconv.Itoa(i))
		}
	case []map[string]any:
		for i, e := range t {
			r.walk(e, p+"/"+strconv.Itoa(i))
		}
	default:
		r.index[removeAnchorsFromPath(p)] = v
	}
}

// removeAnchorsFromPath strips anchors from every element of a raw path and
// cleans it, as upstream's anchor.RemoveAnchorsFromPath.
func removeAnchorsFromPath(p string) string {
	elems := strings.Split(p, "/")
	if elems[0] == "" {
		elems = elems[1:]
	}
	for i, e := range elems {
		elems[i] = anchorKey(e)
	}
	out := path.Join(elems...)
	if path.IsAbs(p) {
		out = "/" + out
	}
	return out
}

// anchorKey returns the key inside an anchor ("(x)", "^(x)", "+(x)", "=(x)",
// "X(x)", "<(x)"), or s itself when s is not an anchor.
func anchorKey(s string) string {
	if a, ok := patterns.ParseAnchor(s); ok && a.Key != "" {
		return a.Key
	}
	return s
}
