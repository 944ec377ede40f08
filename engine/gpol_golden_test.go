package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/generate"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
)

// gpolCaseInput is the optional input.yaml of a GeneratingPolicy case.
type gpolCaseInput struct {
	Operation api.AdmissionOperation `json:"operation,omitempty"`
	// Admission evaluates the resources as admission requests (an
	// UpdateRequest queue is configured): the case records the requests.
	Admission bool `json:"admission,omitempty"`
	DryRun    bool `json:"dryRun,omitempty"`
	// Cluster holds the objects of the in-memory cluster (clone sources).
	Cluster  []map[string]any `json:"cluster,omitempty"`
	UserInfo api.UserInfoData `json:"userInfo,omitempty"`
}

// gpolCaseResult is what a case records for one resource.
type gpolCaseResult struct {
	Resource       string           `json:"resource"`
	Policies       []gpolCasePolicy `json:"policies,omitempty"`
	UpdateRequests []gpolCaseUR     `json:"updateRequests,omitempty"`
}

type gpolCasePolicy struct {
	Policy string         `json:"policy"`
	Kind   string         `json:"kind"`
	Rules  []gpolCaseRule `json:"rules,omitempty"`
}

type gpolCaseRule struct {
	Name       string            `json:"name"`
	Type       string            `json:"type"`
	Status     string            `json:"status"`
	Message    string            `json:"message"`
	Exceptions []string          `json:"exceptions,omitempty"`
	Properties map[string]string `json:"properties,omitempty"`
	Generated  []map[string]any  `json:"generated,omitempty"`
}

type gpolCaseUR struct {
	Type   string                 `json:"type"`
	Policy string                 `json:"policy"`
	Labels map[string]string      `json:"labels,omitempty"`
	Rules  []api.RuleContext      `json:"rules"`
	Op     api.AdmissionOperation `json:"operation,omitempty"`
}

// TestGeneratingPolicyGolden runs every case under testdata/gpol:
// policy.yaml (GeneratingPolicies, CEL PolicyExceptions), resource.yaml
// (the triggers) and an optional input.yaml; each trigger goes through
// Generate, and the results (rules, generated objects, UpdateRequests) are
// compared with expected.yaml (-update rewrites it).
func TestGeneratingPolicyGolden(t *testing.T) {
	goldenDirs(t, "testdata/gpol/*", runGpolCase)
}

func runGpolCase(t *testing.T, dir string) []gpolCaseResult {
	t.Helper()
	pset, err := loader.Load(filepath.Join(dir, "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rset, err := loader.Load(filepath.Join(dir, "resource.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var in gpolCaseInput
	if raw, err := os.ReadFile(filepath.Join(dir, "input.yaml")); err == nil {
		if err := yaml.Unmarshal(raw, &in); err != nil {
			t.Fatal(err)
		}
	}
	excs, err := exceptions.Compile(pset.Exceptions, exceptions.CEL(pset.CELExceptions...))
	if err != nil {
		t.Fatal(err)
	}
	opts := []engine.Option{
		engine.WithClient(inmem.New(in.Cluster...)),
		engine.WithClock(func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }),
		engine.WithExceptions(excs),
	}
	if in.Admission {
		opts = append(opts, engine.WithUpdateRequestQueue(generate.NewMemoryQueue(16)))
	}
	eng, err := engine.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(pset.Policies...)
	if err != nil {
		t.Fatal(err)
	}
	var out []gpolCaseResult
	for _, d := range rset.Resources {
		req := &engine.Request{Operation: in.Operation, Object: d.Object, DryRun: in.DryRun, UserInfo: in.UserInfo}
		switch in.Operation {
		case api.Delete:
			req.Object, req.OldObject = nil, d.Object
		case api.Update:
			req.OldObject = d.Object
		}
		resp, err := set.Generate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, gpolResult(d.Kind()+"/"+d.Name(), resp))
	}
	return out
}

func gpolResult(name string, resp *engine.Response) gpolCaseResult {
	res := gpolCaseResult{Resource: name}
	for _, p := range resp.Policies {
		cp := gpolCasePolicy{Policy: p.Policy.Key(), Kind: api.KindOf(p.Policy.Source())}
		for _, r := range p.Rules {
			gen := append([]map[string]any(nil), r.GeneratedResources...)
			sort.SliceStable(gen, func(i, j int) bool { return objKey(gen[i]) < objKey(gen[j]) })
			cp.Rules = append(cp.Rules, gpolCaseRule{Name: r.Name, Type: string(r.Type), Status: string(r.Status), Message: r.Message,
				Exceptions: r.Exceptions, Properties: r.Properties, Generated: gen})
		}
		res.Policies = append(res.Policies, cp)
	}
	for _, ur := range resp.UpdateRequests {
		res.UpdateRequests = append(res.UpdateRequests, gpolCaseUR{Type: string(ur.Spec.Type), Policy: ur.Spec.Policy,
			Labels: ur.Labels, Rules: ur.Spec.RuleContext, Op: ur.Spec.Context.AdmissionRequestInfo.Operation})
	}
	return res
}

func objKey(o map[string]any) string {
	md, _ := o["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	n, _ := md["name"].(string)
	k, _ := o["kind"].(string)
	return k + "/" + ns + "/" + n
}
