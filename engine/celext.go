package engine

import (
	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
)

// vpolEnv returns the environment of ValidatingPolicy expressions, built
// on first use: the API server's, with the kinds' variables and Kyverno's
// CEL libraries (their hosts: WithCELLibraries).
func (e *Engine) vpolEnv() (*cel.Env, error) {
	e.vpolOnce.Do(func() {
		opts := append(celpolicy.EnvOptions(), cel.WithLibraries(cel.ValidatingPolicyLibraries))
		e.vpolEnvV, e.vpolErr = cel.NewEnv(opts...)
	})
	return e.vpolEnvV, e.vpolErr
}

// mpolEnv returns the environment of MutatingPolicy expressions, built on
// first use: ValidatingPolicy's (with the MutatingPolicy's libraries), with
// the patch types (Object, JSONPatch) in every expression, as upstream
// declares them.
func (e *Engine) mpolEnv() (*cel.Env, error) {
	e.mpolOnce.Do(func() {
		opts := append(celpolicy.EnvOptions(), cel.WithLibraries(cel.MutatingPolicyLibraries), cel.WithPatchTypes())
		e.mpolEnvV, e.mpolErr = cel.NewEnv(opts...)
	})
	return e.mpolEnvV, e.mpolErr
}
