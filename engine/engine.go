package engine

import (
	"sync"
	"time"

	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
	jpcore "github.com/gavelpolicy/gavel/internal/jmespath"
	"github.com/gavelpolicy/gavel/internal/podsecurity"
	"github.com/gavelpolicy/gavel/internal/verifycache"
	"github.com/gavelpolicy/gavel/jmespath"
)

// Engine evaluates compiled policies. It is immutable after New and safe
// for concurrent use.
type Engine struct {
	cfg config
	jp  *jpcore.Interpreter
	psa *podsecurity.Evaluator
	// the public interpreter of JMESPath(), built on first use
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
	// vcache keeps image verification outcomes (verifyimages.go).
	vcache *verifycache.Cache[verifyOutcome]
	// the environment of ValidatingPolicy expressions, built on first
	// use (vpolEnv)
	vpolOnce sync.Once
	vpolEnvV *cel.Env
	vpolErr  error
	// the environments of ImageValidatingPolicies, built on first use
	// (ivpolEnvs)
	ivpolOnce  sync.Once
	ivpolEnvsV *imageEnvs
	ivpolErr   error
	// the environment of MutatingPolicy expressions, built on first use
	// (mpolEnv)
	mpolOnce sync.Once
	mpolEnvV *cel.Env
	mpolErr  error
	// celLibs are the hosts of Kyverno's CEL libraries (celhosts.go)
	celLibs *cel.Libraries
	// celExcConds caches the compiled matchConditions of CEL
	// PolicyExceptions by exception and environment (vpol.go)
	celExcConds sync.Map
	// kindEnvs are the environments of CEL policy kinds by library set
	// (kindenv.go)
	kindEnvs sync.Map
	// noCELExceptions is the cel.Input.Extra of the CEL kinds' expressions
	// when no PolicyException allows images or values: the exceptions
	// variable with empty lists, shared (never modified) by every
	// evaluation instead of being made for each
	noCELExceptions map[string]any
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
	// the limit comes first: an explicit WithJMESPathOptions overrides it
	jpOpts := append([]jmespath.Option{jmespath.WithMaxResultSize(c.limits.MaxJMESPathResultBytes)}, c.jpOpts...)
	coreOpts := make([]jpcore.Option, len(jpOpts))
	for i, o := range jpOpts {
		if o != nil {
			coreOpts[i] = jpcore.Option(o)
		}
	}
	jp, err := jpcore.New(coreOpts...)
	if err != nil {
		return nil, err
	}
	psa, err := podsecurity.NewEvaluator()
	if err != nil {
		return nil, err
	}
	return &Engine{cfg: c, jp: jp, psa: psa,
		noCELExceptions: map[string]any{celpolicy.ExceptionsVar: map[string]any{"allowedImages": []any{}, "allowedValues": []any{}}},
		vcache: verifycache.New[verifyOutcome](verifycache.Options{
			Disabled: c.verifyCache.Disabled, MaxEntries: c.verifyCache.MaxEntries, TTL: c.verifyCache.TTL, Now: c.now}), celLibs: c.celLibraries()}, nil
}
