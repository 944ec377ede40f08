// Package patterns matches JSON-like values against Kyverno's validate
// patterns, with upstream's anchors, operators and messages, for tools
// that check a resource against a pattern without a whole policy (a gitops
// check, a test helper). The engine evaluates validate.pattern with the
// same machinery.
//
// A pattern is compiled once and matched many times:
//
//	p, err := patterns.Compile(pattern)   // JSON-like: maps, lists, scalars
//	r := p.Match(resource)                // r.Matched, or r.Path and r.Reason
//
// A pattern is a tree of the value it checks. Its string leaves hold
// operators: alternatives separated by "|", each a conjunction of terms
// separated by "&"; a term may start with "!" (not equal), ">", "<", ">=",
// "<=", and "a-b" is the closed range [a, b], "a!-b" its complement. Terms
// compare as durations when both sides are Go durations, else as
// Kubernetes quantities, else (equality only) as strings with the
// wildcards '*' and '?'. Number, bool and null leaves compare by type.
//
// Keys may carry anchors: (key) a condition (the enclosing element is
// skipped when it does not hold), =(key) equality (checked when the field
// is present), ^(key) existence (some element of the list matches), X(key)
// negation (the field must be absent) and <(key) global (the whole pattern
// is skipped when it does not hold). Lists of maps are matched element by
// element.
//
// Variables ({{ }}) and references ($(./../path)) are not resolved here:
// compile the document package variables returns (variables.Compile
// resolves references, Document.Substitute substitutes variables).
//
// Compiled patterns are immutable and safe for concurrent use; values are
// never modified.
package patterns

import (
	"errors"

	ipatterns "github.com/gavelpolicy/gavel/internal/patterns"
	"github.com/gavelpolicy/gavel/internal/wildcard"
)

// Pattern is a compiled pattern.
type Pattern struct{ p *ipatterns.Pattern }

// Compile parses a pattern once: anchors are classified and their
// evaluation order fixed, leaf strings are parsed into operators, ranges,
// quantities, durations and wildcards. The pattern is a JSON-like tree:
// map[string]any, []any, string, bool, nil and numbers (float64, int,
// int64, the other Go number types, json.Number). The error names the
// path of a value that cannot be a pattern. The input is not retained.
func Compile(pattern any) (*Pattern, error) {
	p, err := ipatterns.Compile(pattern)
	if err != nil {
		return nil, err
	}
	return &Pattern{p: p}, nil
}

// Result is the outcome of a match, as upstream's validate rules report
// it: matched; skipped (the rule does not apply); or not matched, with the
// place and the reason.
type Result struct {
	// Matched reports that the value matches the pattern.
	Matched bool
	// Skipped reports that a condition anchor, (key), or a global anchor,
	// <(key), did not hold: the pattern does not apply to the value
	// (upstream's skip status).
	Skipped bool
	// Path is where the value does not match, in upstream's form
	// ("/spec/containers/0/image/"). It is empty when the value matched or
	// the pattern was skipped, and for the mismatches upstream reports as
	// a rule error rather than a failure (an anchored key of the pattern
	// found nowhere in the value while another check failed).
	Path string
	// Reason is upstream's message for a mismatch or a skip, such as
	// "resource value 'nginx:latest' does not match '!*:latest' at path
	// /spec/containers/0/image/"; empty when the value matched.
	Reason string
}

// Match matches a JSON-like value (as for Compile) against the pattern.
// A nil Pattern matches nothing.
func (p *Pattern) Match(value any) Result {
	if p == nil {
		return Result{Reason: "patterns: nil Pattern"}
	}
	err := p.p.Match(value)
	if err == nil {
		return Result{Matched: true}
	}
	var pe *ipatterns.Error
	if !errors.As(err, &pe) {
		return Result{Reason: err.Error()}
	}
	return Result{Skipped: pe.Skip, Path: pe.Path, Reason: pe.Error()}
}

// Wildcard reports whether s matches pattern in Kyverno's wildcard
// dialect, that of pattern leaves, match/exclude blocks (names,
// namespaces, the parts of a kind: api.ParseKindSelector), exception rule
// names and upstream's CLI test selector: '*' stands for any run of
// characters (including none), '?' for exactly one (a code point); no
// other character is special and there is no escaping. The empty pattern
// matches only the empty string. It does not allocate.
func Wildcard(pattern, s string) bool { return wildcard.Match(pattern, s) }
