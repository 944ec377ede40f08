package engine

import (
	"sync"

	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
)

// kindEnvEntry is the environment of one set of libraries, built once.
type kindEnvEntry struct {
	once sync.Once
	env  *cel.Env
	err  error
}

// kindEnv returns the environment of the CEL policy kinds whose
// expressions see the libraries of set (upstream's set per policy type):
// the API server's, with the kinds' variables, built on first use and
// shared by the engine's policies of those kinds.
func (e *Engine) kindEnv(set cel.LibrarySet) (*cel.Env, error) {
	v, _ := e.kindEnvs.LoadOrStore(set, &kindEnvEntry{})
	ent := v.(*kindEnvEntry)
	ent.once.Do(func() {
		opts := append(celpolicy.EnvOptions(), cel.WithLibraries(set))
		ent.env, ent.err = cel.NewEnv(opts...)
	})
	return ent.env, ent.err
}
