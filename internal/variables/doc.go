// Package variables implements gavel's `{{ }}` templates and `$( )` manifest
// references with the semantics of the upstream Kyverno engine, except for one
// deliberate difference described below.
//
// # Templates
//
// A string is split once, at compile time ([Parse] for one string, [Compile]
// for a whole JSON-like document), into literal text and JMESPath expressions.
// The recognised forms are those of upstream:
//
//   - `{{ expr }}`: an expression. Inside the braces single-level `{...}`
//     groups are allowed (JMESPath multi-select hashes, `{}` literals).
//   - `{{ a.{{ b }} }}`: a nested lookup. The inner expression is evaluated
//     first and its result, rendered as text, is spliced into the text of the
//     outer expression, which is then evaluated once.
//   - `{{- expr }}`: upstream's shallow form; accepted and, in gavel, it means
//     exactly the same as `{{ expr }}` (see below).
//   - `\{{ ... }}`: an escaped template; the backslash is dropped and the rest
//     is kept as literal text.
//   - `{{ @ }}`: the current value; rewritten to the path of the field in the
//     admitted resource (`request.object.<path>` or `target.<path>`).
//
// A template that is exactly one expression yields the value with its JSON
// type; otherwise values are rendered as text: strings as they are, anything
// else as compact JSON (numbers without a trailing `.0`, `null`, `true`).
//
// # References
//
// [ResolveReferences] resolves `$(./../path)` references, optionally prefixed
// by an operator (`$(<./../x)`, `$(>=...)`), against the document itself, as
// upstream does for validate patterns; `\$(...)` is kept as literal `$(...)`.
// References depend only on the policy, so they are resolved once.
//
// # Data is not code
//
// Upstream re-scans a substituted string for new `{{ }}` and evaluates them,
// so resource data that contains `{{ ... }}` gets executed in the policy's
// context. gavel never does that: a value brought in by a variable is text and
// is never evaluated again, whether it fills a whole field or sits inside a
// longer string. The structure of every template is fixed by the policy text
// alone. `{{- }}` therefore has nothing left to switch off and means the same
// as `{{ }}`.
//
// # Concurrency
//
// [Template] and [Tree] are immutable after construction and safe for
// concurrent use. Values returned by Render and Substitute share unchanged
// subtrees with the compiled document: treat them as read-only.
package variables
