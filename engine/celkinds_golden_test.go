package engine_test

import (
	"context"
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

// celCaseInput is the optional input.yaml of a CEL kinds case.
type celCaseInput struct {
	Operation  api.AdmissionOperation `json:"operation,omitempty"`
	Background bool                   `json:"background,omitempty"`
	// NamespaceLabels are the labels of the resources' namespace.
	NamespaceLabels map[string]string `json:"namespaceLabels,omitempty"`
	// NamespaceObject is the Request's NamespaceObject.
	NamespaceObject map[string]any `json:"namespaceObject,omitempty"`
	// Cluster holds the objects of the in-memory cluster (parameter
	// objects, Namespaces).
	Cluster []map[string]any `json:"cluster,omitempty"`
	// Payloads are JSON payloads given to ValidatePayload.
	Payloads []map[string]any `json:"payloads,omitempty"`
	// Now is the clock (RFC 3339), for expiring exceptions.
	Now string `json:"now,omitempty"`
	// Images are the registry of ImageValidatingPolicies' verifier (a
	// fake: see ivFake).
	Images *ivFakeInput `json:"images,omitempty"`
}

// ivFakeInput is the table of an ivFake: digests by tag reference, the
// identities that signed each image (by digest), attestations by image,
// identity and type, and whether the registry is down.
type ivFakeInput struct {
	Digests  map[string]string                    `json:"digests,omitempty"`
	Signed   map[string][]string                  `json:"signed,omitempty"`
	Attested map[string]map[string]map[string]any `json:"attested,omitempty"`
	Down     bool                                 `json:"down,omitempty"`
}

// celCaseResult is what a CEL kinds case records for one resource.
type celCaseResult struct {
	Resource string          `json:"resource"`
	Policies []celCasePolicy `json:"policies,omitempty"`
	Blocked  bool            `json:"blocked"`
	// Allowed, Message and Warnings are the admission response's.
	Allowed  bool     `json:"allowed"`
	Message  string   `json:"message,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

type celCasePolicy struct {
	Policy         string        `json:"policy"`
	Kind           string        `json:"kind"`
	FailureAction  string        `json:"failureAction"`
	FailurePolicy  string        `json:"failurePolicy"`
	TimeoutSeconds int32         `json:"timeoutSeconds,omitempty"`
	Background     bool          `json:"background"`
	Admission      bool          `json:"admission"`
	Rules          []celCaseRule `json:"rules,omitempty"`
}

type celCaseRule struct {
	Name        string            `json:"name"`
	Status      string            `json:"status"`
	Message     string            `json:"message"`
	Exceptions  []string          `json:"exceptions,omitempty"`
	Properties  map[string]string `json:"properties,omitempty"`
	EmitWarning bool              `json:"emitWarning,omitempty"`
}

// TestCELKindsGolden runs every case under testdata/celkinds:
// policy.yaml (ValidatingPolicies, ValidatingAdmissionPolicies, bindings,
// ImageValidatingPolicies, CEL PolicyExceptions), resource.yaml and an
// optional input.yaml (with the images of a fake verifier); each
// resource is validated and answered as an admission request, each
// payload validated as a JSON payload, and the results are compared with
// expected.yaml (-update rewrites it).
func TestCELKindsGolden(t *testing.T) {
	goldenDirs(t, "testdata/celkinds/*", runCELCase)
}

func runCELCase(t *testing.T, dir string) []celCaseResult {
	t.Helper()
	pset, err := loader.Load(filepath.Join(dir, "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rset *loader.Set
	if _, err := os.Stat(filepath.Join(dir, "resource.yaml")); err == nil {
		if rset, err = loader.Load(filepath.Join(dir, "resource.yaml")); err != nil {
			t.Fatal(err)
		}
	} else {
		rset = &loader.Set{}
	}
	var in celCaseInput
	if raw, err := os.ReadFile(filepath.Join(dir, "input.yaml")); err == nil {
		if err := yaml.Unmarshal(raw, &in); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if in.Now != "" {
		if now, err = time.Parse(time.RFC3339, in.Now); err != nil {
			t.Fatal(err)
		}
	}
	excs, err := exceptions.Compile(pset.Exceptions, exceptions.CEL(pset.CELExceptions...))
	if err != nil {
		t.Fatal(err)
	}
	opts := []engine.Option{
		engine.WithClient(inmem.New(in.Cluster...)),
		engine.WithClock(func() time.Time { return now }),
		engine.WithExceptions(excs),
	}
	if im := in.Images; im != nil {
		f := newIVFake()
		f.digests, f.signed, f.down = im.Digests, im.Signed, im.Down
		if im.Attested != nil {
			f.attested = im.Attested
		}
		opts = append(opts, engine.WithImageVerifier(f))
	}
	eng, err := engine.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(pset.Policies...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var out []celCaseResult
	for _, d := range rset.Resources {
		req := &engine.Request{Operation: in.Operation, Object: d.Object, Background: in.Background,
			NamespaceLabels: in.NamespaceLabels, NamespaceObject: in.NamespaceObject}
		if in.Operation == api.Delete {
			req.Object, req.OldObject = nil, d.Object
		}
		if in.Operation == api.Update {
			req.OldObject = d.Object
		}
		resp, err := set.Validate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		res := celResult(d.Kind()+"/"+d.Name(), resp)
		ar := admission.ValidateResponse(&admissionv1.AdmissionRequest{UID: "1", Object: runtime.RawExtension{}}, resp, nil)
		res.Allowed, res.Warnings = ar.Allowed, ar.Warnings
		if ar.Result != nil {
			res.Message = ar.Result.Message
		}
		out = append(out, res)
	}
	for i, pl := range in.Payloads {
		resp, err := set.ValidatePayload(ctx, pl)
		if err != nil {
			t.Fatal(err)
		}
		res := celResult("payload "+string(rune('0'+i)), resp)
		res.Allowed = !res.Blocked
		out = append(out, res)
	}
	return out
}

func celResult(name string, resp *engine.Response) celCaseResult {
	res := celCaseResult{Resource: name, Blocked: resp.Blocked()}
	for _, p := range resp.Policies {
		cp := celCasePolicy{Policy: p.Policy.Key(), Kind: api.KindOf(p.Policy.Source()), FailureAction: string(p.FailureAction),
			FailurePolicy: string(p.Policy.FailurePolicy()), Background: p.Policy.Background(), Admission: p.Policy.Admission()}
		cp.TimeoutSeconds, _ = p.Policy.TimeoutSeconds()
		for _, r := range p.Rules {
			cp.Rules = append(cp.Rules, celCaseRule{Name: r.Name, Status: string(r.Status), Message: r.Message,
				Exceptions: r.Exceptions, Properties: r.Properties, EmitWarning: r.EmitWarning})
		}
		res.Policies = append(res.Policies, cp)
	}
	return res
}
