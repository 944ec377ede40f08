package variables

import (
	"errors"
	"fmt"
)

// ErrNotFound may be wrapped by an [Evaluator] error to say that the
// expression referred to something that does not exist (upstream's JMESPath
// "Unknown key" error). With [WithUnresolvedAsNil] such errors resolve to nil
// instead of failing. Without that option they are reported as a
// [*ResolveError] whose text carries the evaluator's message unchanged.
var ErrNotFound = errors.New("not found")

// ErrNilEvaluator is returned when a template with variables is rendered
// without an [Evaluator].
var ErrNilEvaluator = errors.New("variables: nil Evaluator")

// ResolveError reports an expression that the [Evaluator] failed to evaluate,
// or whose value could not be rendered as text. Its message is upstream's:
// "failed to resolve <expr> at path <path>: <cause>".
type ResolveError struct {
	// Variable is the expression as it was evaluated (after `@` and DELETE
	// rewriting).
	Variable string
	// Path is the JSON path of the string (or, for a key, of the map holding
	// it) in upstream's format: raw keys joined by "/".
	Path string
	// Err is the cause.
	Err error
}

func (e *ResolveError) Error() string {
	return fmt.Sprintf("failed to resolve %v at path %s: %v", e.Variable, e.Path, e.Err)
}

// Unwrap returns the cause.
func (e *ResolveError) Unwrap() error { return e.Err }

// UnresolvedError reports an expression for which the [Evaluator] found
// nothing (a nil result with a nil error). Its message is
// "variable <expr> not resolved at path <path>".
type UnresolvedError struct {
	// Variable is the expression as it was evaluated.
	Variable string
	// Path is the JSON path of the string, as in [ResolveError].
	Path string
}

func (e *UnresolvedError) Error() string {
	return fmt.Sprintf("variable %s not resolved at path %s", e.Variable, e.Path)
}

// Is reports that an UnresolvedError is an [ErrNotFound].
func (e *UnresolvedError) Is(target error) bool { return target == ErrNotFound }

// KeyError reports a map key whose substitution did not give a string.
// Its message is upstream's: `expected string after substituting variables in
// key "<key>"`.
type KeyError struct {
	// Key is the key as written in the policy.
	Key string
	// Path is the JSON path of the map holding the key.
	Path string
	// Value is what the key's template produced.
	Value any
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("expected string after substituting variables in key \"%s\"", e.Key)
}

// ReferenceError reports a `$( )` reference that could not be resolved.
// Its message follows upstream: "failed to resolve <ref> at path <path>:
// <cause>", or, when the reference points at nothing, "got nil resolved
// variable <ref> at path <path>: <nil>".
type ReferenceError struct {
	// Reference is the reference text, e.g. "$(./../x)".
	Reference string
	// Path is the JSON path of the string (or, for a key, of the map holding it).
	Path string
	// Err is the cause; nil when the reference points at nothing.
	Err error
}

func (e *ReferenceError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("got nil resolved variable %v at path %s: <nil>", e.Reference, e.Path)
	}
	return fmt.Sprintf("failed to resolve %v at path %s: %v", e.Reference, e.Path, e.Err)
}

// Unwrap returns the cause.
func (e *ReferenceError) Unwrap() error { return e.Err }

// NotResolvedReferenceError reports a `$( )` reference without operator that
// points at a value that is not a string (upstream only splices strings).
// Its message is upstream's:
// "NotResolvedReferenceErr,reference <ref> not resolved at path <path>".
type NotResolvedReferenceError struct {
	// Reference is the reference text, e.g. "$(./../x)".
	Reference string
	// Path is the JSON path of the string holding the reference.
	Path string
}

func (e *NotResolvedReferenceError) Error() string {
	return fmt.Sprintf("NotResolvedReferenceErr,reference %s not resolved at path %s", e.Reference, e.Path)
}

// InvalidDocumentError reports a value in a document that is not JSON-like
// (map[string]any, []any, string, bool, nil or a number).
type InvalidDocumentError struct {
	// Path is the JSON path of the offending value.
	Path string
	// Value is the offending value.
	Value any
}

func (e *InvalidDocumentError) Error() string {
	return fmt.Sprintf("unsupported value of type %T at path %s", e.Value, e.Path)
}

// ParseError reports a template that cannot be compiled, e.g. one nested
// deeper than the configured limit.
type ParseError struct {
	// Template is the template text.
	Template string
	// Path is the JSON path of the string.
	Path string
	// Reason says what is wrong.
	Reason string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("invalid template at path %s: %s", e.Path, e.Reason)
}
