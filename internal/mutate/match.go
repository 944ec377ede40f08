package mutate

import "github.com/gavelpolicy/gavel/internal/patterns"

// matchCondition reports whether resource matches the pattern of an anchor
// condition; nil means match. The semantics are those of validate
// patterns (package patterns): wildcards, operators, nested anchors.
func matchCondition(resource, pattern any) error {
	return patterns.MatchPattern(resource, pattern)
}
