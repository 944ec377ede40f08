// Package patterns implements Kyverno's validate.pattern matcher: overlay
// patterns with wildcards, value operators and anchors, with the results,
// messages and paths of the upstream engine.
//
// A pattern is compiled once with Compile and matched many times with
// (*Pattern).Match; compiled patterns are immutable and safe for concurrent
// use. Trees are JSON-like: map[string]any, []any, string, bool, nil and
// numbers (float64 as decoded from JSON, int and int64 as in Kubernetes
// unstructured objects, json.Number). Inputs are never modified.
//
// # Values
//
// A string leaf is a list of alternatives separated by "|", each a
// conjunction of terms separated by "&". A term may start with an operator:
// "!" (not equal), ">", "<", ">=", "<="; "a-b" is the closed range [a, b] and
// "a!-b" its complement. Each term is compared as a duration when both sides
// parse as Go durations, else as a Kubernetes quantity when both sides parse
// as quantities, else (equality and inequality only) as a string with the
// wildcards '*' and '?'. Numbers in the resource take part in quantity
// comparisons (a float is formatted with six decimals first, as upstream).
// Number, bool and null leaves compare by type: 8 matches 8, 8.0 and "8";
// true matches only true; null matches a missing field, null, 0, "" and false.
//
// # Anchors
//
//   - (key) condition: if the field is missing or does not match, the
//     enclosing element is skipped (and the rule, when nothing else applied).
//   - =(key) equality: if the field is present, it must match.
//   - ^(key) existence: at least one element of the resource list must match
//     each element of the pattern list.
//   - X(key) negation: the field must be absent.
//   - <(key) global: if the field is present and does not match, the rule is
//     skipped.
//   - +(key) add-if-not-present: a mutate anchor, a literal key here.
//
// Keys are evaluated in Kyverno's order (condition, existence, equality and
// negation anchors first, sorted; then keys holding anchors; then the rest),
// so the failure reported is the upstream one. Lists of maps are matched
// element by element; elements skipped by a condition or global anchor do not
// count, and a list whose elements are all skipped is skipped. Among sibling
// anchors, a condition that does not hold outranks the others, while a
// skipped list under an equality anchor is overridden by a sibling anchor
// that applied (Kyverno 1.12 and later). Wildcard keys under metadata.labels
// and metadata.annotations are matched against the resource's keys.
//
// Variables ({{ }}) and references ($(...)) are not resolved here: the
// caller substitutes them before compiling.
//
// The outcome of Match is nil or an *Error whose Skip and Path fields map to
// Kyverno's rule statuses (see Error.Status).
package patterns
