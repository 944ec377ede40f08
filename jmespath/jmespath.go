package jmespath

import (
	"io"
	"time"

	core "github.com/gavelpolicy/gavel/internal/jmespath"
)

// Option configures an Interpreter. Options are applied in order by New; an
// option that receives a bad value makes New fail with an error wrapping
// ErrInvalidOption.
type Option func(*core.Config) error

// WithClock sets the clock read by time_now, time_now_utc and time_since (when
// its end argument is empty). The default is time.Now.
func WithClock(now func() time.Time) Option { return Option(core.WithClock(now)) }

// WithRandom sets the source of randomness read by random(). The default is
// crypto/rand.Reader. Reads are serialised by the Interpreter, so r need not
// be safe for concurrent use. A reader that returns an error makes random()
// fail with that error.
func WithRandom(r io.Reader) Option { return Option(core.WithRandom(r)) }

// WithCacheSize bounds the number of compiled expressions Compile and Search
// keep. Zero disables the cache. The default is 512.
func WithCacheSize(n int) Option { return Option(core.WithCacheSize(n)) }

// WithRegexCacheSize bounds the number of compiled regular expressions kept
// for regex_match, regex_replace_all and regex_replace_all_literal. Zero
// disables the cache. The default is 256.
func WithRegexCacheSize(n int) Option { return Option(core.WithRegexCacheSize(n)) }

// WithDefaultRegistry sets the registry image_normalize assumes for
// references that name none (default "docker.io") and whether it writes
// that registry into them (upstream's enableDefaultRegistryMutation,
// default true; when false the registry part is left out of the output),
// as engine.WithDefaultRegistry does for the engine.
func WithDefaultRegistry(registry string, mutate bool) Option {
	return func(c *core.Config) error {
		if err := core.WithDefaultRegistry(registry)(c); err != nil {
			return err
		}
		return core.WithDefaultRegistryMutation(mutate)(c)
	}
}

// WithMaxRandomLength bounds the length, in runes, of a string random() may
// generate; longer patterns fail. The default is 65536.
func WithMaxRandomLength(n int) Option { return Option(core.WithMaxRandomLength(n)) }

// WithMaxResultSize bounds, in bytes of JSON, the values an evaluation
// builds, so that a hostile or careless expression cannot exhaust memory:
// the strings built by pad_left, pad_right, join, to_string, replace,
// replace_all, regex_replace_all, regex_replace_all_literal and
// base64_encode (checked before they are built), the arrays built by
// flattening ("[]", 16 bytes per element), and the result of an expression
// that builds values, measured as its JSON text would be. A value over the
// limit fails the evaluation with an error wrapping ErrTooLarge; values
// read from the data are not limited. The default is 8 MiB; n must be
// positive.
func WithMaxResultSize(n int) Option { return Option(core.WithMaxResultSize(n)) }

// coreOptions returns the options as the implementation's, in order.
func coreOptions(opts []Option) []core.Option {
	out := make([]core.Option, len(opts))
	for i, o := range opts {
		if o != nil {
			out[i] = core.Option(o)
		}
	}
	return out
}

// Interpreter evaluates JMESPath expressions with the standard JMESPath
// functions plus every Kyverno custom function. It is immutable after New
// (its caches are internally synchronised) and safe for concurrent use.
type Interpreter struct{ c *core.Interpreter }

// New builds an Interpreter with the given options.
func New(opts ...Option) (*Interpreter, error) {
	c, err := core.New(coreOptions(opts)...)
	if err != nil {
		return nil, err
	}
	return &Interpreter{c: c}, nil
}

// Compile returns the compiled query for expr, from the interpreter's
// bounded cache of compiled expressions when it is there. The error, a
// *CompileError, names the expression: a syntax error, or a call that
// fails on every evaluation (an unknown function, a wrong number of
// arguments, a literal argument of a type the function does not take).
func (i *Interpreter) Compile(expr string) (*Query, error) {
	q, err := i.c.Compile(expr)
	if err != nil {
		return nil, err
	}
	return &Query{q: q}, nil
}

// Search compiles expr (see Compile) and evaluates it against data.
func (i *Interpreter) Search(expr string, data any) (any, error) { return i.c.Search(expr, data) }

// Functions lists every function the Interpreter knows, sorted by name. A
// custom function that replaces a standard one of the same name (items,
// replace, split, sum, trim) is listed once, as custom.
func (i *Interpreter) Functions() []FunctionInfo { return i.c.Functions() }

// Query is a compiled expression. It is immutable and safe for concurrent
// use; evaluate it as many times as needed with Search.
type Query struct{ q *core.Query }

// Search evaluates the query against data, a JSON-like tree. Integer and
// json.Number values in data are read as float64; data itself is never
// modified. Errors raised by custom functions are *FunctionError; other
// evaluation failures are *EvalError.
func (q *Query) Search(data any) (any, error) { return q.q.Search(data) }

// String returns the expression text.
func (q *Query) String() string { return q.q.String() }

// FunctionInfo describes one function available to expressions, for help
// output such as the `gavel jp function` command: its name, arguments,
// return type and description, and whether it is one of Kyverno's.
type FunctionInfo = core.FunctionInfo

// CompileError reports an expression that cannot be compiled: its text,
// the offset of a syntax error, and the cause.
type CompileError = core.CompileError

var (
	// ErrInvalidOption is wrapped by the error New returns for an option
	// given a bad value.
	ErrInvalidOption = core.ErrInvalidOption
	// ErrTooLarge is wrapped by the errors of evaluations that would build
	// a value beyond WithMaxResultSize.
	ErrTooLarge = core.ErrTooLarge
)
