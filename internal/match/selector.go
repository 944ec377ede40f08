package match

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/internal/wildcard"
)

// selector is a compiled label selector. matchLabels entries whose key or
// value holds a wildcard are kept apart: upstream replaces each of them by a
// label of the object that matches both patterns (so the entry holds when
// such a label exists), or, when none does, by the pattern with '*' and '?'
// turned into '0' (a requirement no label can meet, or an invalid one that
// makes the selector fail to parse). Everything else is one labels.Selector.
type selector struct {
	plain labels.Selector
	wild  []wildLabel
}

type wildLabel struct {
	key, value pattern
	// noMatchErr is the parse error upstream reports when no label matches
	// and the '0'-replaced pattern is not a valid requirement.
	noMatchErr error
}

// compileSelector builds a selector; it reports invalid literal parts
// (deterministically, in sorted key order) as field errors under path.
func compileSelector(ls *metav1.LabelSelector, path *field.Path) (*selector, field.ErrorList) {
	var errs field.ErrorList
	s := &selector{}
	keys := make([]string, 0, len(ls.MatchLabels))
	for k := range ls.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var reqs []labels.Requirement
	for _, k := range keys {
		v := ls.MatchLabels[k]
		if wildcard.Has(k) || wildcard.Has(v) {
			w := wildLabel{key: newPattern(k), value: newPattern(v)}
			if _, err := labels.NewRequirement(zeroWildcards(k), selection.Equals, []string{zeroWildcards(v)}); err != nil {
				w.noMatchErr = err
			}
			s.wild = append(s.wild, w)
			continue
		}
		r, err := labels.NewRequirement(k, selection.Equals, []string{v})
		if err != nil {
			errs = append(errs, field.Invalid(path.Child("matchLabels").Key(k), v, err.Error()))
			continue
		}
		reqs = append(reqs, *r)
	}
	for i, expr := range ls.MatchExpressions {
		p := path.Child("matchExpressions").Index(i)
		var op selection.Operator
		switch expr.Operator {
		case metav1.LabelSelectorOpIn:
			op = selection.In
		case metav1.LabelSelectorOpNotIn:
			op = selection.NotIn
		case metav1.LabelSelectorOpExists:
			op = selection.Exists
		case metav1.LabelSelectorOpDoesNotExist:
			op = selection.DoesNotExist
		default:
			errs = append(errs, field.Invalid(p.Child("operator"), string(expr.Operator),
				fmt.Sprintf("%q is not a valid label selector operator", expr.Operator)))
			continue
		}
		r, err := labels.NewRequirement(expr.Key, op, append([]string(nil), expr.Values...))
		if err != nil {
			errs = append(errs, field.Invalid(p, expr.Key, err.Error()))
			continue
		}
		reqs = append(reqs, *r)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(reqs) == 0 {
		s.plain = labels.Everything()
	} else {
		s.plain = labels.NewSelector().Add(reqs...)
	}
	return s, nil
}

// zeroWildcards turns '*' and '?' into '0' as upstream does for patterns that
// matched no label.
func zeroWildcards(s string) string {
	return strings.NewReplacer("*", "0", "?", "0").Replace(s)
}

// matches evaluates the selector on a label set. A non-nil error means
// upstream would fail to build the expanded selector (a non-match there).
func (s *selector) matches(set map[string]string) (bool, error) {
	ok := true
	for i := range s.wild {
		found, err := s.wild[i].satisfied(set)
		if err != nil {
			return false, err
		}
		if !found {
			ok = false
		}
	}
	if !ok {
		return false, nil
	}
	return s.plain.Matches(labels.Set(set)), nil
}

func (w *wildLabel) satisfied(set map[string]string) (bool, error) {
	var invalid error
	for k, v := range set {
		if !w.key.Match(k) || !w.value.Match(v) {
			continue
		}
		// The matching label itself becomes the requirement upstream; it
		// must be a valid one.
		if !isQualifiedName(k) {
			if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
				invalid = fmt.Errorf("key: Invalid value: %q: %s", k, strings.Join(msgs, "; "))
				continue
			}
		}
		if !isLabelValue(v) {
			if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
				invalid = fmt.Errorf("values[0][%s]: Invalid value: %q: %s", k, v, strings.Join(msgs, "; "))
				continue
			}
		}
		return true, nil
	}
	if invalid != nil {
		return false, invalid
	}
	if w.noMatchErr != nil {
		return false, w.noMatchErr
	}
	return false, nil
}

// containsWildcard reports whether a label selector has wildcards in its
// matchLabels (upstream then skips validating it).
func containsWildcard(ls *metav1.LabelSelector) bool {
	for k, v := range ls.MatchLabels {
		if wildcard.Has(k) || wildcard.Has(v) {
			return true
		}
	}
	return false
}

// isQualifiedName is an allocation-free check that accepts only what
// validation.IsQualifiedName accepts (it may reject more; callers then ask
// the apimachinery validator).
func isQualifiedName(s string) bool {
	name := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		prefix := s[:i]
		name = s[i+1:]
		if len(prefix) == 0 || len(prefix) > 253 || !isDNSSubdomain(prefix) {
			return false
		}
	}
	return name != "" && isNameSegment(name)
}

// isLabelValue accepts only valid label values (allocation free).
func isLabelValue(s string) bool {
	return s == "" || isNameSegment(s)
}

// isNameSegment checks [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])? of at most 63
// characters.
func isNameSegment(s string) bool {
	if len(s) == 0 || len(s) > 63 || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		c := s[i]
		if !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// isDNSSubdomain checks dot-separated lower-case DNS labels.
func isDNSSubdomain(s string) bool {
	for {
		label, rest, more := strings.Cut(s, ".")
		if len(label) == 0 || !isLowerAlnum(label[0]) || !isLowerAlnum(label[len(label)-1]) {
			return false
		}
		for j := 1; j < len(label)-1; j++ {
			if c := label[j]; !isLowerAlnum(c) && c != '-' {
				return false
			}
		}
		if !more {
			return true
		}
		s = rest
	}
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isLowerAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}
