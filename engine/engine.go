package engine

import (
	"errors"
	"sync"
	"time"

	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/internal/podsecurity"
	"github.com/gavelpolicy/gavel/jmespath"
)

// Engine evaluates compiled policies. It is immutable after New and safe
// for concurrent use.
type Engine struct {
	cfg config
	jp  *jmespath.Interpreter
	psa *podsecurity.Evaluator
	// excConds caches compiled PolicyException conditions by exception.
	excConds sync.Map
	// states holds request states of finished Validate and Mutate calls
	// of the engine's policy sets (reqState.release), with their spare
	// scopes, for the next calls.
	states sync.Pool
	// the CEL environment, built on first use (celEnv)
	celOnce sync.Once
	celEnvV *cel.Env
	celErr  error
	// vcache keeps image verification outcomes (verifycache.go).
	vcache *verifyCache
	// the environment of ValidatingPolicy expressions, built on first
	// use (vpolEnv)
	vpolOnce sync.Once
	vpolEnvV *cel.Env
	vpolErr  error
	// celExcConds caches the compiled matchConditions of CEL
	// PolicyExceptions by exception and environment (vpol.go)
	celExcConds sync.Map
}

// New builds an Engine.
func New(opts ...Option) (*Engine, error) {
	c := config{
		now:              time.Now,
		defaultRegistry:  "docker.io",
		registryMutation: true,
		limits:           defaultLimits,
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	if c.exceptionsOff && (c.exceptions != nil || c.exceptionNS != nil) {
		return nil, errors.New("engine: WithExceptionsDisabled contradicts WithExceptions and WithExceptionNamespaces")
	}
	// the limit comes first: an explicit WithJMESPathOptions overrides it
	jpOpts := append([]jmespath.Option{jmespath.WithMaxResultSize(c.limits.MaxJMESPathResultBytes)}, c.jpOpts...)
	jp, err := jmespath.New(jpOpts...)
	if err != nil {
		return nil, err
	}
	psa, err := podsecurity.NewEvaluator()
	if err != nil {
		return nil, err
	}
	return &Engine{cfg: c, jp: jp, psa: psa, vcache: newVerifyCache(c.verifyCache, c.now)}, nil
}

// JMESPath returns the engine's JMESPath interpreter.
func (e *Engine) JMESPath() *jmespath.Interpreter { return e.jp }

// Now returns the engine clock's current time.
func (e *Engine) Now() time.Time { return e.cfg.now() }
