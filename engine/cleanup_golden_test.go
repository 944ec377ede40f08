package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
)

// cleanupCaseInput is the optional input.yaml of a deleting policy case.
type cleanupCaseInput struct {
	// NamespaceLabels are the labels of the namespaces, by name.
	NamespaceLabels map[string]map[string]string `json:"namespaceLabels,omitempty"`
	// Cluster holds the objects of the in-memory cluster.
	Cluster []map[string]any `json:"cluster,omitempty"`
	// After is the time NextRun counts from (RFC 3339).
	After string `json:"after,omitempty"`
}

type cleanupCase struct {
	Policies []cleanupCasePolicy `json:"policies"`
	Results  []cleanupCaseResult `json:"results"`
}

type cleanupCasePolicy struct {
	Policy      string                 `json:"policy"`
	Kind        string                 `json:"kind"`
	NextRuns    []string               `json:"nextRuns,omitempty"`
	Propagation string                 `json:"propagation,omitempty"`
	Targets     []engine.CleanupTarget `json:"targets,omitempty"`
}

type cleanupCaseResult struct {
	Resource string         `json:"resource"`
	Rules    []gpolCaseRule `json:"rules,omitempty"`
}

// TestCleanupGolden runs every case under testdata/cleanup: policy.yaml
// (DeletingPolicies, cleanup policies, CEL PolicyExceptions),
// resource.yaml (existing objects) and an optional input.yaml; it records
// each policy's next runs, propagation and targets, and Cleanup's results
// on each object, compared with expected.yaml (-update rewrites it).
func TestCleanupGolden(t *testing.T) {
	goldenDirs(t, "testdata/cleanup/*", runCleanupCase)
}

func runCleanupCase(t *testing.T, dir string) cleanupCase {
	t.Helper()
	pset, err := loader.Load(filepath.Join(dir, "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rset, err := loader.Load(filepath.Join(dir, "resource.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var in cleanupCaseInput
	if raw, err := os.ReadFile(filepath.Join(dir, "input.yaml")); err == nil {
		if err := yaml.Unmarshal(raw, &in); err != nil {
			t.Fatal(err)
		}
	}
	after := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if in.After != "" {
		if after, err = time.Parse(time.RFC3339, in.After); err != nil {
			t.Fatal(err)
		}
	}
	excs, err := exceptions.Compile(pset.Exceptions, exceptions.CEL(pset.CELExceptions...))
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(
		engine.WithClient(inmem.New(in.Cluster...)),
		engine.WithClock(func() time.Time { return after }),
		engine.WithExceptions(excs),
	)
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(pset.Policies...)
	if err != nil {
		t.Fatal(err)
	}
	var out cleanupCase
	for _, p := range set.Policies() {
		cp := cleanupCasePolicy{Policy: p.Key(), Kind: api.KindOf(p.Source()), Propagation: p.DeletionPropagation(), Targets: p.CleanupTargets()}
		at := after
		for i := 0; i < 3; i++ {
			next, ok := p.NextRun(at)
			if !ok {
				break
			}
			cp.NextRuns = append(cp.NextRuns, next.Format(time.RFC3339))
			at = next
		}
		out.Policies = append(out.Policies, cp)
	}
	for _, d := range rset.Resources {
		req := &engine.Request{Object: d.Object}
		md, _ := d.Object["metadata"].(map[string]any)
		if ns, _ := md["namespace"].(string); ns != "" {
			req.NamespaceLabels = in.NamespaceLabels[ns]
			if req.NamespaceLabels == nil {
				req.NamespaceLabels = map[string]string{}
			}
		}
		resp, err := set.Cleanup(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		res := cleanupCaseResult{Resource: d.Kind() + "/" + d.Name()}
		for _, pr := range resp.Policies {
			for _, r := range pr.Rules {
				res.Rules = append(res.Rules, gpolCaseRule{Name: pr.Policy.Key() + ":" + r.Name, Type: string(r.Type), Status: string(r.Status),
					Message: r.Message, Exceptions: r.Exceptions})
			}
		}
		out.Results = append(out.Results, res)
	}
	return out
}
