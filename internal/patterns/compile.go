package patterns

import (
	"fmt"
	"sort"
	"strconv"
)

// MaxDepth is the deepest nesting of maps and lists that Compile accepts.
const MaxDepth = 1000

// Pattern is a compiled validate pattern. It is immutable and safe for
// concurrent use.
type Pattern struct {
	root *node
	// anchorIDs numbers the condition, existence and negation keys (as
	// written) for the missing-anchor bookkeeping of Match.
	anchorIDs map[string]int
}

type nodeKind uint8

const (
	leafNode nodeKind = iota
	mapNode
	arrayNode
)

type arrayMode uint8

const (
	arrayEmpty    arrayMode = iota // no pattern element: always an error
	arrayOfMaps                    // first element is a map: every resource element must match it
	arrayOfLeaves                  // first element is a scalar: every resource element must match it
	arrayPairwise                  // first element is a list: element i against element i
)

// node is a compiled pattern value.
type node struct {
	kind nodeKind
	leaf *leaf

	// map
	entries  []entry    // in Kyverno's evaluation order
	nAnchors int        // entries[:nAnchors] are condition, existence, equality and negation anchors
	track    []trackRef // anchors recorded for the missing-anchor rule
	meta     *metaInfo  // wildcard keys under metadata.labels/annotations

	// array
	elems []*node
	mode  arrayMode

	// nested reports anchors anywhere in this value (Kyverno evaluates such
	// sibling fields before the others).
	nested bool

	// path is the path Match reports for this value, written at compile
	// time, when it is fixed: the value is not under a list (whose indexes
	// are those of the resource) nor under a map whose keys Match rewrites
	// (wildcard labels and annotations). Otherwise it is empty and Match
	// renders the path of the value from its stack.
	path string
}

// typeName is the Go type of the pattern value as decoded from JSON, for
// messages.
func (n *node) typeName() string {
	switch n.kind {
	case mapNode:
		return "map[string]interface {}"
	case arrayNode:
		return "[]interface {}"
	}
	return fmt.Sprintf("%T", n.leaf.orig)
}

type handlerKind uint8

const (
	defaultHandler handlerKind = iota
	conditionHandler
	globalHandler
	existenceHandler
	equalityHandler
	negationHandler
)

// entry is one key of a map pattern.
type entry struct {
	raw   string // the key as written
	key   string // the resource field it addresses
	h     handlerKind
	value *node
	star  bool // a plain key whose value is exactly "*": the field must be non-null
}

// trackRef is an anchor key whose presence in the resource Match records.
type trackRef struct {
	id  int    // index in Pattern.anchorIDs, or -1 for a key made at match time
	raw string // the key as written
	key string // the field looked up
}

// Compile parses a pattern tree once: keys are classified into anchors and
// their evaluation order fixed, leaf strings are parsed into operators,
// ranges, quantities, durations and wildcards. The pattern may hold
// map[string]any, []any, string, bool, nil, float64, int, int64, the other Go
// number types and json.Number. The input is not modified nor retained.
func Compile(pattern any) (*Pattern, error) {
	c := compiler{ids: map[string]int{}}
	root, err := c.compile(pattern, 0)
	if err != nil {
		return nil, err
	}
	return &Pattern{root: root, anchorIDs: c.ids}, nil
}

// MatchPattern compiles pattern and matches resource against it: a shortcut
// for one-off checks such as the conditions of strategic merge anchors.
// A pattern that does not compile is reported as an *Error with an empty Path.
func MatchPattern(resource, pattern any) error {
	p, err := Compile(pattern)
	if err != nil {
		return &Error{Err: err}
	}
	return p.Match(resource)
}

type compiler struct {
	ids   map[string]int
	path  []string // path of the value being compiled, for errors
	lists int      // lists above the value being compiled
}

// staticPath is node.path for the value being compiled: its path in
// Kyverno's format ("/spec/containers/"), or "" under a list.
func (c *compiler) staticPath() string {
	if c.lists > 0 {
		return ""
	}
	n := 1
	for _, s := range c.path {
		n += len(s) + 1
	}
	buf := make([]byte, 0, n)
	buf = append(buf, '/')
	for _, s := range c.path {
		buf = append(buf, s...)
		buf = append(buf, '/')
	}
	return string(buf)
}

// errorf reports a CompileError at the current path.
func (c *compiler) errorf(format string, args ...any) error {
	path := "/"
	for _, s := range c.path {
		path += s + "/"
	}
	return &CompileError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

func (c *compiler) compile(x any, depth int) (*node, error) {
	if depth > MaxDepth {
		return nil, c.errorf("pattern nests deeper than %d levels", MaxDepth)
	}
	switch t := x.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		raws := make([]rawEntry, 0, len(t))
		for _, k := range keys {
			field := k
			if a, ok := ParseAnchor(k); ok && a.Type != AddIfNotPresent {
				field = a.Key
			}
			c.path = append(c.path, field)
			n, err := c.compile(t[k], depth+1)
			c.path = c.path[:len(c.path)-1]
			if err != nil {
				return nil, err
			}
			raws = append(raws, rawEntry{raw: k, value: n})
		}
		n := buildMap(raws, c.id)
		n.meta = buildMetaInfo(n)
		n.path = c.staticPath()
		return n, nil
	case []any:
		n := &node{kind: arrayNode, path: c.staticPath()}
		c.lists++ // an error ends the compilation: no need to restore it
		for i, v := range t {
			c.path = append(c.path, strconv.Itoa(i))
			e, err := c.compile(v, depth+1)
			c.path = c.path[:len(c.path)-1]
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, e)
			n.nested = n.nested || e.nested
		}
		c.lists--
		switch {
		case len(n.elems) == 0:
			n.mode = arrayEmpty
		case n.elems[0].kind == mapNode:
			n.mode = arrayOfMaps
		case n.elems[0].kind == leafNode:
			n.mode = arrayOfLeaves
		default:
			n.mode = arrayPairwise
		}
		return n, nil
	}
	l, ok := compileLeaf(x)
	if !ok {
		return nil, c.errorf("unsupported pattern value of type %T", x)
	}
	return &node{kind: leafNode, leaf: l, path: c.staticPath()}, nil
}

// id numbers an anchor key for the missing-anchor bookkeeping.
func (c *compiler) id(raw string) int {
	if id, ok := c.ids[raw]; ok {
		return id
	}
	id := len(c.ids)
	c.ids[raw] = id
	return id
}

type rawEntry struct {
	raw   string
	value *node
}

// buildMap orders the keys of a map pattern as Kyverno evaluates them:
// condition, existence, equality and negation anchors first, sorted; then the
// other keys, sorted, except that global anchors and keys whose values hold
// anchors come before the rest, in reverse sorted order. idOf numbers the
// tracked anchors; it returns -1 for keys it does not know.
func buildMap(raws []rawEntry, idOf func(string) int) *node {
	sort.Slice(raws, func(i, j int) bool { return raws[i].raw < raws[j].raw })
	n := &node{kind: mapNode}
	var front, back []entry
	for _, r := range raws {
		e := entry{raw: r.raw, key: r.raw, value: r.value}
		a, isAnchor := ParseAnchor(r.raw)
		if isAnchor {
			switch a.Type {
			case Condition:
				e.h = conditionHandler
			case Global:
				e.h = globalHandler
			case Existence:
				e.h = existenceHandler
			case Equality:
				e.h = equalityHandler
			case Negation:
				e.h = negationHandler
			}
			if e.h != defaultHandler {
				e.key = a.Key
				n.nested = true
			}
			switch a.Type {
			case Condition, Existence, Negation:
				n.track = append(n.track, trackRef{id: idOf(r.raw), raw: r.raw, key: a.Key})
			}
		}
		if e.h == defaultHandler && r.value.kind == leafNode && r.value.leaf.k == vString && r.value.leaf.str.raw == "*" {
			e.star = true
		}
		n.nested = n.nested || r.value.nested
		switch e.h {
		case conditionHandler, existenceHandler, equalityHandler, negationHandler:
			n.entries = append(n.entries, e)
		case globalHandler:
			front = append(front, e)
		default:
			if r.value.nested {
				front = append(front, e)
			} else {
				back = append(back, e)
			}
		}
	}
	n.nAnchors = len(n.entries)
	for i := len(front) - 1; i >= 0; i-- {
		n.entries = append(n.entries, front[i])
	}
	n.entries = append(n.entries, back...)
	return n
}
