package mutate

import (
	"errors"
	"fmt"
	"strconv"
)

// This file ports upstream's anchor preprocessing of strategic merge
// patches. It rewrites a per-request copy of the patch against the resource:
// conditions are checked and removed, add-if-not-present anchors are either
// dropped or turned into plain keys, and every matching element of a list of
// maps gets its own copy of the patch element, tied to it by "name".
//
// The quirks of upstream are kept on purpose because they decide the patched
// resource: the patch element copy shared by all resource elements of a list
// (so add-if-not-present decisions leak from one element to the next), the
// removal of empty maps from the patch, and the index arithmetic of the list
// clean-up (which upstream would turn into a panic; here it is an error).

// preprocessor carries the state of one preprocessing run.
type preprocessor struct {
	// inElement is set below an element of a list of maps: a failed
	// condition there that is not global only skips the element, so its
	// texts are never read.
	inElement bool
}

// elementCondition stands for the failed conditions that only skip a list
// element (see preprocessor.inElement): shared, never read nor changed.
var elementCondition = &ConditionError{Reason: "condition failed in a list element"}

// preprocess rewrites pattern (owned by the caller) against resource,
// which it only reads (without expanding its lazy nodes). A
// *ConditionError means the whole patch must be replaced by an empty patch.
func preprocess(pattern, resource *node) error {
	pp := preprocessor{}
	if err := pp.recurse(pattern, resource, rootPath()); err != nil {
		return err
	}
	return pp.deleteConditionElements(pattern)
}

func (pp preprocessor) recurse(pattern, resource *node, p path) error {
	switch pattern.kind {
	case mapNode:
		return pp.walkMap(pattern, resource, p)
	case seqNode:
		return pp.walkList(pattern, resource, p)
	}
	return nil
}

func (pp preprocessor) walkMap(pattern, resource *node, p path) error {
	pp.handleAddIfNotPresent(pattern, resource)
	if err := pp.validateConditions(pattern, resource, p); err != nil {
		return err
	}
	// the loop changes fields of pattern's values, not pattern's own
	for _, key := range pattern.keysView() {
		if isAnchorForPatch(key) {
			continue
		}
		rv, _ := resource.peek(key)
		if err := pp.recurse(pattern.field(key), rv, p.key(key)); err != nil {
			return err
		}
	}
	return nil
}

func (pp preprocessor) walkList(pattern, resource *node, p path) error {
	pattern.expand()
	if len(pattern.items) == 0 || pattern.items[0].kind != mapNode {
		return nil
	}
	return pp.processListOfMaps(pattern, resource, p)
}

// elementsOf mirrors RNode.Elements on the resource side: a missing or null
// node has no elements, a map or a non-null scalar is an error.
func elementsOf(n *node, p path) ([]*node, error) {
	if isMissingOrNull(n) {
		return nil, nil
	}
	if n.kind != seqNode {
		return nil, errAt(p, fmt.Errorf("%w: %w: the patch has a list where the resource has a %s", ErrPreprocess, ErrKindMismatch, kindName(n)))
	}
	n.expand()
	return append([]*node(nil), n.items...), nil
}

func kindName(n *node) string {
	switch n.kind {
	case mapNode:
		return "map"
	case seqNode:
		return "list"
	}
	return "scalar"
}

func (pp preprocessor) processListOfMaps(pattern, resource *node, p path) error {
	pattern.expand()
	patternElements := append([]*node(nil), pattern.items...)
	resourceElements, err := elementsOf(resource, p)
	if err != nil {
		return err
	}
	for i, pe := range patternElements {
		if !hasAnchors(pe, isAnchorForPatch) {
			continue
		}
		hasGlobal := hasAnchors(pe, isGlobalKey)
		anyGlobalPassed := false
		var lastGlobalErr error
		// One copy shared by all resource elements, as upstream does.
		cp := copyTree(pe)
		pp := preprocessor{inElement: true}
		for j, re := range resourceElements {
			if err := pp.recurse(cp, re, p.index(j)); err != nil {
				var ce *ConditionError
				if errors.As(err, &ce) {
					if ce.Global {
						lastGlobalErr = err
					}
					continue
				}
				return err
			}
			if hasGlobal {
				anyGlobalPassed = true
			} else if err := pp.handlePatternName(pattern, cp, re); err != nil {
				return errAt(p, fmt.Errorf("failed to update name in pattern: %w", err))
			}
		}
		if resource == nil {
			if err := pp.recurse(cp, nil, p.index(i)); err != nil {
				var ce *ConditionError
				if errors.As(err, &ce) && !ce.Global {
					continue
				}
				return err
			}
			if hasGlobal {
				anyGlobalPassed = true
			}
		}
		if !anyGlobalPassed && lastGlobalErr != nil {
			return lastGlobalErr
		}
	}
	return nil
}

// handlePatternName appends to the patch list a copy of the (processed)
// patch element bound to the resource element by its name.
func (pp preprocessor) handlePatternName(pattern, pe, re *node) error {
	name, ok := re.peek("name")
	if !ok || isNilOrEmpty(name) {
		return nil
	}
	n := copyTree(pe)
	empty, err := deleteAnchors(n, true)
	if err != nil || empty {
		return err
	}
	n.setField("name", name)
	pattern.items = append(pattern.items, n)
	return nil
}

// handleAddIfNotPresent drops "+(key)" fields whose key exists in the
// resource and renames the others to "key". It returns the number of add
// anchors found.
func (pp preprocessor) handleAddIfNotPresent(pattern, resource *node) int {
	if pattern == nil || pattern.kind != mapNode {
		return 0
	}
	if !hasAddAnchor(pattern.keysView()) {
		return 0
	}
	count := 0
	for _, k := range pattern.fieldNames() {
		a, ok := parseAnchor(k)
		if !ok || a.kind != anchorAdd {
			continue
		}
		count++
		if _, ok := resource.peek(a.key); ok {
			pattern.clearField(a.String())
		} else {
			pattern.renameField(a.String(), a.key)
		}
	}
	return count
}

// hasAddAnchor reports whether one of keys is an add-if-not-present anchor
// (handleAddIfNotPresent copies the keys only then: it changes them).
func hasAddAnchor(keys []string) bool {
	for _, k := range keys {
		if a, ok := parseAnchor(k); ok && a.kind == anchorAdd {
			return true
		}
	}
	return false
}

func (pp preprocessor) validateConditions(pattern, resource *node, p path) error {
	if err := pp.validateConditionsOf(pattern, resource, anchorGlobal, p); err != nil {
		return err
	}
	return pp.validateConditionsOf(pattern, resource, anchorCondition, p)
}

func (pp preprocessor) validateConditionsOf(pattern, resource *node, kind anchorKind, p path) error {
	if pattern.kind != mapNode {
		return nil
	}
	// the loop changes fields of pattern's values, not pattern's own
	for _, k := range pattern.keysView() {
		a, ok := parseAnchor(k)
		if !ok || a.kind != kind {
			continue
		}
		fail := func(reason string) error {
			return &ConditionError{Global: kind == anchorGlobal, Path: p.key(k).String(), Reason: reason}
		}
		rv, ok := resource.peek(a.key)
		if !ok {
			if pp.inElement && kind != anchorGlobal {
				return elementCondition
			}
			return fail("could not found " + strconv.Quote(a.key) + " key in the resource")
		}
		pv := pattern.field(a.String())
		if pp.handleAddIfNotPresent(pv, rv) > 0 {
			continue
		}
		if err := matchCondition(toJSONAny(rv), toJSONAny(pv)); err != nil {
			if pp.inElement && kind != anchorGlobal {
				return elementCondition
			}
			return fail(err.Error())
		}
	}
	return nil
}

// hasAnchors reports whether n holds, at any depth, a key accepted by
// isAnchor, or a scalar value that looks like a conditional or global anchor.
func hasAnchors(n *node, isAnchor func(string) bool) bool {
	n.expand()
	switch n.kind {
	case mapNode:
		for _, k := range n.keys {
			if isAnchor(k) {
				return true
			}
			if v := n.field(k); !isNilOrEmpty(v) && hasAnchors(v, isAnchor) {
				return true
			}
		}
	case scalarNode:
		return isConditionKey(n.text)
	case seqNode:
		for _, e := range n.items {
			if hasAnchors(e, isAnchor) {
				return true
			}
		}
	}
	return false
}

// deleteConditionElements removes from the top-level patch map what only
// served as conditions.
func (pp preprocessor) deleteConditionElements(pattern *node) error {
	if isMissingOrNull(pattern) {
		return nil
	}
	if pattern.kind != mapNode {
		return fmt.Errorf("%w: the patch must be a map", ErrPreprocess)
	}
	for _, k := range pattern.fieldNames() {
		v := pattern.field(k)
		if v == nil {
			continue
		}
		canDelete, err := deleteAnchors(v, isConditionKey(k))
		if err != nil {
			return err
		}
		if canDelete {
			pattern.clearField(k)
		}
	}
	return nil
}

// deleteAnchors removes condition anchors and their values from n and reports
// whether n itself must be removed from the patch (it held only anchors, or
// it is an empty map).
func deleteAnchors(n *node, deleteScalar bool) (bool, error) {
	switch n.kind {
	case mapNode:
		return deleteAnchorsInMap(n)
	case seqNode:
		return deleteAnchorsInList(n)
	}
	return deleteScalar, nil
}

func deleteAnchorsInMap(n *node) (bool, error) {
	anchorsExist := false
	for _, k := range n.fieldNames() {
		if !isConditionKey(k) {
			continue
		}
		v := n.field(k)
		if v == nil {
			continue
		}
		del, err := deleteAnchors(v, true)
		if err != nil {
			return false, err
		}
		if del {
			n.clearField(k)
		} else {
			anchorsExist = true
		}
	}
	if anchorsExist {
		for _, k := range n.fieldNames() {
			if isConditionKey(k) {
				a, _ := parseAnchor(k)
				n.renameField(k, a.key)
			}
		}
	}
	needToDelete := true
	for _, k := range n.fieldNames() {
		v := n.field(k)
		if v == nil {
			continue
		}
		del, err := deleteAnchors(v, false)
		if err != nil {
			return false, err
		}
		if del {
			n.clearField(k)
		} else {
			needToDelete = false
		}
	}
	return needToDelete, nil
}

func deleteAnchorsInList(n *node) (bool, error) {
	n.expand()
	elements := append([]*node(nil), n.items...)
	wasEmpty := len(elements) == 0
	for i, e := range elements {
		del := true
		if !hasAnchors(e, isAnchorForPatch) {
			var err error
			del, err = deleteAnchors(e, false)
			if err != nil {
				return false, err
			}
		}
		if del {
			// Upstream removes by the original index from the already
			// shortened list; past its end it panics.
			if i >= len(n.items) {
				return false, fmt.Errorf("%w: cannot remove the anchored list elements of the patch (upstream panics on this patch)", ErrPreprocess)
			}
			n.items = append(n.items[:i:i], n.items[i+1:]...)
		}
	}
	if len(n.items) == 0 && !wasEmpty {
		return true, nil
	}
	return false, nil
}
