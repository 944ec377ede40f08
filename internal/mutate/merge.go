package mutate

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// This file implements the merge of a (preprocessed) strategic merge patch
// into a resource with the semantics of kustomize's kyaml merge2 walker, as
// upstream runs it: list direction "prepend", no inference of merge keys for
// lists without schema, the built-in Kubernetes schema for merge keys.
//
// The walker works on the resource tree in place (the caller passes fresh
// copies) and may splice patch subtrees into it.

type directiveKind uint8

const (
	dirUnknown directiveKind = iota
	dirReplace
	dirDelete
	dirMerge
)

const directiveKey = "$patch"

// merger merges one patch into one resource.
type merger struct{}

// merge merges patch into resource and returns the merged tree.
func merge(resource, patch *node) (*node, error) {
	var m merger
	res, err := m.walk(resource, patch, nil, rootPath())
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, fmt.Errorf("%w: the patch deletes the whole resource", ErrApply)
	}
	return res, nil
}

// kindOf returns the kind of the first of dest and origin that is neither
// missing nor null, 0 when both are.
func kindOf(dest, origin *node) nodeKind {
	if !isMissingOrNull(dest) {
		return dest.kind
	}
	if !isMissingOrNull(origin) {
		return origin.kind
	}
	return 0
}

func kindWord(k nodeKind) string {
	switch k {
	case mapNode:
		return "MappingNode"
	case seqNode:
		return "SequenceNode"
	}
	return "ScalarNode"
}

func checkKinds(k nodeKind, p path, dest, origin *node) error {
	for _, n := range [2]*node{dest, origin} {
		if !isMissingOrNull(n) && n.kind != k {
			return errAt(p, fmt.Errorf("%w: expected %s but got %s", ErrKindMismatch, kindWord(k), kindWord(n.kind)))
		}
	}
	return nil
}

// resolveSchema mirrors kyaml's Walker.GetSchema: the inherited schema, or
// the schema of the kind named by apiVersion/kind of the resource side, then
// of the patch side.
func resolveSchema(dest, origin *node, sch *schemaNode) *schemaNode {
	if sch != nil {
		return sch
	}
	for _, n := range [2]*node{dest, origin} {
		if isMissingOrNull(n) || n.kind != mapNode {
			continue
		}
		apiVersion, kind := metaText(n, "apiVersion"), metaText(n, "kind")
		if apiVersion == "" || kind == "" {
			continue
		}
		if s := schemaFor(apiVersion, kind); s != nil {
			return s
		}
	}
	return nil
}

func metaText(n *node, key string) string {
	f := n.field(key)
	if isNilOrEmpty(f) {
		return ""
	}
	return getValue(f)
}

func (m *merger) walk(dest, origin *node, sch *schemaNode, p path) (*node, error) {
	if origin == nil && dest != nil && dest.raw != nil && stableRaw(dest.raw, sch) {
		// a part of the resource the patch does not reach, which the walk
		// would leave as it is: keep it unconverted
		return dest, nil
	}
	sch = resolveSchema(dest, origin, sch)
	switch k := kindOf(dest, origin); k {
	case mapNode:
		if err := checkKinds(k, p, dest, origin); err != nil {
			return nil, err
		}
		return m.walkMap(dest, origin, sch, p)
	case seqNode:
		if err := checkKinds(k, p, dest, origin); err != nil {
			return nil, err
		}
		if sch.associative() {
			return m.walkAssociative(dest, origin, sch, p)
		}
		// Non-associative lists are replaced as a whole.
		if origin != nil {
			return origin, nil
		}
		return dest, nil
	case scalarNode:
		if err := checkKinds(k, p, dest, origin); err != nil {
			return nil, err
		}
		if origin != nil {
			return origin, nil
		}
		return dest, nil
	}
	return m.walkMap(dest, origin, sch, p)
}

func (m *merger) walkMap(dest, origin *node, sch *schemaNode, p path) (*node, error) {
	res, err := visitMap(dest, origin, p)
	if err != nil || res == nil {
		return nil, err
	}
	dest = res
	for _, key := range unionKeys(dest, origin) {
		val, err := m.walk(dest.field(key), origin.field(key), sch.field(key), p.key(key))
		if err != nil {
			return nil, err
		}
		if val == nil || val.null {
			dest.clearField(key)
		} else {
			dest.setField(key, val)
		}
	}
	return dest, nil
}

// unionKeys returns the sorted set of field names of both maps.
func unionKeys(a, b *node) []string {
	var keys []string
	for _, n := range [2]*node{a, b} {
		if n != nil && n.kind == mapNode {
			n.expand()
			keys = append(keys, n.keys...)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

func visitMap(dest, origin *node, p path) (*node, error) {
	if isMissingOrNull(dest) {
		if ps, _ := directive(origin); ps == dirDelete {
			return nil, nil
		}
		if origin == nil && dest != nil && dest.text != "" {
			// An explicit null the patch does not touch is kept.
			return &node{kind: scalarNode, text: dest.text}, nil
		}
		return origin, nil
	}
	if isTaggedNull(origin) {
		return nil, nil
	}
	ps, err := directive(origin)
	if err != nil {
		return nil, errAt(p, err)
	}
	switch ps {
	case dirDelete:
		return nil, nil
	case dirReplace:
		return origin, nil
	}
	return dest, nil
}

func visitAssociativeList(dest, origin *node, p path) (*node, error) {
	if isMissingOrNull(dest) {
		return origin, nil
	}
	if isTaggedNull(origin) {
		return nil, nil
	}
	ps, err := directive(origin)
	if err != nil {
		return nil, errAt(p, err)
	}
	switch ps {
	case dirDelete:
		return nil, nil
	case dirReplace:
		return origin, nil
	}
	return dest, nil
}

// directive reads, and removes, the "$patch" directive of a patch node.
func directive(n *node) (directiveKind, error) {
	if n == nil {
		return dirMerge, nil
	}
	switch n.kind {
	case mapNode:
		v := n.field(directiveKey)
		if v == nil {
			return dirMerge, nil
		}
		d, err := directiveOf(valueText(v))
		if err == nil {
			n.clearField(directiveKey)
		}
		return d, err
	case seqNode:
		n.expand()
		var el *node
		for _, item := range n.items {
			if item.kind == mapNode && item.hasField(directiveKey) {
				el = item
				break
			}
		}
		if el == nil || len(el.keys) > 1 {
			return dirMerge, nil
		}
		v := valueText(el.field(directiveKey))
		d, err := directiveOf(v)
		if err != nil {
			return d, err
		}
		if _, err := elementSetter(n, nil, []string{directiveKey}, []string{v}); err != nil {
			return dirUnknown, err
		}
		return d, nil
	}
	return dirUnknown, fmt.Errorf("%w: no implemented strategic merge patch strategy for '%s' ('%s')", ErrDirective, shortTag(n), n.text)
}

func directiveOf(v string) (directiveKind, error) {
	switch v {
	case "delete":
		return dirDelete, nil
	case "replace":
		return dirReplace, nil
	case "merge":
		return dirMerge, nil
	}
	return dirUnknown, fmt.Errorf("%w '%s'", ErrDirective, v)
}

func shortTag(n *node) string {
	if n.null {
		return "!!null"
	}
	switch n.value.(type) {
	case string:
		return "!!str"
	case bool:
		return "!!bool"
	}
	if strings.ContainsAny(n.text, ".eE") {
		return "!!float"
	}
	return "!!int"
}

func (m *merger) walkAssociative(dest, origin *node, sch *schemaNode, p path) (*node, error) {
	d, err := visitAssociativeList(dest, origin, p)
	if err != nil || d == nil {
		return nil, err
	}
	dest = d
	keys := sch.keys
	// With list direction "prepend" the patch elements come first.
	sources := [2]*node{origin, dest}
	values := elementValues(sources, keys)
	if len(values) != 0 || len(keys) > 0 {
		return m.setAssociative(values, keys, dest, origin, sch, p)
	}
	return m.setAssociative(primitiveValues(sources), []string{""}, dest, origin, sch, p)
}

// elementValues lists, without duplicates, the merge key values of the
// elements of all sources.
func elementValues(sources [2]*node, keys []string) [][]string {
	var out [][]string
	for _, src := range sources {
		if src == nil || src.kind != seqNode {
			continue
		}
		src.expand()
		for _, item := range src.items {
			vals := make([]string, 0, len(keys))
			for _, k := range keys {
				f := item.field(k)
				if isNilOrEmpty(f) {
					vals = append(vals, "")
				} else {
					vals = append(vals, valueText(f))
				}
			}
			if len(vals) == 0 || containsValues(out, vals) {
				continue
			}
			out = append(out, vals)
		}
	}
	return out
}

func containsValues(list [][]string, v []string) bool {
	for _, l := range list {
		if len(l) != len(v) {
			continue
		}
		eq := true
		for i := range l {
			if l[i] != v[i] {
				eq = false
				break
			}
		}
		if eq {
			return true
		}
	}
	return false
}

// primitiveValues lists, without duplicates, the values of primitive
// associative lists (finalizers).
func primitiveValues(sources [2]*node) [][]string {
	var out [][]string
	seen := map[string]bool{}
	for _, src := range sources {
		if src == nil || src.kind != seqNode {
			continue
		}
		src.expand()
		for _, item := range src.items {
			t := valueText(item)
			if seen[t] {
				continue
			}
			seen[t] = true
			out = append(out, []string{t})
		}
	}
	return out
}

func (m *merger) setAssociative(valuesList [][]string, keys []string, dest, origin *node, sch *schemaNode, p path) (*node, error) {
	items := newSeq()
	elemSch := sch.elements()
	if len(keys) > 1 {
		valuesList = mergeValues(valuesList)
	}
	var validKeys, validValues []string
	for _, values := range valuesList {
		if len(values) == 0 {
			continue
		}
		validKeys, validValues = validateKeys(valuesList, values, keys)
		lk, lv := validateKeys([][]string{validValues}, validValues, validKeys)
		ep := p.sel(lk, lv)
		val, err := m.walk(elementList(dest, lk, lv), elementList(origin, lk, lv), elemSch, ep)
		if err != nil {
			return nil, err
		}
		exit := false
		for i, key := range validKeys {
			if isMissingOrNull(val) || isEmptyMap(val) {
				if _, err := elementSetter(dest, nil, validKeys, validValues); err != nil {
					return nil, errAt(p, err)
				}
				exit = true
			} else if !val.hasField(key) && validValues[i] != "" {
				if err := setKey(val, key, validValues[i]); err != nil {
					return nil, errAt(ep, err)
				}
			}
		}
		if exit {
			continue
		}
		if _, err := elementSetter(items, val, validKeys, validValues); err != nil {
			return nil, errAt(p, err)
		}
	}
	if len(valuesList) > 0 {
		res, err := appendListNode(items, dest, validKeys)
		if err != nil {
			return nil, errAt(p, err)
		}
		dest = res
	}
	if isMissingOrNull(dest) {
		return nil, nil
	}
	return dest, nil
}

// setKey copies a merge key value into an element that lacks it. For a
// primitive list the element keeps its value.
func setKey(val *node, key, value string) error {
	if key == "" {
		if val.kind != scalarNode {
			return fmt.Errorf("%w: expected ScalarNode but got %s", ErrKindMismatch, kindWord(val.kind))
		}
		return nil
	}
	if val.kind != mapNode {
		return fmt.Errorf("%w: expected MappingNode but got %s", ErrKindMismatch, kindWord(val.kind))
	}
	val.setField(key, plainScalar(value))
	return nil
}

// mergeValues unifies key tuples that only differ where one side is empty
// (a port with and without protocol).
func mergeValues(vl [][]string) [][]string {
	for i := range vl {
		v1 := vl[i]
		for j := range vl {
			if ok, res := matchKeyValues(v1, vl[j]); ok {
				vl[i] = res
				vl[j] = res
			}
		}
	}
	return vl
}

func matchKeyValues(a, b []string) (bool, []string) {
	if len(a) != len(b) {
		return false, nil
	}
	common := false
	res := make([]string, 0, len(a))
	for i := range a {
		if a[i] == b[i] {
			common = true
			res = append(res, a[i])
			continue
		}
		if a[i] != "" && b[i] != "" {
			return false, nil
		}
		if a[i] != "" {
			res = append(res, a[i])
		} else {
			res = append(res, b[i])
		}
	}
	return common, res
}

// validateKeys drops the secondary keys for which no element has a value.
func validateKeys(valuesList [][]string, values, keys []string) ([]string, []string) {
	var set []string // keys with at least one value; at most len(keys)
	for _, vs := range valuesList {
		for i, v := range vs {
			if v != "" && i < len(keys) && !slices.Contains(set, keys[i]) {
				set = append(set, keys[i])
			}
		}
	}
	if len(set) == 0 {
		return keys, values
	}
	if len(set) == len(keys) && len(values) == len(keys) {
		return keys, values
	}
	var vk, vv []string
	for _, k := range keys {
		if slices.Contains(set, k) {
			vk = append(vk, k)
		}
	}
	for i, v := range values {
		if v != "" || (i < len(keys) && slices.Contains(set, keys[i])) {
			vv = append(vv, v)
		}
	}
	return vk, vv
}

// elementList returns the first element of list matching all key values.
func elementList(list *node, keys, values []string) *node {
	if list == nil || list.kind != seqNode {
		return nil
	}
	list.expand()
	if len(keys) == 0 {
		keys = []string{""}
	}
	if len(values) == 0 {
		values = []string{""}
	}
	if keys[0] == "" {
		for _, item := range list.items {
			if valueText(item) == values[0] {
				return item
			}
		}
		return nil
	}
	if len(keys) != len(values) {
		return nil
	}
	for _, item := range list.items {
		if item.kind != mapNode {
			continue
		}
		ok := true
		for i, k := range keys {
			if fieldWithText(item, k, values[i]) == nil {
				ok = false
				break
			}
		}
		if ok {
			return item
		}
	}
	return nil
}

// fieldWithText returns the value of the first field named name whose text is
// exactly text.
func fieldWithText(n *node, name, text string) *node {
	n.expand()
	for i, k := range n.keys {
		if k == name && valueText(n.vals[i]) == text {
			return n.vals[i]
		}
	}
	return nil
}

// fieldMatcher mirrors kyaml's FieldMatcher with a string value: an empty
// value matches any value.
func fieldMatcher(n *node, name, value string) (*node, error) {
	if isMissingOrNull(n) {
		return nil, nil
	}
	if name == "" {
		if n.kind != scalarNode {
			return nil, fmt.Errorf("%w: expected ScalarNode but got %s", ErrKindMismatch, kindWord(n.kind))
		}
		if getValue(n) == value {
			return n, nil
		}
		return nil, nil
	}
	if n.kind != mapNode {
		return nil, fmt.Errorf("%w: expected MappingNode but got %s", ErrKindMismatch, kindWord(n.kind))
	}
	n.expand()
	for i, k := range n.keys {
		if k == name && (value == "" || valueText(n.vals[i]) == value) {
			return n.vals[i], nil
		}
	}
	return nil, nil
}

// elementSetter mirrors kyaml's ElementSetter: it replaces every element
// matching the key values by element (removes them when element is nil) and
// appends element when nothing matched. Null and empty-map elements are
// dropped on the way.
func elementSetter(list *node, element *node, keys, values []string) (*node, error) {
	if len(keys) == 0 {
		keys = []string{""}
	}
	mappingSetter := keys[0] != "" && len(values) > 0 && values[0] != ""
	list.expand()
	var kept []*node
	found := false
	for _, e := range list.items {
		if isMissingOrNull(e) || isEmptyMap(e) {
			continue
		}
		if e.kind != mapNode && mappingSetter {
			kept = append(kept, e)
			continue
		}
		var val *node
		match := true
		for j := range keys {
			if j < len(values) {
				var err error
				if val, err = fieldMatcher(e, keys[j], values[j]); err != nil {
					return nil, err
				}
			}
			if val == nil {
				match = false
				break
			}
		}
		if !match {
			if len(values) > 0 {
				kept = append(kept, e)
			}
			continue
		}
		found = true
		if element != nil {
			kept = append(kept, element)
		}
	}
	list.items = kept
	if isMissingOrNull(element) {
		return nil, nil
	}
	if !found {
		list.items = append(list.items, element)
	}
	return element, nil
}

// appendListNode folds the elements of src into dst (replacing elements with
// the same key values, appending the others).
func appendListNode(dst, src *node, keys []string) (*node, error) {
	dst.expand()
	src.expand()
	for _, elem := range append([]*node(nil), src.items...) {
		if keys[0] == "" {
			if _, err := elementSetter(dst, elem, []string{""}, []string{valueText(elem)}); err != nil {
				return nil, err
			}
			continue
		}
		var v []string
		for _, key := range keys {
			vn, err := fieldMatcher(elem, key, "")
			if err != nil {
				return nil, err
			}
			if vn == nil {
				dst.items = append(dst.items, elem)
				continue
			}
			v = append(v, valueText(vn))
		}
		if len(keys) > 1 {
			if _, err := elementSetter(dst, nil, keys, v); err != nil {
				return nil, err
			}
		}
		if _, err := elementSetter(dst, elem, keys, v); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

// stableRaw reports whether walking the value of a lazy node without a
// patch (walk(dest, nil, sch)) would give it back unchanged, so that it can
// stay unconverted. It follows walk: maps keep every field (nulls too),
// non-associative lists are kept as they are, and an associative list is
// rebuilt in the same order exactly when its elements are non-empty maps
// whose merge keys are all set to distinct scalar values (or, for a
// primitive list, distinct non-empty scalars). Anything else (duplicate or
// missing merge keys, null elements) is walked node by node.
func stableRaw(v any, sch *schemaNode) bool {
	switch t := v.(type) {
	case map[string]any:
		if sch == nil {
			sch = rawSchema(t)
		}
		for k, c := range t {
			if !stableRaw(c, sch.field(k)) {
				return false
			}
		}
		return true
	case []any:
		if !sch.associative() {
			return true
		}
		return stableAssociative(t, sch)
	}
	return true
}

// rawSchema is resolveSchema for a map of a canonical tree.
func rawSchema(m map[string]any) *schemaNode {
	apiVersion, kind := rawText(m["apiVersion"]), rawText(m["kind"])
	if apiVersion == "" || kind == "" {
		return nil
	}
	return schemaFor(apiVersion, kind)
}

// rawText is the text a scalar of a canonical tree has as a node ("" for
// null, collections and missing values).
func rawText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case bool:
		return strconv.FormatBool(t)
	case float64:
		s, _ := floatText(t)
		return s
	}
	return ""
}

func stableAssociative(list []any, sch *schemaNode) bool {
	if !associativeKeysStable(list, sch) {
		return false
	}
	if len(sch.keys) == 0 {
		return true // scalars
	}
	elem := sch.elements()
	for _, e := range list {
		if !stableRaw(e, elem) {
			return false
		}
	}
	return true
}

// associativeKeysStable is stableAssociative without looking into the
// elements: a list of distinct non-empty scalars, or, with merge keys, of
// non-empty maps whose merge keys are set to scalars that differ from those
// of every earlier element (compared as texts, as kyaml does).
func associativeKeysStable(list []any, sch *schemaNode) bool {
	keys := sch.keys
	if len(keys) == 0 {
		for i, e := range list {
			switch e.(type) {
			case nil, map[string]any, []any:
				return false
			}
			if rawText(e) == "" {
				return false
			}
			for _, prev := range list[:i] {
				if sameText(prev, e) {
					return false
				}
			}
		}
		return true
	}
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok || len(m) == 0 {
			return false
		}
		for _, k := range keys {
			switch kv := m[k].(type) {
			case nil, map[string]any, []any:
				return false
			case string:
				if kv == "" {
					return false
				}
			}
		}
		for _, prev := range list[:i] {
			pm := prev.(map[string]any)
			same := true
			for _, k := range keys {
				if !sameText(pm[k], m[k]) {
					same = false
					break
				}
			}
			if same {
				return false
			}
		}
	}
	return true
}

// canonicalStable is canonicalTree(v) and, for a canonical tree,
// stableRaw(v, sch), in one walk.
func canonicalStable(v any, sch *schemaNode) (canonical, stable bool) {
	switch t := v.(type) {
	case map[string]any:
		if t == nil {
			return false, false
		}
		if sch == nil {
			sch = rawSchema(t)
		}
		stable = true
		for k, c := range t {
			if canonical, stable = canonicalStableWhile(stable, c, sch.field(k)); !canonical {
				return false, false
			}
		}
		return true, stable
	case []any:
		if t == nil {
			return false, false
		}
		if !sch.associative() {
			return canonicalTree(t), true
		}
		if !associativeKeysStable(t, sch) {
			return canonicalTree(t), false
		}
		if len(sch.keys) == 0 {
			return canonicalTree(t), true // scalars
		}
		elem := sch.elements()
		stable = true
		for _, e := range t {
			if canonical, stable = canonicalStableWhile(stable, e, elem); !canonical {
				return false, false
			}
		}
		return true, stable
	}
	return canonicalTree(v), true
}

// canonicalStableWhile is canonicalStable(v, sch) while the walk has found
// the tree stable, and canonicalTree(v) after (stability no longer
// matters).
func canonicalStableWhile(stable bool, v any, sch *schemaNode) (canonical, stillStable bool) {
	if !stable {
		return canonicalTree(v), false
	}
	return canonicalStable(v, sch)
}

// sameText reports whether two scalars of a canonical tree have the same
// node text (rawText), without formatting numbers when it can be helped.
func sameText(a, b any) bool {
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return x == y
		}
	case float64:
		if y, ok := b.(float64); ok {
			// equal numbers have the same shortest text, but -0 is "-0"
			return x == y && math.Signbit(x) == math.Signbit(y)
		}
	case bool:
		if y, ok := b.(bool); ok {
			return x == y
		}
	}
	return rawText(a) == rawText(b)
}
