package patterns

import (
	"errors"
	"fmt"
	"strings"
)

// Error is the result of a failed Match. Its fields follow Kyverno's
// PatternError, and the engine maps them to a rule status:
//
//   - Skip: a condition or global anchor did not hold, so the rule does not
//     apply to the resource (status skip). Path is empty.
//   - Path not empty: the resource violates the pattern at Path (status fail).
//   - Path empty and Skip false: Kyverno reports the rule as an error (status
//     error). This happens when a condition, existence or negation anchor of
//     the pattern was never found in the resource and some other check failed.
type Error struct {
	// Path is the failing location in Kyverno's format, such as
	// "/spec/containers/0/securityContext/privileged/".
	Path string
	// Skip reports a rule that does not apply rather than a violation.
	Skip bool
	// Err is the cause; its message is the upstream message.
	Err error
}

// Error returns the message of the cause.
func (e *Error) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Status is the rule status an Error stands for.
type Status string

// The statuses Kyverno derives from a pattern mismatch.
const (
	StatusFail  Status = "fail"
	StatusSkip  Status = "skip"
	StatusError Status = "error"
)

// Status returns the rule status Kyverno reports for this mismatch.
func (e *Error) Status() Status {
	switch {
	case e.Skip:
		return StatusSkip
	case e.Path == "":
		return StatusError
	}
	return StatusFail
}

// AnchorError is the cause reported by a condition, global or negation anchor.
// Its message carries the upstream prefix: "conditional anchor mismatch",
// "global anchor mismatch" or "negation anchor matched in resource".
type AnchorError struct {
	// Type is Condition, Global or Negation.
	Type AnchorType
	// Err is what failed under the anchor.
	Err error
}

// Error returns the prefixed message.
func (e *AnchorError) Error() string {
	var prefix string
	switch e.Type {
	case Global:
		prefix = "global anchor mismatch"
	case Negation:
		prefix = "negation anchor matched in resource"
	default:
		prefix = "conditional anchor mismatch"
	}
	return prefix + ": " + e.Err.Error()
}

// Unwrap returns what failed under the anchor.
func (e *AnchorError) Unwrap() error { return e.Err }

// MismatchError reports a resource value that does not match a pattern leaf.
type MismatchError struct {
	// Path is where the value sits.
	Path string
	// Value is the resource value (a whole list when the pattern leaf is
	// compared with every element of a list).
	Value any
	// Pattern is the pattern leaf.
	Pattern any
}

// Error returns the upstream message.
func (e *MismatchError) Error() string {
	return fmt.Sprintf("resource value '%v' does not match '%v' at path %s", e.Value, e.Pattern, e.Path)
}

// SkipError gathers condition or global anchor failures that make a list or
// a map skipped: those of the elements of a list when none of them applied,
// or those of sibling anchors in a map. A skipped rule reports it as its cause.
type SkipError struct {
	// Path is the path of the list or map.
	Path string
	// Errs holds the causes, in evaluation order.
	Errs []error
}

// Error joins the causes with "; ".
func (e *SkipError) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap returns the causes.
func (e *SkipError) Unwrap() []error { return e.Errs }

// notAllowedError is the cause of a negation anchor failure.
type notAllowedError struct{ path string }

func (e *notAllowedError) Error() string { return e.path + " is not allowed" }

// structureError reports a map pattern met by a value that is not a map.
type structureError struct {
	path     string
	resource any
}

func (e *structureError) Error() string {
	return fmt.Sprintf("pattern and resource have different structures. Path: %s. Expected %T, found %T",
		e.path, map[string]any(nil), e.resource)
}

var (
	errConditionKeyMissing = errors.New("conditional anchor key doesn't exist in the resource")
	errEmptyArray          = errors.New("pattern Array empty")
)

// isSkip reports errors that make Kyverno skip an element or the rule.
func isSkip(err error) bool {
	switch e := err.(type) {
	case *AnchorError:
		return e.Type == Condition || e.Type == Global
	case *SkipError:
		return true
	}
	return false
}

// isNegation reports a negation anchor failure.
func isNegation(err error) bool {
	e, ok := err.(*AnchorError)
	return ok && e.Type == Negation
}

// CompileError reports a pattern that cannot be compiled.
type CompileError struct {
	// Path locates the offending value in Kyverno's path format.
	Path string
	// Msg says what is wrong.
	Msg string
}

// Error returns the message with its path.
func (e *CompileError) Error() string {
	return "patterns: " + e.Msg + " at " + e.Path
}
