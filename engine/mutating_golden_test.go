package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/admission"
	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
)

// mutCaseResult is what a mutating case records for one resource: the
// policies' results, the mutated object and the admission answer.
type mutCaseResult struct {
	Resource string          `json:"resource"`
	Policies []celCasePolicy `json:"policies,omitempty"`
	Blocked  bool            `json:"blocked"`
	// Object is the object after the mutations, when they changed it.
	Object map[string]any `json:"object,omitempty"`
	// Patch is the response's RFC 6902 patch.
	Patch any `json:"patch,omitempty"`
	// Allowed and Message are the admission response's.
	Allowed  bool     `json:"allowed"`
	Message  string   `json:"message,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// TestMutatingKindsGolden runs every case under testdata/mutating:
// policy.yaml (MutatingPolicies, MutatingAdmissionPolicies, bindings,
// ClusterPolicies, CEL PolicyExceptions), resource.yaml and an optional
// input.yaml (as for the CEL kinds' cases); each resource is mutated and
// answered as an admission request, and the results are compared with
// expected.yaml (-update rewrites it).
func TestMutatingKindsGolden(t *testing.T) {
	goldenDirs(t, "testdata/mutating/*", runMutatingCase)
}

func runMutatingCase(t *testing.T, dir string) []mutCaseResult {
	t.Helper()
	pset, err := loader.Load(filepath.Join(dir, "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rset, err := loader.Load(filepath.Join(dir, "resource.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var in celCaseInput
	if raw, err := os.ReadFile(filepath.Join(dir, "input.yaml")); err == nil {
		if err := yaml.Unmarshal(raw, &in); err != nil {
			t.Fatal(err)
		}
	}
	excs, err := exceptions.Compile(pset.Exceptions, exceptions.CEL(pset.CELExceptions...))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	eng, err := engine.New(
		engine.WithClient(inmem.New(in.Cluster...)),
		engine.WithClock(func() time.Time { return now }),
		engine.WithExceptions(excs),
	)
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(pset.Policies...)
	if err != nil {
		t.Fatal(err)
	}
	var out []mutCaseResult
	for _, d := range rset.Resources {
		req := &engine.Request{Operation: in.Operation, Object: d.Object, Background: in.Background,
			NamespaceLabels: in.NamespaceLabels, NamespaceObject: in.NamespaceObject}
		if in.Operation == api.Update {
			req.OldObject = d.Object
		}
		resp, err := set.Mutate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		cr := celResult(d.Kind()+"/"+d.Name(), resp)
		res := mutCaseResult{Resource: cr.Resource, Policies: cr.Policies, Blocked: cr.Blocked}
		if len(resp.Patch) > 0 {
			res.Object = resp.Resource
			if err := json.Unmarshal(resp.Patch, &res.Patch); err != nil {
				t.Fatal(err)
			}
		}
		ar := admission.MutateResponse(&admissionv1.AdmissionRequest{UID: "1", Object: runtime.RawExtension{}}, resp, nil)
		res.Allowed, res.Warnings = ar.Allowed, ar.Warnings
		if ar.Result != nil {
			res.Message = ar.Result.Message
		}
		out = append(out, res)
	}
	return out
}
