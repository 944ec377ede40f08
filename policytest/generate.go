package policytest

import (
	"fmt"

	"github.com/gavelpolicy/gavel/loader"
)

// loadCloneSources adds the objects of every result's cloneSourceResource
// file to the test's in-memory cluster, as the upstream CLI loads them into
// its fake cluster before computing generated resources: generate rules
// with clone or cloneList read their sources from there. Each file is read
// once; a file that cannot be read is an error of the whole test.
func (e *env) loadCloneSources() error {
	seen := map[string]bool{}
	for _, r := range e.t.Results {
		if r.CloneSourceResource == "" || seen[r.CloneSourceResource] {
			continue
		}
		seen[r.CloneSourceResource] = true
		s := &loader.Set{}
		if err := s.ReadFile(e.path(r.CloneSourceResource)); err != nil {
			return fmt.Errorf("failed to load clone source resources: %w", err)
		}
		for _, d := range s.Resources {
			e.cluster.Add(d.Object)
		}
	}
	return nil
}
