package mutate

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/gavelpolicy/gavel/internal/deepcopy"
	"github.com/gavelpolicy/gavel/internal/jsonnum"
)

// nodeKind mirrors the three YAML node kinds the merge walker cares about.
type nodeKind uint8

const (
	scalarNode nodeKind = iota + 1
	mapNode
	seqNode
)

// node is the internal, order-preserving document model used by the anchor
// preprocessing and the merge walker. It deliberately mirrors a YAML node:
// maps are ordered key/value slices (duplicate keys are representable, as in
// YAML), scalars carry the textual form upstream compares on (merge keys,
// conditions) next to the Go value that is emitted in the output.
//
// Scalars are never modified in place, so they may be shared between trees;
// maps and lists are owned by exactly one tree unless stated otherwise.
type node struct {
	kind nodeKind

	// scalars
	null  bool   // tagged null (a JSON null)
	text  string // YAML value text: raw string, canonical number, true/false, null
	value any    // Go value emitted for this scalar

	// maps
	keys []string
	vals []*node

	// lists
	items []*node

	// raw is set on a map or list of a resource that is not converted yet:
	// its fields or items become nodes on first access (expand), so that
	// the parts of a resource a patch does not reach are never converted
	// (see lazyNode). raw is never modified.
	raw any
}

// CanonicalTree reports whether v holds only nil, strings, booleans,
// finite float64 numbers, and non-nil map[string]any and []any: the trees
// a patch may convert lazily and share (see MutateShared); others are
// converted whole.
func CanonicalTree(v any) bool { return canonicalTree(v) }

func canonicalTree(v any) bool {
	switch t := v.(type) {
	case nil, string, bool:
		return true
	case float64:
		return !math.IsNaN(t) && !math.IsInf(t, 0)
	case map[string]any:
		if t == nil {
			return false
		}
		for _, c := range t {
			if !canonicalTree(c) {
				return false
			}
		}
		return true
	case []any:
		if t == nil {
			return false
		}
		for _, c := range t {
			if !canonicalTree(c) {
				return false
			}
		}
		return true
	}
	return false
}

// fromResource converts a resource: lazily when it is a canonical tree,
// else eagerly with fromValue.
func fromResource(v any, p path) (*node, error) {
	if canonicalTree(v) {
		return lazyNode(v), nil
	}
	return fromValue(v, p)
}

// lazyNode converts one value of a canonical tree: maps and lists become
// unexpanded nodes, scalars are converted as fromValue does.
func lazyNode(v any) *node {
	n := new(node)
	n.setLazy(v)
	return n
}

// setLazy makes n the lazy node of v, a value of a canonical tree.
func (n *node) setLazy(v any) {
	switch t := v.(type) {
	case map[string]any:
		*n = node{kind: mapNode, raw: v}
	case []any:
		*n = node{kind: seqNode, raw: v}
	case nil:
		*n = node{kind: scalarNode, null: true, text: "null"}
	case string:
		*n = node{kind: scalarNode, text: t, value: t}
	case bool:
		*n = node{kind: scalarNode, text: strconv.FormatBool(t), value: t}
	case float64:
		text, _ := floatText(t)
		*n = node{kind: scalarNode, text: text, value: v}
	default:
		c, err := fromValue(v, nil)
		if err != nil {
			c = nullNode() // unreachable: lazy trees are canonical
		}
		*n = *c
	}
}

// expand converts the fields or items of a lazy node into (lazy) nodes.
// It is a no-op on a node already expanded.
func (n *node) expand() {
	if n == nil || n.raw == nil {
		return
	}
	switch t := n.raw.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		vals := make([]*node, len(keys))
		slab := make([]node, len(keys))
		for i, k := range keys {
			slab[i].setLazy(t[k])
			vals[i] = &slab[i]
		}
		n.keys, n.vals = keys, vals
	case []any:
		items := make([]*node, len(t))
		slab := make([]node, len(t))
		for i, e := range t {
			slab[i].setLazy(e)
			items[i] = &slab[i]
		}
		n.items = items
	}
	n.raw = nil
}

// size is the number of fields of a map or items of a list, without
// expanding a lazy node.
func (n *node) size() int {
	switch t := n.raw.(type) {
	case map[string]any:
		return len(t)
	case []any:
		return len(t)
	}
	if n.kind == seqNode {
		return len(n.items)
	}
	return len(n.keys)
}

// sameRaw reports whether a and b are the same map or the same list (not
// merely equal ones).
func sameRaw(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && len(x) == len(y) && reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	case []any:
		y, ok := b.([]any)
		return ok && len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0])
	}
	return false
}

func newMap() *node { return &node{kind: mapNode} }
func newSeq() *node { return &node{kind: seqNode} }

func nullNode() *node { return &node{kind: scalarNode, null: true, text: "null"} }

func stringNode(s string) *node { return &node{kind: scalarNode, text: s, value: s} }

// isMissingOrNull reports a missing node or a tagged null.
func isMissingOrNull(n *node) bool { return n == nil || n.null }

// isTaggedNull reports a present, tagged null.
func isTaggedNull(n *node) bool { return n != nil && n.null }

// isEmptyMap reports a missing node, a null or a map without fields.
func isEmptyMap(n *node) bool {
	return isMissingOrNull(n) || (n.kind == mapNode && n.size() == 0)
}

// isNilOrEmpty reports a missing node, a null, an empty map or an empty list.
func isNilOrEmpty(n *node) bool {
	if isMissingOrNull(n) {
		return true
	}
	switch n.kind {
	case mapNode, seqNode:
		return n.size() == 0
	}
	return false
}

// valueText is the YAML "Value" of a node: the scalar text, empty for
// collections and for missing nodes.
func valueText(n *node) string {
	if n == nil || n.kind != scalarNode {
		return ""
	}
	return n.text
}

// getValue mirrors kyaml's GetValue: empty for missing or null nodes.
func getValue(n *node) string {
	if isMissingOrNull(n) {
		return ""
	}
	return valueText(n)
}

// fieldIndex returns the index of the first field named key, or -1.
func (n *node) fieldIndex(key string) int {
	if n == nil || n.kind != mapNode {
		return -1
	}
	n.expand()
	for i, k := range n.keys {
		if k == key {
			return i
		}
	}
	return -1
}

// field returns the value of the first field named key; nil when absent or
// when n is not a map.
func (n *node) field(key string) *node {
	if i := n.fieldIndex(key); i >= 0 {
		return n.vals[i]
	}
	return nil
}

// peek returns the value of field key for reading only. On a lazy node it
// reads the value without expanding the node: the node it returns is then
// a new lazy node, not one of n's fields, and must not be changed.
func (n *node) peek(key string) (*node, bool) {
	if n != nil && n.kind == mapNode {
		if m, ok := n.raw.(map[string]any); ok {
			v, ok := m[key]
			if !ok {
				return nil, false
			}
			return lazyNode(v), true
		}
	}
	if i := n.fieldIndex(key); i >= 0 {
		return n.vals[i], true
	}
	return nil, false
}

// hasField reports whether n is a map with a field named key (whatever its
// value, null included).
func (n *node) hasField(key string) bool { return n.fieldIndex(key) >= 0 }

// setField replaces the value of the first field named key or appends a new
// field.
func (n *node) setField(key string, v *node) {
	if i := n.fieldIndex(key); i >= 0 {
		n.vals[i] = v
		return
	}
	n.keys = append(n.keys, key)
	n.vals = append(n.vals, v)
}

// clearField removes the first field named key.
func (n *node) clearField(key string) bool {
	i := n.fieldIndex(key)
	if i < 0 {
		return false
	}
	n.keys = append(n.keys[:i:i], n.keys[i+1:]...)
	n.vals = append(n.vals[:i:i], n.vals[i+1:]...)
	return true
}

// renameField renames the first field named from.
func (n *node) renameField(from, to string) {
	if i := n.fieldIndex(from); i >= 0 {
		n.keys[i] = to
	}
}

// fieldNames returns the keys of a map (in order, duplicates kept); nil for
// anything else.
// keysView returns the field names of a map node without copying them: the
// caller must not change the node's fields while it uses them.
func (n *node) keysView() []string {
	if n == nil || n.kind != mapNode {
		return nil
	}
	n.expand()
	return n.keys
}

func (n *node) fieldNames() []string {
	if n == nil || n.kind != mapNode {
		return nil
	}
	n.expand()
	return append([]string(nil), n.keys...)
}

// copyTree deep-copies maps and lists; scalars, and the (immutable) values
// of lazy nodes, are shared.
func copyTree(n *node) *node {
	if n == nil {
		return nil
	}
	// one allocation each for the nodes, the keys and the children of
	// the copy, however many maps and lists it has
	var sz treeSize
	sz.add(n)
	sl := slab{nodes: make([]node, sz.nodes), keys: make([]string, sz.keys), kids: make([]*node, sz.kids)}
	return sl.copy(n)
}

// treeSize counts what copyTree allocates for a tree: its maps, lists and
// lazy nodes, their keys, and their children.
type treeSize struct{ nodes, keys, kids int }

func (sz *treeSize) add(n *node) {
	if n == nil {
		return
	}
	if n.raw != nil {
		sz.nodes++
		return
	}
	switch n.kind {
	case mapNode:
		sz.nodes++
		sz.keys += len(n.keys)
		sz.kids += len(n.vals)
		for _, v := range n.vals {
			sz.add(v)
		}
	case seqNode:
		sz.nodes++
		sz.kids += len(n.items)
		for _, v := range n.items {
			sz.add(v)
		}
	}
}

// slab hands out the parts of a copy. Each map's keys and values and each
// list's items get a full slice expression of the backing arrays, so that
// appending to one never writes into another.
type slab struct {
	nodes []node
	keys  []string
	kids  []*node
}

func (sl *slab) node() *node {
	n := &sl.nodes[0]
	sl.nodes = sl.nodes[1:]
	return n
}

func (sl *slab) children(k int) []*node {
	out := sl.kids[:k:k]
	sl.kids = sl.kids[k:]
	return out
}

// copy deep-copies maps and lists; scalars, and the (immutable) values of
// lazy nodes, are shared.
func (sl *slab) copy(n *node) *node {
	if n == nil {
		return nil
	}
	if n.raw != nil {
		c := sl.node()
		*c = node{kind: n.kind, raw: n.raw}
		return c
	}
	switch n.kind {
	case mapNode:
		c := sl.node()
		k := len(n.keys)
		keys := sl.keys[:k:k]
		sl.keys = sl.keys[k:]
		copy(keys, n.keys)
		*c = node{kind: mapNode, keys: keys, vals: sl.children(len(n.vals))}
		for i, v := range n.vals {
			c.vals[i] = sl.copy(v)
		}
		return c
	case seqNode:
		c := sl.node()
		*c = node{kind: seqNode, items: sl.children(len(n.items))}
		for i, v := range n.items {
			c.items[i] = sl.copy(v)
		}
		return c
	}
	return n
}

// fromValue converts a JSON-like Go value into a node tree. Map keys are
// sorted, like encoding/json (and therefore upstream) orders them.
func fromValue(v any, p path) (*node, error) {
	switch t := v.(type) {
	case nil:
		return nullNode(), nil
	case string:
		return stringNode(t), nil
	case bool:
		return &node{kind: scalarNode, text: strconv.FormatBool(t), value: t}, nil
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		n := &node{kind: mapNode, keys: keys, vals: make([]*node, len(keys))}
		for i, k := range keys {
			c, err := fromValue(t[k], p.key(k))
			if err != nil {
				return nil, err
			}
			n.vals[i] = c
		}
		return n, nil
	case []any:
		n := &node{kind: seqNode, items: make([]*node, len(t))}
		for i, e := range t {
			c, err := fromValue(e, p.index(i))
			if err != nil {
				return nil, err
			}
			n.items[i] = c
		}
		return n, nil
	}
	if text, ok, err := numberText(v); ok {
		if err != nil {
			return nil, errAt(p, err)
		}
		return &node{kind: scalarNode, text: text, value: v}, nil
	}
	return fromReflect(v, p)
}

// fromReflect handles the less common container types embedders may pass
// (map[string]string, []string, []map[string]any...).
func fromReflect(v any, p path) (*node, error) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nullNode(), nil
		}
		return fromValue(rv.Elem().Interface(), p)
	case reflect.String:
		return stringNode(rv.String()), nil
	case reflect.Bool:
		b := rv.Bool()
		return &node{kind: scalarNode, text: strconv.FormatBool(b), value: b}, nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, errAt(p, fmt.Errorf("%w: map with %s keys", ErrUnsupportedValue, rv.Type().Key()))
		}
		m := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			m[it.Key().String()] = it.Value().Interface()
		}
		return fromValue(m, p)
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nullNode(), nil
		}
		l := make([]any, rv.Len())
		for i := range l {
			l[i] = rv.Index(i).Interface()
		}
		return fromValue(l, p)
	}
	return nil, errAt(p, fmt.Errorf("%w: %T", ErrUnsupportedValue, v))
}

// numberText returns the canonical JSON text of a number (as
// encoding/json writes it). ok is false when v is not a number.
func numberText(v any) (text string, ok bool, err error) {
	i, f, k := jsonnum.Read(v)
	switch k {
	case jsonnum.Integer:
		return strconv.FormatInt(i, 10), true, nil
	case jsonnum.Real:
		switch u := v.(type) {
		case uint64: // above math.MaxInt64, written exactly as encoding/json does
			return strconv.FormatUint(u, 10), true, nil
		case uint:
			return strconv.FormatUint(uint64(u), 10), true, nil
		}
		s, err := floatText(f)
		return s, true, err
	case jsonnum.Invalid:
		return "", true, fmt.Errorf("%w: invalid number %q", ErrUnsupportedValue, string(v.(json.Number)))
	}
	return "", false, nil
}

// floatText formats f like encoding/json does.
func floatText(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("%w: %v", ErrUnsupportedValue, f)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(nil, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return string(b), nil
}

// toValue converts a node tree back into a fresh JSON-like Go value. A map
// holding the same key twice is an error, as it is for upstream's YAML
// decoder.
func toValue(n *node, p path) (any, error) {
	return toValueMode(n, p, false)
}

// toValueMode is toValue; with share, the values of lazy nodes (parts of
// the resource nothing changed) are returned as they are, not copied.
func toValueMode(n *node, p path, share bool) (any, error) {
	if n == nil {
		return nil, nil
	}
	if n.raw != nil {
		if share {
			return n.raw, nil
		}
		return deepcopy.Value(n.raw), nil
	}
	switch n.kind {
	case mapNode:
		m := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			if _, dup := m[k]; dup {
				return nil, errAt(p, fmt.Errorf("%w: mapping key %q already defined", ErrApply, k))
			}
			v, err := toValueMode(n.vals[i], p.key(k), share)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return m, nil
	case seqNode:
		l := make([]any, len(n.items))
		for i, e := range n.items {
			v, err := toValueMode(e, p.index(i), share)
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		return l, nil
	}
	if n.null {
		return nil, nil
	}
	return n.value, nil
}

// toJSONAny converts a node into the value upstream hands to its pattern
// matcher: a scalar becomes its text, a collection becomes a decoded JSON
// tree (numbers as float64).
func toJSONAny(n *node) any {
	if n == nil {
		return nil
	}
	if n.kind == scalarNode {
		return n.text
	}
	return jsonAny(n)
}

func jsonAny(n *node) any {
	if n.raw != nil {
		// a canonical tree: numbers are float64 already; read only
		return n.raw
	}
	switch n.kind {
	case mapNode:
		m := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			m[k] = jsonAny(n.vals[i])
		}
		return m
	case seqNode:
		l := make([]any, len(n.items))
		for i, e := range n.items {
			l[i] = jsonAny(e)
		}
		return l
	}
	if n.null {
		return nil
	}
	return normalizeNumber(n.value)
}

// normalizeNumber turns any Go number into float64, as encoding/json decodes
// it; other values are returned unchanged.
func normalizeNumber(v any) any {
	if f, ok, _ := jsonnum.Float(v); ok {
		return f
	}
	return v
}

var yamlFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// plainScalar builds the node of an untagged plain YAML scalar, whose Go
// value is resolved the way a YAML 1.2 decoder resolves it. kyaml creates
// such scalars when it copies a merge key into a list element.
func plainScalar(text string) *node {
	n := &node{kind: scalarNode, text: text}
	switch text {
	case "", "~", "null", "Null", "NULL":
		n.value = nil
		return n
	case "true", "True", "TRUE":
		n.value = true
		return n
	case "false", "False", "FALSE":
		n.value = false
		return n
	}
	if i, err := strconv.ParseInt(strings.ReplaceAll(text, "_", ""), 0, 64); err == nil {
		n.value = intValue(i)
		return n
	}
	if yamlFloat.MatchString(text) {
		if f, err := strconv.ParseFloat(text, 64); err == nil {
			n.value = f
			return n
		}
	}
	n.value = text
	return n
}

// intValue returns i as float64 when that is exact, int64 otherwise.
func intValue(i int64) any {
	if i >= -(1<<53) && i <= 1<<53 {
		return float64(i)
	}
	return i
}
