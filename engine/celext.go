package engine

import (
	"github.com/gavelpolicy/gavel/cel"
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
