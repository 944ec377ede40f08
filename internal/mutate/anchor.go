package mutate

import "github.com/gavelpolicy/gavel/internal/patterns"

// anchorKind is the modifier of an anchored map key.
type anchorKind byte

const (
	anchorCondition anchorKind = 0   // (key)
	anchorGlobal    anchorKind = '<' // <(key)
	anchorNegation  anchorKind = 'X' // X(key)
	anchorAdd       anchorKind = '+' // +(key)
	anchorEquality  anchorKind = '=' // =(key)
	anchorExistence anchorKind = '^' // ^(key)
)

// anchor is a parsed anchored key.
type anchor struct {
	kind anchorKind
	key  string
}

// String rebuilds the anchored key ("+(key)").
func (a anchor) String() string {
	if a.kind == anchorCondition {
		return "(" + a.key + ")"
	}
	return string(rune(a.kind)) + "(" + a.key + ")"
}

// parseAnchor parses an anchored key such as "(name)" or "+(image)" with
// the anchor grammar of validate patterns. It returns false for plain keys
// and for an empty key.
func parseAnchor(s string) (anchor, bool) {
	a, ok := patterns.ParseAnchor(s)
	if !ok {
		return anchor{}, false
	}
	if a.Type == patterns.Condition {
		return anchor{kind: anchorCondition, key: a.Key}, true
	}
	return anchor{kind: anchorKind(a.Type[0]), key: a.Key}, true
}

// isConditionKey reports a conditional or global anchor (upstream's
// ContainsCondition).
func isConditionKey(k string) bool {
	a, ok := parseAnchor(k)
	return ok && (a.kind == anchorCondition || a.kind == anchorGlobal)
}

// isAnchorForPatch reports the anchors the preprocessing acts on:
// conditional, global and add-if-not-present.
func isAnchorForPatch(k string) bool {
	a, ok := parseAnchor(k)
	return ok && (a.kind == anchorCondition || a.kind == anchorGlobal || a.kind == anchorAdd)
}

func isGlobalKey(k string) bool {
	a, ok := parseAnchor(k)
	return ok && a.kind == anchorGlobal
}
