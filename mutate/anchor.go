package mutate

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

// parseAnchor parses an anchored key such as "(name)" or "+(image)". It
// returns false for plain keys and for an empty key.
//
// TODO(lead): replace with patterns.ParseAnchor once package patterns lands.
func parseAnchor(s string) (anchor, bool) {
	if len(s) < 3 || s[len(s)-1] != ')' {
		return anchor{}, false
	}
	if s[0] == '(' {
		return anchor{kind: anchorCondition, key: s[1 : len(s)-1]}, true
	}
	switch anchorKind(s[0]) {
	case anchorGlobal, anchorNegation, anchorAdd, anchorEquality, anchorExistence:
		if s[1] != '(' || len(s) < 4 {
			return anchor{}, false
		}
		return anchor{kind: anchorKind(s[0]), key: s[2 : len(s)-1]}, true
	}
	return anchor{}, false
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
