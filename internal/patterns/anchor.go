package patterns

// AnchorType is the modifier of an anchored pattern key: the text before the
// opening parenthesis. The condition anchor has an empty modifier.
type AnchorType string

// The anchor modifiers Kyverno understands.
const (
	// Condition is "(key)": if the key is present and its value matches, the
	// sibling fields are checked; otherwise the enclosing element is skipped.
	Condition AnchorType = ""
	// Global is "<(key)": if the key is present and its value does not match,
	// the whole rule is skipped.
	Global AnchorType = "<"
	// Negation is "X(key)": the key must be absent.
	Negation AnchorType = "X"
	// AddIfNotPresent is "+(key)": a mutate anchor that adds the field only when
	// it is missing. In validate patterns it is an ordinary (literal) key.
	AddIfNotPresent AnchorType = "+"
	// Equality is "=(key)": if the key is present, its value must match.
	Equality AnchorType = "="
	// Existence is "^(key)": the key's list must hold at least one element
	// matching each element of the pattern list.
	Existence AnchorType = "^"
)

// Anchor is a parsed anchored key such as "=(hostPath)".
type Anchor struct {
	// Type is the anchor modifier.
	Type AnchorType
	// Key is the field name inside the parentheses.
	Key string
}

// ParseAnchor classifies a pattern key. It reports false when key is not an
// anchor. An anchor is "(k)" or one of the modifiers + < = X ^ immediately
// followed by "(k)", where k is not empty. The key is not trimmed.
func ParseAnchor(key string) (Anchor, bool) {
	n := len(key)
	if n < 3 || key[n-1] != ')' {
		return Anchor{}, false
	}
	if key[0] == '(' {
		return Anchor{Type: Condition, Key: key[1 : n-1]}, true
	}
	switch key[0] {
	case '+', '<', '=', 'X', '^':
		if n < 4 || key[1] != '(' {
			return Anchor{}, false
		}
		return Anchor{Type: AnchorType(key[:1]), Key: key[2 : n-1]}, true
	}
	return Anchor{}, false
}

// String returns the anchored key, e.g. "=(hostPath)", or "" when Key is empty.
func (a Anchor) String() string {
	if a.Key == "" {
		return ""
	}
	return string(a.Type) + "(" + a.Key + ")"
}

// IsCondition reports whether a is a condition anchor "(k)".
func (a Anchor) IsCondition() bool { return a.Type == Condition }

// IsGlobal reports whether a is a global anchor "<(k)".
func (a Anchor) IsGlobal() bool { return a.Type == Global }

// IsNegation reports whether a is a negation anchor "X(k)".
func (a Anchor) IsNegation() bool { return a.Type == Negation }

// IsAddIfNotPresent reports whether a is an add-if-not-present anchor "+(k)".
func (a Anchor) IsAddIfNotPresent() bool { return a.Type == AddIfNotPresent }

// IsEquality reports whether a is an equality anchor "=(k)".
func (a Anchor) IsEquality() bool { return a.Type == Equality }

// IsExistence reports whether a is an existence anchor "^(k)".
func (a Anchor) IsExistence() bool { return a.Type == Existence }

// ContainsCondition reports whether a is a condition or a global anchor, the
// two kinds that gate the rest of a pattern (strategic merge uses this).
func (a Anchor) ContainsCondition() bool { return a.Type == Condition || a.Type == Global }

// IsAnchor reports whether key is an anchored key of any type.
func IsAnchor(key string) bool {
	_, ok := ParseAnchor(key)
	return ok
}

// RemoveAnchor returns the field name of an anchored key, or key itself when
// it is not an anchor.
func RemoveAnchor(key string) string {
	if a, ok := ParseAnchor(key); ok {
		return a.Key
	}
	return key
}
