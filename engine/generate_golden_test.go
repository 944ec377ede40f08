package engine_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
)

var updateGenerateGolden = flag.Bool("update-generate-golden", false, "rewrite testdata/generate/*/golden.yaml")

// genCase is the optional case.yaml of a testdata/generate case.
type genCase struct {
	// Operation of the request (CREATE by default).
	Operation api.AdmissionOperation `json:"operation,omitempty"`
	// Admission configures an UpdateRequestQueue (admission mode).
	Admission bool `json:"admission,omitempty"`
	// NoClient leaves the engine without a cluster client.
	NoClient bool `json:"noClient,omitempty"`
	// Call is "generate" (default) or "mutate".
	Call         string   `json:"call,omitempty"`
	Username     string   `json:"username,omitempty"`
	Roles        []string `json:"roles,omitempty"`
	ClusterRoles []string `json:"clusterRoles,omitempty"`
}

// genGolden is what a case produces.
type genGolden struct {
	Rules          []genGoldenRule      `json:"rules"`
	UpdateRequests []*api.UpdateRequest `json:"updateRequests,omitempty"`
	Queued         int                  `json:"queued,omitempty"`
}

type genGoldenRule struct {
	Policy             string           `json:"policy"`
	Name               string           `json:"name"`
	Type               engine.RuleType  `json:"type"`
	Status             engine.Status    `json:"status"`
	Message            string           `json:"message,omitempty"`
	GeneratedResources []map[string]any `json:"generatedResources,omitempty"`
	PatchedTargets     []map[string]any `json:"patchedTargets,omitempty"`
}

type genQueue struct{ urs []*api.UpdateRequest }

func (q *genQueue) Enqueue(_ context.Context, ur *api.UpdateRequest) error {
	q.urs = append(q.urs, ur)
	return nil
}

func genReadObjects(t *testing.T, file string) []map[string]any {
	t.Helper()
	if _, err := os.Stat(file); os.IsNotExist(err) {
		return nil
	}
	s, err := loader.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, d := range s.Resources {
		out = append(out, d.Object)
	}
	return out
}

// TestGenerateGolden runs every case of testdata/generate: policy.yaml,
// resource.yaml (the trigger), optional old.yaml (old object),
// cluster.yaml (objects in the cluster) and case.yaml, and compares the
// results with golden.yaml (rewritten with -update-generate-golden).
func TestGenerateGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/generate/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var c genCase
			if raw, err := os.ReadFile(filepath.Join(dir, "case.yaml")); err == nil {
				if err := yaml.UnmarshalStrict(raw, &c); err != nil {
					t.Fatal(err)
				}
			}
			pset, err := loader.Load(filepath.Join(dir, "policy.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			trigger := genReadObjects(t, filepath.Join(dir, "resource.yaml"))[0]
			var old map[string]any
			if objs := genReadObjects(t, filepath.Join(dir, "old.yaml")); len(objs) > 0 {
				old = objs[0]
			}
			cluster := inmem.New(genReadObjects(t, filepath.Join(dir, "cluster.yaml"))...)
			cluster.Add(trigger)
			q := &genQueue{}
			var opts []engine.Option
			if !c.NoClient {
				opts = append(opts, engine.WithClient(cluster))
			}
			if c.Admission {
				opts = append(opts, engine.WithUpdateRequestQueue(q))
			}
			eng, err := engine.New(opts...)
			if err != nil {
				t.Fatal(err)
			}
			set, err := eng.Compile(pset.Policies...)
			if err != nil {
				t.Fatal(err)
			}
			req := &engine.Request{Operation: c.Operation, Roles: c.Roles, ClusterRoles: c.ClusterRoles,
				UserInfo: api.UserInfoData{Username: c.Username}}
			switch c.Operation {
			case api.Delete:
				req.OldObject = trigger
			case api.Update:
				req.Object, req.OldObject = trigger, old
			default:
				req.Object = trigger
			}
			var resp *engine.Response
			if c.Call == "mutate" {
				resp, err = set.Mutate(context.Background(), req)
			} else {
				resp, err = set.Generate(context.Background(), req)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := genGolden{UpdateRequests: resp.UpdateRequests, Queued: len(q.urs), Rules: []genGoldenRule{}}
			for _, pr := range resp.Policies {
				for _, rr := range pr.Rules {
					got.Rules = append(got.Rules, genGoldenRule{Policy: pr.Policy.Key(), Name: rr.Name, Type: rr.Type, Status: rr.Status,
						Message: rr.Message, GeneratedResources: rr.GeneratedResources, PatchedTargets: rr.PatchedTargets})
				}
			}
			raw, err := yaml.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "golden.yaml")
			if *updateGenerateGolden {
				if err := os.WriteFile(file, raw, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run with -update-generate-golden)", err)
			}
			if !bytes.Equal(raw, want) {
				t.Errorf("results differ from %s:\n--- got\n%s\n--- want\n%s", file, raw, want)
			}
		})
	}
}
