package match

import "github.com/gavelpolicy/gavel/internal/wildcard"

// pattern is a compiled wildcard pattern of a match block.
type pattern = wildcard.Pattern

var newPattern = wildcard.Compile

func newPatterns(in []string) []pattern { return wildcard.CompileAll(in) }

func matchAny(ps []pattern, s string) bool { return wildcard.MatchAny(ps, s) }

// Wildcard reports whether s matches pattern in Kyverno's wildcard dialect,
// that of match/exclude blocks (names, namespaces, kinds), exception rule
// names, Pod Security image lists and the CLI's test selector: '*' stands
// for any run of characters (including none), '?' for exactly one (a code
// point); no other character is special and there is no escaping. The
// empty pattern matches only the empty string. It does not allocate.
func Wildcard(pattern, s string) bool { return wildcard.Match(pattern, s) }
