package patterns

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// step is one element of the path of the value being matched: a key, or a
// list index when idx is not negative.
type step struct {
	key string
	idx int
}

// matcher holds the state of one Match call: the path of the value being
// matched (a stack, rendered only when an error is built) and which anchor
// keys of the pattern were seen in a map pattern and found in the matching
// resource map. It lives on the stack of Match: it holds no pointer to
// itself and its methods do not retain it.
type matcher struct {
	p     *Pattern
	depth int
	steps [16]step // the top of the path: Match zeroes it, so it is kept short
	deep  []step   // the path below len(steps)

	seen, found   [2]uint64 // anchor keys 0-127
	seenX, foundX []uint64  // anchor keys 128 and more
	dyn           map[string]bool

	failed failure // the failure errFailure stands for
}

// failure is a value that does not match a pattern leaf (a MismatchError)
// or a map pattern (a structureError). element returns errFailure in its
// place and keeps it in the matcher: most failures end Match, which then
// allocates the cause with its Error, in one block; an anchor that wraps
// the failure takes its cause from the matcher first (cause).
type failure struct {
	structure bool // a map pattern met a value that is not a map
	path      string
	value     any // the resource value
	pattern   any // the pattern leaf (a mismatch)
}

// errFailure stands for the matcher's failure on its way up to Match, or to
// the anchor that wraps it. It never leaves the package.
var errFailure = errors.New("patterns: failure held by the matcher")

// fail records a failure and returns errFailure with its path.
func (m *matcher) fail(f failure) (string, error) {
	m.failed = f
	return f.path, errFailure
}

// cause returns err, or the cause errFailure stands for.
func (m *matcher) cause(err error) error {
	if err != errFailure {
		return err
	}
	f := &m.failed
	if f.structure {
		return &structureError{path: f.path, resource: f.value}
	}
	return &MismatchError{Path: f.path, Value: f.value, Pattern: f.pattern}
}

// errorOf returns the Error of Match for a failure at path with cause err,
// allocated with the cause errFailure stands for, if that is err.
func (m *matcher) errorOf(path string, err error) *Error {
	if err != errFailure {
		return &Error{Path: path, Err: err}
	}
	f := &m.failed
	if f.structure {
		b := &struct {
			e Error
			c structureError
		}{c: structureError{path: f.path, resource: f.value}}
		b.e = Error{Path: path, Err: &b.c}
		return &b.e
	}
	b := &struct {
		e Error
		c MismatchError
	}{c: MismatchError{Path: f.path, Value: f.value, Pattern: f.pattern}}
	b.e = Error{Path: path, Err: &b.c}
	return &b.e
}

func (m *matcher) pushKey(k string) { m.push(step{key: k, idx: -1}) }
func (m *matcher) pushIdx(i int)    { m.push(step{idx: i}) }

func (m *matcher) push(s step) {
	if m.depth < len(m.steps) {
		m.steps[m.depth] = s
	} else {
		m.deep = append(m.deep[:m.depth-len(m.steps)], s)
	}
	m.depth++
}

func (m *matcher) pop() { m.depth-- }

func (m *matcher) step(i int) step {
	if i < len(m.steps) {
		return m.steps[i]
	}
	return m.deep[i-len(m.steps)]
}

// pathOf returns the path of the value the matcher is at, which pattern
// node n matches: the path written at compile time when it is fixed, else
// the path rendered from the stack.
func (m *matcher) pathOf(n *node) string {
	if n.path != "" {
		return n.path
	}
	return m.at()
}

// at renders the current path the way Kyverno does, in one allocation.
func (m *matcher) at() string {
	n := 1
	for i := 0; i < m.depth; i++ {
		if s := m.step(i); s.idx >= 0 {
			n += digits(s.idx) + 1
		} else {
			n += len(s.key) + 1
		}
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('/')
	var num [20]byte
	for i := 0; i < m.depth; i++ {
		if s := m.step(i); s.idx >= 0 {
			b.Write(strconv.AppendInt(num[:0], int64(s.idx), 10))
		} else {
			b.WriteString(s.key)
		}
		b.WriteByte('/')
	}
	return b.String()
}

// digits is the length of the decimal form of a list index (not negative).
func digits(i int) int {
	n := 1
	for i >= 10 {
		i /= 10
		n++
	}
	return n
}

// mark records that anchor key id was compared with a resource map, and
// whether that map held the field.
func (m *matcher) mark(id int, has bool) {
	w, b := id/64, uint64(1)<<(id%64)
	seen, found := m.seen[:], m.found[:]
	if w >= len(m.seen) {
		w -= len(m.seen)
		if m.seenX == nil {
			n := (len(m.p.anchorIDs)+63)/64 - len(m.seen)
			m.seenX, m.foundX = make([]uint64, n), make([]uint64, n)
		}
		seen, found = m.seenX, m.foundX
	}
	seen[w] |= b
	if has {
		found[w] |= b
	}
}

// Match validates resource, a JSON-like tree, against the pattern. It returns
// nil when the resource matches and an *Error otherwise. The resource is only
// read.
//
// The semantics are Kyverno's validate.pattern: every field of the pattern
// must be matched; each element of a resource list must match the (single)
// element of a pattern list; elements whose condition anchors do not hold are
// skipped, and a list whose elements are all skipped skips the rule; anchors
// are evaluated before plain fields, in Kyverno's order, so that the same
// failure (message and path) is reported.
func (p *Pattern) Match(resource any) error {
	if p == nil || p.root == nil {
		return &Error{Err: errNilPattern}
	}
	m := matcher{p: p}
	path, err := m.element(resource, p.root)
	if err == nil {
		return nil
	}
	switch {
	case isSkip(err):
		return &Error{Skip: true, Err: err}
	case isNegation(err):
		return &Error{Path: path, Err: err}
	case m.keysMissing():
		return m.errorOf("", err)
	}
	return m.errorOf(path, err)
}

// keysMissing reports a condition, existence or negation anchor key that was
// never found in a resource map it was compared with.
func (m *matcher) keysMissing() bool {
	for i := range m.seen {
		if m.seen[i]&^m.found[i] != 0 {
			return true
		}
	}
	for i := range m.seenX {
		if m.seenX[i]&^m.foundX[i] != 0 {
			return true
		}
	}
	for _, found := range m.dyn {
		if !found {
			return true
		}
	}
	return false
}

// record notes, for each tracked anchor key of map pattern n, whether the
// resource map holds the field.
func (m *matcher) record(n *node, rm map[string]any) {
	for _, t := range n.track {
		_, has := rm[t.key]
		if t.id >= 0 {
			m.mark(t.id, has)
			continue
		}
		if m.dyn == nil {
			m.dyn = map[string]bool{}
		}
		m.dyn[t.raw] = m.dyn[t.raw] || has
	}
}

// element matches one resource value with one pattern node. On failure it
// returns the path Kyverno reports with the error (which is not always the
// path of the value).
func (m *matcher) element(res any, n *node) (string, error) {
	switch n.kind {
	case mapNode:
		rm, ok := res.(map[string]any)
		if !ok {
			return m.fail(failure{structure: true, path: m.pathOf(n), value: res})
		}
		if len(n.track) > 0 {
			m.record(n, rm)
		}
		return m.mapFields(rm, n)
	case arrayNode:
		ra, ok := res.([]any)
		if !ok {
			path := m.pathOf(n)
			return path, fmt.Errorf("validation rule failed at path %s, resource does not satisfy the expected overlay pattern", path)
		}
		return m.array(res, ra, n)
	}
	switch t := res.(type) {
	case []any:
		return m.leafList(res, t, n, n)
	case string:
		if l := n.leaf; l.k == vString && l.str.plain {
			if l.str.matchString(t) {
				return "", nil
			}
			return m.fail(failure{path: m.pathOf(n), value: res, pattern: l.orig})
		}
	}
	if v := toVal(res); !n.leaf.match(&v) {
		return m.fail(failure{path: m.pathOf(n), value: res, pattern: n.leaf.orig})
	}
	return "", nil
}

// leafList matches every element of a resource list with a pattern leaf
// n; the message of a mismatch shows the whole list (boxed as res) and the
// path of the list, which pattern node at matches.
func (m *matcher) leafList(res any, ra []any, n, at *node) (string, error) {
	for _, x := range ra {
		if v := toVal(x); !n.leaf.match(&v) {
			return m.fail(failure{path: m.pathOf(at), value: res, pattern: n.leaf.orig})
		}
	}
	return "", nil
}

// mapFields evaluates the keys of a map pattern in order.
//
// The anchors come first. A skip reported by one of them does not end the
// evaluation: skips are gathered and the other anchors still run. A condition
// (or global) anchor that did not hold takes priority: the map is skipped and
// the failures of its sibling anchors are not reported. A skip that comes from
// deeper down (a list under an equality anchor whose elements were all
// skipped) is overridden by a sibling anchor that applied, and skips the map
// only when none did. Any other failure ends the evaluation. Then the other
// keys are evaluated, and the first failure (or skip) ends the evaluation.
func (m *matcher) mapFields(rm map[string]any, n *node) (string, error) {
	// The metadata pattern with its wildcard keys expanded, if any, replaces
	// the value of entry metaIdx.
	metaIdx, meta := -1, (*node)(nil)
	if n.meta != nil {
		if md := rm["metadata"]; md != nil {
			if meta = m.expandMeta(n.meta, md); meta != nil {
				metaIdx = n.meta.metaIdx
			}
		}
	}
	var skips []error
	applied, direct := 0, false
	for i := 0; i < n.nAnchors; i++ {
		e := &n.entries[i]
		value := e.value
		if i == metaIdx {
			value = meta
		}
		var path string
		var err error
		if e.h == equalityHandler {
			// The most common anchor is handled here rather than in
			// field: one call less per key.
			if v, present := rm[e.key]; present {
				m.pushKey(e.key)
				path, err = m.element(v, value)
				m.pop()
			}
		} else {
			path, err = m.field(rm, n, e, value)
		}
		switch {
		case err == nil:
			applied++
		case isSkip(err):
			skips = append(skips, err)
			_, isAnchor := err.(*AnchorError)
			direct = direct || isAnchor
		case direct:
			// A condition that did not hold outranks the failure.
		default:
			return path, err
		}
	}
	if len(skips) > 0 && (direct || applied == 0) {
		path := m.pathOf(n)
		if len(skips) == 1 {
			return path, skips[0]
		}
		return path, &SkipError{Path: path, Errs: skips}
	}
	for i := n.nAnchors; i < len(n.entries); i++ {
		e := &n.entries[i]
		value := e.value
		if i == metaIdx {
			value = meta
		}
		if e.h != defaultHandler || e.star {
			if path, err := m.field(rm, n, e, value); err != nil {
				return path, err
			}
			continue
		}
		// A plain key, the most common, is matched here rather than in
		// field: one call less per key.
		m.pushKey(e.key)
		path, err := m.element(rm[e.key], value)
		m.pop()
		if err != nil {
			return path, err
		}
	}
	return "", nil
}

// field applies one key of map pattern n to the resource map, according to
// its anchor. (mapFields matches plain keys other than "*" and equality
// anchors itself, as field would.)
func (m *matcher) field(rm map[string]any, n *node, e *entry, value *node) (string, error) {
	v, present := rm[e.key]
	if e.h == defaultHandler {
		if e.star {
			if v != nil {
				return "", nil
			}
			path := m.pathOf(n)
			return path, fmt.Errorf("%s/%s not found", path, e.key)
		}
		m.pushKey(e.key)
		path, err := m.element(v, value)
		m.pop()
		return path, err
	}
	m.pushKey(e.key)
	path, err := m.anchored(v, present, e, value)
	m.pop()
	return path, err
}

// anchored is field for an anchored key, with the key pushed on the path and
// looked up in the resource map: v, present.
func (m *matcher) anchored(v any, present bool, e *entry, value *node) (string, error) {
	switch e.h {
	case negationHandler:
		if present {
			path := m.pathOf(value)
			return path, &AnchorError{Type: Negation, Err: &notAllowedError{path: path}}
		}
		return "", nil
	case equalityHandler:
		if present {
			return m.element(v, value)
		}
		return "", nil
	case conditionHandler:
		if !present {
			return m.pathOf(value), &AnchorError{Type: Condition, Err: errConditionKeyMissing}
		}
		if path, err := m.element(v, value); err != nil {
			return path, &AnchorError{Type: Condition, Err: m.cause(err)}
		}
		return "", nil
	case globalHandler:
		if present {
			if path, err := m.element(v, value); err != nil {
				return path, &AnchorError{Type: Global, Err: m.cause(err)}
			}
		}
		return "", nil
	case existenceHandler:
		if !present {
			return "", nil
		}
		list, isList := v.([]any)
		if !isList {
			return m.pathOf(value), fmt.Errorf("invalid resource type %T: Existence ^ () anchor can be used only on list/array type resource", v)
		}
		if value.kind != arrayNode {
			return m.pathOf(value), fmt.Errorf("invalid pattern type %s: Pattern has to be of list to compare against resource", value.typeName())
		}
		for _, pe := range value.elems {
			if pe.kind != mapNode {
				return m.pathOf(value), fmt.Errorf("invalid pattern type %s: Pattern has to be of type map to compare against items in resource", value.typeName())
			}
			if path, err := m.existence(list, pe, value); err != nil {
				return path, err
			}
		}
		return "", nil
	}
	return m.element(v, value)
}

// existence succeeds when at least one element of list, which pattern node
// at matches, matches the map pattern pe.
func (m *matcher) existence(list []any, pe, at *node) (string, error) {
	for i, x := range list {
		m.pushIdx(i)
		_, err := m.element(x, pe)
		m.pop()
		if err == nil {
			return "", nil
		}
	}
	path := m.pathOf(at)
	return path, fmt.Errorf("existence anchor validation failed at path %s", path)
}

// array matches a resource list (ra, boxed as res) with a pattern list.
func (m *matcher) array(res any, ra []any, n *node) (string, error) {
	switch n.mode {
	case arrayEmpty:
		return m.pathOf(n), errEmptyArray
	case arrayOfMaps:
		return m.elements(ra, n, n.elems[0], nil)
	case arrayOfLeaves:
		return m.leafList(res, ra, n.elems[0], n)
	}
	if len(ra) < len(n.elems) {
		return "", fmt.Errorf("validate Array failed, array length mismatch, resource Array len is %d and pattern Array len is %d", len(ra), len(n.elems))
	}
	return m.elements(ra[:len(n.elems)], n, nil, n.elems)
}

// elements matches resource elements, of a list that pattern node at
// matches, with one map pattern (each) or with patterns pairwise. Elements
// skipped by a condition or global anchor do not count; when every element
// is skipped the list is skipped.
func (m *matcher) elements(ra []any, at, each *node, pairwise []*node) (string, error) {
	applied := 0
	var skipped []error
	for i, x := range ra {
		pn := each
		if pairwise != nil {
			pn = pairwise[i]
		}
		m.pushIdx(i)
		path, err := m.element(x, pn)
		m.pop()
		if err == nil {
			applied++
			continue
		}
		if !isSkip(err) {
			return path, err
		}
		skipped = append(skipped, err)
	}
	if applied == 0 && len(skipped) > 0 {
		path := m.pathOf(at)
		return path, &SkipError{Path: path, Errs: skipped}
	}
	return "", nil
}

// errNilPattern is the cause reported by Match on a nil *Pattern.
var errNilPattern = errors.New("patterns: nil pattern")
