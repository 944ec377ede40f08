package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/internal/conditions"
	"github.com/gavelpolicy/gavel/jmespath"
)

// rbFuzzTimeout bounds one fuzz input: evaluation that takes longer is
// reported as a hang.
const rbFuzzTimeout = 20 * time.Second

// rbZeroReader is a deterministic source of randomness.
type rbZeroReader struct{}

func (rbZeroReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i)
	}
	return len(p), nil
}

// rbFuzzEngine builds an engine with small limits whose hosts serve the
// given objects.
func rbFuzzEngine(tb testing.TB, excs *exceptions.Set, objs []map[string]any) *engine.Engine {
	cluster := inmem.New(append(objs, map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "default"},
		"data":     map[string]any{"key": "value", "list": "a,b"},
	})...)
	opts := []engine.Option{
		engine.WithClock(rbClock),
		engine.WithJMESPathOptions(jmespath.WithRandom(rbZeroReader{}), jmespath.WithMaxRandomLength(256)),
		engine.WithLimits(engine.Limits{MaxForeachElements: 64, MaxForeachDepth: 4, MaxContextBytes: 256 << 10, MaxSubstitutionDepth: 8}),
		engine.WithConfigMapResolver(cluster), engine.WithAPIClient(cluster), engine.WithNamespaceLabeler(cluster),
	}
	if excs != nil {
		opts = append(opts, engine.WithExceptions(excs))
	}
	eng, err := engine.New(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return eng
}

var rbStatuses = map[engine.Status]bool{engine.StatusPass: true, engine.StatusFail: true, engine.StatusWarn: true, engine.StatusError: true, engine.StatusSkip: true}

// rbCheckResponse checks the invariants of a response.
func rbCheckResponse(t *testing.T, what string, resp *engine.Response) {
	t.Helper()
	if resp == nil {
		t.Fatalf("%s: nil response without an error", what)
	}
	for _, p := range resp.Policies {
		for _, r := range p.Rules {
			if !rbStatuses[r.Status] || r.Name == "" {
				t.Fatalf("%s: bad rule result %+v", what, r)
			}
		}
	}
}

// FuzzEngine compiles fuzzed policies (seeds: policies and exceptions of
// the conformance corpus, under testdata/fuzz/FuzzEngine) and evaluates
// them on fuzzed resources with Validate and Mutate. Nothing may panic or
// hang; the caller's objects are not modified; rule results are well
// formed; a mutation's RFC 6902 patch, applied to the request object with
// the standard algorithm, gives the mutated resource.
func FuzzEngine(f *testing.F) {
	f.Add([]byte(rbNestedForeach(2)), []byte(rbPod))
	f.Add([]byte(rbConcurrentPolicies), []byte(rbPod))
	f.Add([]byte(rbHostilePolicies), []byte(strings.Replace(rbPod, "app: web", "app: \"{{ request.object.metadata.name }}\"", 1)))
	f.Add([]byte(fuzzImagePolicy), []byte(rbPod))
	f.Fuzz(func(t *testing.T, policyYAML, resourceYAML []byte) {
		if len(policyYAML) > 16<<10 || len(resourceYAML) > 16<<10 {
			return
		}
		docs, _ := api.ReadDocuments(bytes.NewReader(policyYAML), "policy.yaml")
		var policies []api.PolicyObject
		var excs []*api.PolicyException
		for _, d := range docs {
			switch o, _ := api.DecodeObject(d); o := o.(type) {
			case *api.PolicyException:
				excs = append(excs, o)
			case *api.CELPolicyException:
			case api.PolicyObject:
				policies = append(policies, o)
			}
		}
		resDocs, _ := api.ReadDocuments(bytes.NewReader(resourceYAML), "resource.yaml")
		if len(policies) == 0 || len(resDocs) == 0 {
			return
		}
		if len(resDocs) > 3 {
			resDocs = resDocs[:3]
		}
		var objs []map[string]any
		for _, d := range resDocs {
			objs = append(objs, d.Object)
		}
		xs, err := exceptions.Compile(excs)
		if err != nil {
			xs = nil
		}
		eng := rbFuzzEngine(t, xs, objs)
		var compiled []*engine.Policy
		for _, p := range policies {
			cp, err := eng.CompilePolicy(p)
			if err != nil {
				if err.Error() == "" {
					t.Fatalf("empty compile error")
				}
				continue
			}
			compiled = append(compiled, cp)
		}
		set := eng.NewPolicySet(compiled...)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for _, obj := range objs {
				for _, op := range []api.AdmissionOperation{api.Create, api.Update, api.Delete} {
					rbFuzzEvaluate(t, set, obj, op)
				}
			}
		}()
		select {
		case <-done:
		case <-time.After(rbFuzzTimeout):
			t.Fatalf("evaluation did not finish within %v", rbFuzzTimeout)
		}
	})
}

// rbFuzzEvaluate runs Validate and Mutate for one object and checks the
// invariants.
func rbFuzzEvaluate(t *testing.T, set *engine.PolicySet, obj map[string]any, op api.AdmissionOperation) {
	ctx, cancel := context.WithTimeout(context.Background(), rbFuzzTimeout)
	defer cancel()
	req := &engine.Request{Operation: op, Object: obj, UserInfo: api.UserInfoData{Username: "alice", Groups: []string{"dev"}}}
	switch op {
	case api.Update:
		req.OldObject = obj
	case api.Delete:
		req.Object, req.OldObject = nil, obj
	}
	before, _ := json.Marshal(obj)
	vresp, err := set.Validate(ctx, req)
	if err == nil {
		rbCheckResponse(t, "validate", vresp)
	}
	mresp, err := set.Mutate(ctx, req)
	if err == nil {
		rbCheckResponse(t, "mutate", mresp)
		rbCheckPatch(t, obj, mresp)
	}
	if after, _ := json.Marshal(obj); !bytes.Equal(before, after) {
		t.Fatalf("evaluation modified the request object")
	}
}

// rbCheckPatch applies the response patch to the object with the standard
// RFC 6902 algorithm and compares with the response resource.
func rbCheckPatch(t *testing.T, obj map[string]any, resp *engine.Response) {
	t.Helper()
	if resp.Patch == nil {
		return
	}
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		t.Fatalf("response patch does not decode: %v\n%s", err, resp.Patch)
	}
	orig, _ := json.Marshal(obj)
	patched, err := patch.Apply(orig)
	if err != nil {
		t.Fatalf("response patch does not apply: %v\npatch: %s\nobject: %s", err, resp.Patch, orig)
	}
	var got, want any
	_ = json.Unmarshal(patched, &got)
	raw, _ := json.Marshal(resp.Resource)
	_ = json.Unmarshal(raw, &want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("patch result differs from the response resource\npatch: %s\ngot:  %s\nwant: %s", resp.Patch, patched, raw)
	}
}

// rbConditionPolicy is a policy with one deny condition and the same
// condition as a precondition of a second rule.
func rbConditionPolicy(key any, op string, value any) *api.ClusterPolicy {
	cond := map[string]any{"key": key, "operator": op, "value": value}
	match := api.MatchResources{Any: api.ResourceFilters{{ResourceDescription: api.ResourceDescription{Kinds: []string{"Pod"}}}}}
	p := &api.ClusterPolicy{}
	p.APIVersion, p.Kind, p.Name = "kyverno.io/v1", "ClusterPolicy", "cond"
	p.Spec.Rules = []api.Rule{
		{Name: "deny", MatchResources: match, Validation: &api.Validation{Deny: &api.Deny{Conditions: map[string]any{"any": []any{cond}}}}},
		{Name: "pre", MatchResources: match, Preconditions: map[string]any{"all": []any{cond}},
			Validation: &api.Validation{Pattern: map[string]any{"metadata": map[string]any{"name": "?*"}}}},
	}
	return p
}

// FuzzConditionOperators evaluates fuzzed conditions (seeds: every
// operator, and conditions of the conformance corpus under
// testdata/fuzz/FuzzConditionOperators) through the engine, as a deny
// condition and as a precondition. An operator the conditions package
// refuses is a compile error; a condition without variables gives exactly
// the result of conditions.Evaluate; nothing panics.
func FuzzConditionOperators(f *testing.F) {
	for _, op := range append(conditions.OperatorNames(), "Equal", "NotEqual", "equals", "") {
		f.Add([]byte(`"{{ request.object.metadata.name }}"`), op, []byte(`"web"`))
		f.Add([]byte(`["a","b"]`), op, []byte(`["b","c"]`))
		f.Add([]byte(`"1h"`), op, []byte(`"30m"`))
		f.Add([]byte(`"2Gi"`), op, []byte(`1024`))
	}
	eng := rbFuzzEngine(f, nil, nil)
	pod := rbObject(f, rbPod)
	f.Fuzz(func(t *testing.T, keyJSON []byte, op string, valueJSON []byte) {
		if len(keyJSON) > 4096 || len(valueJSON) > 4096 {
			return
		}
		var key, value any
		if json.Unmarshal(keyJSON, &key) != nil || json.Unmarshal(valueJSON, &value) != nil {
			return
		}
		parsed, perr := conditions.ParseOperator(op)
		cp, err := eng.CompilePolicy(rbConditionPolicy(key, op, value))
		if perr != nil {
			if err == nil {
				t.Fatalf("operator %q refused by conditions but compiled", op)
			}
			return
		}
		if err != nil {
			// a key or value may hold an invalid expression
			if !strings.Contains(string(keyJSON)+string(valueJSON), "{{") && !strings.Contains(string(keyJSON)+string(valueJSON), "$(") {
				t.Fatalf("condition without variables did not compile: %v", err)
			}
			return
		}
		set := eng.NewPolicySet(cp)
		resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod})
		if err != nil {
			t.Fatal(err)
		}
		res := rbResults(resp)
		deny, pre := res["cond/deny"], res["cond/pre"]
		if !rbStatuses[deny.Status] || !rbStatuses[pre.Status] {
			t.Fatalf("bad results %+v %+v", deny, pre)
		}
		text := string(keyJSON) + string(valueJSON)
		if strings.Contains(text, "{{") || strings.Contains(text, "$(") || strings.Contains(text, `\\`) {
			return
		}
		holds, err := conditions.Evaluate(key, parsed, value)
		holds = holds && err == nil
		wantDeny, wantPre := engine.StatusPass, engine.StatusSkip
		if holds {
			wantDeny, wantPre = engine.StatusFail, engine.StatusPass
		}
		if deny.Status != wantDeny || pre.Status != wantPre {
			t.Fatalf("%s %s %s: conditions.Evaluate = %v, engine deny %s (%s), precondition rule %s (%s)",
				keyJSON, op, valueJSON, holds, deny.Status, deny.Message, pre.Status, pre.Message)
		}
	})
}

// TestFuzzSeedCorpora checks that the seed corpora the fuzz targets run in
// every go test are present.
func TestFuzzSeedCorpora(t *testing.T) {
	for _, dir := range []string{"FuzzEngine", "FuzzConditionOperators"} {
		entries, err := filepath.Glob(filepath.Join("testdata", "fuzz", dir, "*"))
		if err != nil || len(entries) < 20 {
			t.Errorf("seed corpus of %s: %d files, %v", dir, len(entries), err)
		}
	}
}

// fuzzImagePolicy is an ImageValidatingPolicy seed: images, attestors with
// expressions, attestations, the image functions.
const fuzzImagePolicy = `apiVersion: policies.kyverno.io/v1
kind: ImageValidatingPolicy
metadata:
  name: iv
spec:
  validationConfigurations: {verifyDigest: false}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}
  matchImageReferences:
  - glob: "*"
  - expression: image(ref).registry() != ''
  images:
  - name: labels
    expression: "has(object.metadata.labels) ? object.metadata.labels.map(k, k) : []"
  attestors:
  - name: a
    cosign:
      key:
        expression: "object.metadata.name"
  - name: n
    notary:
      certs:
        expression: "string(object.metadata.labels)"
  attestations:
  - name: sbom
    referrer: {type: sbom}
  validations:
  - expression: images.containers.all(i, verifyImageSignatures(i, [attestors.a]) > 0)
  - expression: images.containers.all(i, verifyAttestationSignatures(i, attestations.sbom, [attestors.n]) > 0)
  - expression: images.containers.all(i, extractPayload(i, attestations.sbom) != null && getImageData(i) != null)
`
