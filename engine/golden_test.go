package engine_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
)

var update = flag.Bool("update", false, "rewrite golden files")

// caseRequest is the optional request.yaml of a golden case.
type caseRequest struct {
	Operation    api.AdmissionOperation `json:"operation,omitempty"`
	OldObject    map[string]any         `json:"oldObject,omitempty"`
	Username     string                 `json:"username,omitempty"`
	Groups       []string               `json:"groups,omitempty"`
	Roles        []string               `json:"roles,omitempty"`
	ClusterRoles []string               `json:"clusterRoles,omitempty"`
	Background   bool                   `json:"background,omitempty"`
	// NamespaceLabels are the labels of the resource's namespace.
	NamespaceLabels map[string]string `json:"namespaceLabels,omitempty"`
	// Cluster holds objects of the in-memory cluster (ConfigMaps...).
	Cluster []map[string]any `json:"cluster,omitempty"`
	// Registry maps image references to image data.
	Registry map[string]map[string]any `json:"registry,omitempty"`
	// Services maps service URLs to response bodies.
	Services map[string]any `json:"services,omitempty"`
	// Global holds global context entries.
	Global map[string]any `json:"global,omitempty"`
}

// caseResult is what a golden case records.
type caseResult struct {
	Resource string           `json:"resource"`
	Policies []casePolicy     `json:"policies"`
	Patched  map[string]any   `json:"patched,omitempty"`
	Patch    []map[string]any `json:"patch,omitempty"`
	Blocked  bool             `json:"blocked,omitempty"`
}

type casePolicy struct {
	Policy        string     `json:"policy"`
	FailureAction string     `json:"failureAction"`
	Rules         []caseRule `json:"rules,omitempty"`
}

type caseRule struct {
	Name       string   `json:"name"`
	Type       string   `json:"type"`
	Status     string   `json:"status"`
	Message    string   `json:"message"`
	Exceptions []string `json:"exceptions,omitempty"`
}

// TestGolden runs every case under testdata/cases: policy.yaml (policies
// and exceptions), resource.yaml (one or more resources), optional
// request.yaml; the mutate and validate results are compared with
// expected.yaml (go test ./engine -run TestGolden -update rewrites them).
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/cases/*")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no golden cases")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got := runCase(t, dir)
			file := filepath.Join(dir, "expected.yaml")
			if *update {
				raw, err := yaml.Marshal(got)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, raw, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var want []caseResult
			if err := yaml.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			gotRaw, _ := yaml.Marshal(got)
			var gotNorm []caseResult
			if err := yaml.Unmarshal(gotRaw, &gotNorm); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotNorm, want) {
				t.Errorf("results differ from %s\n--- got\n%s", file, gotRaw)
			}
		})
	}
}

func runCase(t *testing.T, dir string) []caseResult {
	t.Helper()
	pset, err := loader.Load(filepath.Join(dir, "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rset, err := loader.Load(filepath.Join(dir, "resource.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cr caseRequest
	if raw, err := os.ReadFile(filepath.Join(dir, "request.yaml")); err == nil {
		if err := yaml.Unmarshal(raw, &cr); err != nil {
			t.Fatal(err)
		}
	}
	excs, err := exceptions.Compile(pset.Exceptions)
	if err != nil {
		t.Fatal(err)
	}
	cluster := inmem.New(cr.Cluster...)
	registry := inmem.NewRegistry()
	for ref, d := range cr.Registry {
		registry.Set(ref, d)
	}
	services := inmem.NewHTTP()
	for url, body := range cr.Services {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		services.Handle("", url, func(cel.HTTPRequest) (cel.HTTPResponse, error) {
			return cel.HTTPResponse{StatusCode: 200, Body: data}, nil
		})
	}
	global := inmem.NewGlobalContext()
	for k, v := range cr.Global {
		global.Set(k, v)
	}
	eng, err := engine.New(
		engine.WithRegistryClient(registry),
		engine.WithServiceCaller(services),
		engine.WithGlobalContext(global),
		engine.WithClock(func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }),
		engine.WithExceptions(excs),
		engine.WithConfigMapResolver(cluster),
		engine.WithAPIClient(cluster),
	)
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(pset.Policies...)
	if err != nil {
		t.Fatal(err)
	}
	var out []caseResult
	for _, d := range rset.Resources {
		req := &engine.Request{
			Operation:       cr.Operation,
			Object:          d.Object,
			OldObject:       cr.OldObject,
			UserInfo:        api.UserInfoData{Username: cr.Username, Groups: cr.Groups},
			Roles:           cr.Roles,
			ClusterRoles:    cr.ClusterRoles,
			Background:      cr.Background,
			NamespaceLabels: cr.NamespaceLabels,
		}
		if cr.Operation == api.Delete {
			req.Object, req.OldObject = nil, d.Object
		}
		ctx := context.Background()
		m, err := set.Mutate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		res := caseResult{Resource: d.Kind() + "/" + d.Name()}
		addPolicies(&res, m)
		if m.Patch != nil {
			res.Patched = m.Resource
			if err := yaml.Unmarshal(m.Patch, &res.Patch); err != nil {
				t.Fatal(err)
			}
		}
		vreq := *req
		if vreq.Object != nil {
			vreq.Object = m.Resource
		}
		v, err := set.Validate(ctx, &vreq)
		if err != nil {
			t.Fatal(err)
		}
		addPolicies(&res, v)
		res.Blocked = v.Blocked()
		out = append(out, res)
	}
	return out
}

func addPolicies(res *caseResult, r *engine.Response) {
	for _, p := range r.Policies {
		cp := casePolicy{Policy: p.Policy.Key(), FailureAction: string(p.FailureAction)}
		for _, rr := range p.Rules {
			cp.Rules = append(cp.Rules, caseRule{Name: rr.Name, Type: string(rr.Type), Status: string(rr.Status), Message: rr.Message, Exceptions: rr.Exceptions})
		}
		res.Policies = append(res.Policies, cp)
	}
}
