// Package jmespath is gavel's JMESPath layer: the JMESPath language of
// github.com/jmespath-community/go-jmespath extended with every custom
// function of Kyverno's policy language (arithmetic on numbers, Kubernetes
// quantities and durations, string, regular expression, wildcard, time,
// semantic version, encoding, hashing, image and certificate helpers).
//
// Compile once, evaluate many times:
//
//	intr, err := jmespath.New()             // options: clock, randomness, caches
//	q, err := intr.Compile("request.object.spec.containers[].image")
//	images, err := q.Search(admissionRequest) // safe for concurrent use
//
// An Interpreter and its Queries are immutable and safe for concurrent use.
// The only real clock and randomness the package touches are the defaults of
// WithClock (time.Now) and WithRandom (crypto/rand); tests inject their own.
// No function performs network or DNS I/O.
//
// Data is a JSON-like tree (map[string]any, []any, string, bool, nil,
// float64). int, int64, other Go numbers and json.Number are accepted and
// read as float64; the caller's tree is never modified.
//
// Errors: Compile returns *CompileError (naming the expression) for a syntax
// error and for a call that would fail on every evaluation: an unknown
// function, a wrong number of arguments, a literal argument of a type the
// function does not take (nope(@), to_upper(@, 'x'), length(`5`)).
// Evaluation errors are plain errors: a custom function's text follows the
// upstream form "JMESPath function 'name': ...", input data that is not a
// JSON-like tree names the JSON path of the value, and a result beyond
// WithMaxResultSize matches ErrTooLarge.
package jmespath
