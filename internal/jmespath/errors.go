package jmespath

import (
	"errors"
	"fmt"
	"strconv"
)

// Message formats shared by the custom functions. They reproduce the upstream
// engine's wording so that messages surfaced in policy reports read the same.
const (
	msgInvalidArgumentType = "%d argument is expected of %s type"
	msgArgumentType        = "argument #%d is not of type %s (got %s)"
	msgArgOutOfBounds      = "%d argument is out of bounds (%d)"
	msgZeroDivision        = "Zero divisor passed"
	msgNonIntModulo        = "Non-integer argument(s) passed for modulo"
	msgNonIntRound         = "Non-integer argument(s) passed for round off"
	msgTypeMismatch        = "Types mismatch"
	msgInvalidOperands     = "invalid operands"
)

// ErrInvalidOption is wrapped by the errors New returns for a bad option.
var ErrInvalidOption = errors.New("invalid jmespath option")

// CompileError reports an expression that cannot be parsed.
type CompileError struct {
	// Expression is the full expression text that failed to parse.
	Expression string
	// Offset is the byte offset in Expression where parsing failed, or -1
	// when unknown.
	Offset int
	// Err is the underlying syntax error.
	Err error
}

// Error implements error.
func (e *CompileError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("invalid JMESPath expression %q (offset %d): %v", e.Expression, e.Offset, e.Err)
	}
	return fmt.Sprintf("invalid JMESPath expression %q: %v", e.Expression, e.Err)
}

// Unwrap returns the underlying syntax error.
func (e *CompileError) Unwrap() error { return e.Err }

// FunctionError reports a failure inside a custom (Kyverno) function: a wrong
// argument type, a value it cannot process, or an arithmetic error. Its text
// follows the upstream form "JMESPath function 'name': message".
type FunctionError struct {
	// Function is the name of the failing function.
	Function string
	// Argument is the 1-based position of the offending argument, or 0 when
	// the failure is not tied to one argument.
	Argument int
	// Message is the human readable reason, without the function prefix.
	Message string
	// Err is the underlying cause, if any.
	Err error
}

// Error implements error.
func (e *FunctionError) Error() string {
	return "JMESPath function '" + e.Function + "': " + e.Message
}

// Unwrap returns the underlying cause.
func (e *FunctionError) Unwrap() error { return e.Err }

// EvalError reports a failure while evaluating an expression that is not
// raised by a custom function (for instance a standard function called with
// the wrong arity, or a runtime fault in the evaluator). Its text is the
// underlying error's text; Expression tells which query failed.
type EvalError struct {
	// Expression is the expression that was being evaluated.
	Expression string
	// Err is the underlying error.
	Err error
}

// Error implements error.
func (e *EvalError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *EvalError) Unwrap() error { return e.Err }

// InputError reports input data that cannot be converted to a JSON-like tree
// (for instance an invalid json.Number). Path is the JSON path of the value.
type InputError struct {
	// Path is the JSON path (for example "spec.containers[0].port").
	Path string
	// Err is the underlying cause.
	Err error
}

// Error implements error.
func (e *InputError) Error() string {
	if e.Path == "" {
		return "invalid input data: " + e.Err.Error()
	}
	return "invalid input data at " + e.Path + ": " + e.Err.Error()
}

// Unwrap returns the underlying cause.
func (e *InputError) Unwrap() error { return e.Err }

func fnErr(name string, arg int, format string, values ...any) *FunctionError {
	return &FunctionError{Function: name, Argument: arg, Message: fmt.Sprintf(format, values...)}
}

// fnWrap wraps a cause, keeping its text as the message.
func fnWrap(name string, arg int, err error) *FunctionError {
	return &FunctionError{Function: name, Argument: arg, Message: err.Error(), Err: err}
}

func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}
