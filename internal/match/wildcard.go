package match

import "github.com/gavelpolicy/gavel/internal/wildcard"

// pattern is a compiled wildcard pattern of a match block.
type pattern = wildcard.Pattern

var newPattern = wildcard.Compile

func newPatterns(in []string) []pattern { return wildcard.CompileAll(in) }

func matchAny(ps []pattern, s string) bool { return wildcard.MatchAny(ps, s) }
