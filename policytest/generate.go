package policytest

import (
	"fmt"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
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
		s, err := loadFiles(e.path(r.CloneSourceResource))
		if err != nil {
			return fmt.Errorf("failed to load clone source resources: %w", err)
		}
		for _, d := range s.Resources {
			e.cluster.Add(d.Object)
		}
	}
	return nil
}

// cliGenerated is a generated resource as upstream's CLI compares it: a
// GeneratingPolicy's generator runs in a CLI mode that writes no
// annotations (the tracking labels are dropped by the comparison for
// every kind).
func cliGenerated(p *engine.Policy, obj map[string]any) map[string]any {
	if k := api.KindOf(p.Source()); k != api.KindGeneratingPolicy && k != api.KindNamespacedGeneratingPolicy {
		return obj
	}
	md, _ := obj["metadata"].(map[string]any)
	if _, ok := md["annotations"]; !ok {
		return obj
	}
	out := copyMap(obj)
	md = copyMap(md)
	delete(md, "annotations")
	out["metadata"] = md
	return out
}
