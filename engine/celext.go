package engine

import (
	"context"

	celgo "github.com/google/cel-go/cel"

	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
)

// CELExtension extends the CEL environment of the policies.kyverno.io
// kinds (ValidatingPolicy): the place where libraries such as Kyverno's
// CEL libraries (resource, http, image, ...) plug in. The environment of
// ValidatingAdmissionPolicy, the API server's, is not extended.
type CELExtension struct {
	// EnvOptions are added to the environment, after Kubernetes'
	// libraries and the kinds' variables: libraries, variables, types.
	// Their functions are taken as impure: the values of variables are
	// not shared between policies.
	EnvOptions []celgo.EnvOption
	// Bind returns the values of the variables the EnvOptions declare,
	// by name, for one evaluation of one policy (host clients bound to
	// the request's context, the policy's namespace, ...). It is called
	// once per policy and request (or JSON payload); nil binds nothing.
	Bind func(ctx context.Context, b CELBinding) map[string]any
}

// CELBinding is what an evaluation Bind binds for.
type CELBinding struct {
	// Policy is the policy evaluated.
	Policy *Policy
	// Request is the request, nil for a JSON payload.
	Request *Request
}

// WithCELExtension extends the environment of the policies.kyverno.io
// kinds (see CELExtension); a later call replaces an earlier one.
func WithCELExtension(x CELExtension) Option {
	return func(c *config) error { c.celExt = x; return nil }
}

// vpolEnv returns the environment of ValidatingPolicy expressions, built
// on first use.
func (e *Engine) vpolEnv() (*cel.Env, error) {
	e.vpolOnce.Do(func() {
		e.vpolEnvV, e.vpolErr = cel.NewEnv(celpolicy.EnvOptions(e.cfg.celExt.EnvOptions...)...)
	})
	return e.vpolEnvV, e.vpolErr
}

// bindExtra returns the extra variables of an evaluation: the values of
// the extension's Bind with exceptions added.
func (e *Engine) bindExtra(ctx context.Context, p *Policy, req *Request, exceptions map[string]any) map[string]any {
	var out map[string]any
	if bind := e.cfg.celExt.Bind; bind != nil {
		out = bind(ctx, CELBinding{Policy: p, Request: req})
	}
	if exceptions == nil {
		return out
	}
	if out == nil {
		return map[string]any{celpolicy.ExceptionsVar: exceptions}
	}
	m := make(map[string]any, len(out)+1)
	for k, v := range out {
		m[k] = v
	}
	m[celpolicy.ExceptionsVar] = exceptions
	return m
}
