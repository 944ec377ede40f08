package variables

import (
	"errors"
	"fmt"
)

// DefaultMaxNesting is the default limit on how deeply `{{ }}` may nest.
const DefaultMaxNesting = 64

// CompileOption configures [Parse] and [Compile].
type CompileOption func(*compileConfig) error

type compileConfig struct {
	basePath   string
	maxNesting int
}

func newCompileConfig(opts []CompileOption) (compileConfig, error) {
	cfg := compileConfig{maxNesting: DefaultMaxNesting}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// WithBasePath sets the JSON path at which the template or document sits, in
// upstream's format (raw keys joined by "/", e.g. "/mutate/patchStrategicMerge").
// It prefixes the paths reported in errors and it is where `{{ @ }}` is
// computed from: upstream drops everything up to and including the first
// "foreach" element, then the first two elements (e.g. "mutate",
// "patchStrategicMerge"), and looks the rest up under request.object (or
// target). The default is "" (the document root), which is what upstream uses
// when it substitutes a fragment such as a condition key on its own.
func WithBasePath(path string) CompileOption {
	return func(c *compileConfig) error {
		c.basePath = path
		return nil
	}
}

// WithMaxNesting bounds how deeply `{{ }}` may nest in one string; a deeper
// template is a [*ParseError]. The default is [DefaultMaxNesting].
func WithMaxNesting(n int) CompileOption {
	return func(c *compileConfig) error {
		if n < 1 {
			return fmt.Errorf("variables: max nesting must be at least 1, got %d", n)
		}
		c.maxNesting = n
		return nil
	}
}

// Option configures one evaluation ([Template.Render], [Tree.Substitute]).
type Option func(*evalConfig) error

type evalConfig struct {
	deleteRequest   bool
	unresolvedAsNil bool
	currentPrefix   string
	prefixSet       bool
}

func newEvalConfig(opts []Option) (evalConfig, error) {
	if len(opts) == 0 {
		return evalConfig{}, nil
	}
	cfg := new(evalConfig)
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(cfg); err != nil {
			return *cfg, err
		}
	}
	return *cfg, nil
}

// WithDeleteRequest marks the evaluation as part of a DELETE admission
// request: as upstream does, every occurrence of "request.object" in an
// expression is rewritten to "request.oldObject" before evaluation.
func WithDeleteRequest(isDelete bool) Option {
	return func(c *evalConfig) error {
		c.deleteRequest = isDelete
		return nil
	}
}

// WithUnresolvedAsNil makes unresolved variables evaluate to nil (rendered
// "null" inside a longer string) instead of failing. A variable is unresolved
// when the [Evaluator] reports found = false or returns an error wrapping
// [ErrNotFound].
// Other evaluator errors still fail.
//
// Upstream substituted an empty value for unresolved variables in
// preconditions until Kyverno 1.7.2 (kyverno/kyverno#4217); since then
// preconditions, deny conditions and every other place report the error
// ("failed to substitute variables in condition key: ..."), so the engine
// should not use this option where it wants upstream's current behaviour.
func WithUnresolvedAsNil() Option {
	return func(c *evalConfig) error {
		c.unresolvedAsNil = true
		return nil
	}
}

// WithCurrentValuePrefix fixes the prefix used for `{{ @ }}` ("request.object"
// or "target"). Without it the prefix is chosen as upstream does: "target"
// when the expression "target" resolves in the evaluation context, otherwise
// "request.object". It must be a dotted path of plain identifiers.
func WithCurrentValuePrefix(prefix string) Option {
	return func(c *evalConfig) error {
		if prefix == "" {
			return errors.New("variables: empty current value prefix")
		}
		c.currentPrefix = prefix
		c.prefixSet = true
		return nil
	}
}
