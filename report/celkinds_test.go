package report

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

const celKindsPolicies = `
apiVersion: policies.kyverno.io/v1
kind: NamespacedValidatingPolicy
metadata:
  name: replicas
  namespace: shop
  annotations:
    policies.kyverno.io/category: Best Practices
    policies.kyverno.io/severity: high
spec:
  validationActions: [Deny]
  evaluation:
    background: {enabled: false}
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations:
  - expression: "object.spec.replicas <= 2"
    message: at most two replicas
  auditAnnotations:
  - {key: replicas, valueExpression: "string(object.spec.replicas)"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: vap-replicas
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations:
  - expression: "object.spec.replicas <= 3"
    message: at most three replicas
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: vap-replicas-binding
spec:
  policyName: vap-replicas
  validationActions: [Audit]
`

// TestCELKindEntries checks the entries of the CEL kinds: upstream's
// sources, the policy key of a namespaced kind, the rule name of a
// ValidatingAdmissionPolicy and its binding, audit annotations and the
// validation index as properties, the process, and --audit-warn.
func TestCELKindEntries(t *testing.T) {
	eng := newEngine(t)
	set, err := eng.Compile(readSet(t, celKindsPolicies).Policies...)
	if err != nil {
		t.Fatal(err)
	}
	obj := object(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: big, namespace: shop}\nspec: {replicas: 5}\n")
	resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	var got []api.PolicyReportResult
	for p, r := range resp.Rules() {
		got = append(got, result(*p, *r, Options{Clock: fixedClock}))
	}
	if len(got) != 2 {
		t.Fatalf("%d entries, want 2", len(got))
	}
	vp, vap := got[0], got[1]
	if vp.Source != SourceValidatingPolicy || vp.Policy != "shop/replicas" || vp.Rule != "" || vp.Result != api.ResultFail ||
		vp.Severity != "high" || vp.Properties["replicas"] != "5" || vp.Properties["cel.validationIndex"] != "0" ||
		vp.Properties[propertyProcess] != processAdmission {
		t.Errorf("ValidatingPolicy entry %+v", vp)
	}
	if vap.Source != SourceValidatingAdmissionPolicy || vap.Policy != "vap-replicas" || vap.Rule != "vap-replicas" ||
		vap.Properties["binding"] != "vap-replicas-binding" || vap.Properties[propertyProcess] != processBackground {
		t.Errorf("ValidatingAdmissionPolicy entry %+v", vap)
	}
	// upstream gives the CEL kinds no failure action: --audit-warn makes
	// every failure a warning, Deny or not
	for p, r := range resp.Rules() {
		if res := result(*p, *r, Options{AuditWarn: true}); res.Result != api.ResultWarn {
			t.Errorf("%s with --audit-warn: %s, want warn", p.Policy.Source().GetName(), res.Result)
		}
	}
	// the streaming encoder writes the same sources
	var buf bytes.Buffer
	if _, err := writeYAMLResults(&buf, resp.Policies, Options{Clock: fixedClock}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"source: KyvernoValidatingPolicy", "source: ValidatingAdmissionPolicy", "rule: vap-replicas"} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("the stream lacks %q:\n%s", w, buf.String())
		}
	}
}

// TestCELKindStoreKeys checks that the entries of the CEL kinds go to
// the report of their resource, as those of the other policies, each
// with its source.
func TestCELKindStoreKeys(t *testing.T) {
	eng := newEngine(t)
	set, err := eng.Compile(readSet(t, celKindsPolicies).Policies...)
	if err != nil {
		t.Fatal(err)
	}
	obj := object(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: small, namespace: shop, uid: u1}\nspec: {replicas: 1}\n")
	resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	st := NewStore(Options{Clock: fixedClock})
	if err := st.Update("u1", resp.Policies, false); err != nil {
		t.Fatal(err)
	}
	keys := st.Keys()
	if len(keys) != 1 || keys[0] != (ReportKey{Namespace: "shop", Name: "u1"}) {
		t.Fatalf("report keys %v, want shop/u1", keys)
	}
	rep, ok := st.Render(keys[0])
	if !ok {
		t.Fatal("no report")
	}
	var got []string
	for _, r := range rep.Results {
		got = append(got, r.Source+" "+r.Policy)
	}
	if want := "KyvernoValidatingPolicy shop/replicas,ValidatingAdmissionPolicy vap-replicas"; strings.Join(got, ",") != want {
		t.Errorf("entries %s, want %s", strings.Join(got, ","), want)
	}
	want := api.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "small", UID: "u1"}
	if rep.Scope == nil || *rep.Scope != want {
		t.Errorf("scope %+v, want %+v", rep.Scope, want)
	}
}

// TestImageValidatingPolicyEntries checks the entries of an
// ImageValidatingPolicy: upstream's source, the policy's name as the
// rule, the process.
func TestImageValidatingPolicyEntries(t *testing.T) {
	eng := newEngine(t)
	set, err := eng.Compile(readSet(t, `apiVersion: policies.kyverno.io/v1
kind: NamespacedImageValidatingPolicy
metadata:
  name: images
  namespace: shop
spec:
  evaluation:
    background: {enabled: false}
  validationConfigurations: {required: false, verifyDigest: false}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  matchImageReferences:
  - glob: ghcr.io/*
  validations:
  - expression: images.containers.size() == 0
    message: no ghcr.io images
`).Policies...)
	if err != nil {
		t.Fatal(err)
	}
	obj := object(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: shop}\nspec: {containers: [{name: c, image: ghcr.io/acme/app:v1}]}\n")
	resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	var got []api.PolicyReportResult
	for p, r := range resp.Rules() {
		got = append(got, result(*p, *r, Options{Clock: fixedClock}))
	}
	if len(got) != 1 {
		t.Fatalf("%d entries, want 1", len(got))
	}
	e := got[0]
	if e.Source != SourceImageValidatingPolicy || e.Policy != "shop/images" || e.Rule != "images" || e.Result != api.ResultFail ||
		e.Message != "no ghcr.io images" || e.Properties[propertyProcess] != processAdmission {
		t.Errorf("entry %+v", e)
	}
}

const mutatingKindsPolicies = `
apiVersion: policies.kyverno.io/v1
kind: NamespacedMutatingPolicy
metadata:
  name: stamp
  namespace: shop
  annotations:
    policies.kyverno.io/severity: low
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"stamped": "yes"}}}'
  auditAnnotations:
  - {key: replicas, valueExpression: "string(object.spec.replicas)"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: map-stamp
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: '[JSONPatch{op: "add", path: "/metadata/annotations", value: {"stamped": "yes"}}]'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: map-stamp-binding
spec:
  policyName: map-stamp
`

// TestMutatingKindEntries checks the entries of the CEL mutating kinds in
// a background scan (a policy that would change the resource fails):
// upstream's sources, the policy key, the rule name (none for a
// MutatingPolicy, the policy's for a MutatingAdmissionPolicy), the
// binding and audit annotations as properties, and the process.
func TestMutatingKindEntries(t *testing.T) {
	eng := newEngine(t)
	set, err := eng.Compile(readSet(t, mutatingKindsPolicies).Policies...)
	if err != nil {
		t.Fatal(err)
	}
	obj := object(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec: {replicas: 5}\n")
	resp, err := set.Scan(context.Background(), &engine.Request{Object: obj, Background: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []api.PolicyReportResult
	for p, r := range resp.Rules() {
		got = append(got, result(*p, *r, Options{Clock: fixedClock}))
	}
	if len(got) != 2 {
		t.Fatalf("%d entries, want 2", len(got))
	}
	mp, mpol := got[0], got[1]
	if mp.Source != SourceMutatingAdmissionPolicy || mp.Policy != "map-stamp" || mp.Rule != "map-stamp" || mp.Result != api.ResultFail ||
		mp.Message != "mutation is not applied" || mp.Properties["mapBinding"] != "map-stamp-binding" || mp.Properties["process"] != "background scan" {
		t.Errorf("MutatingAdmissionPolicy entry %+v", mp)
	}
	if mpol.Source != SourceMutatingPolicy || mpol.Policy != "shop/stamp" || mpol.Rule != "" || mpol.Result != api.ResultFail ||
		mpol.Message != "mutation is not applied" || mpol.Severity != "low" || mpol.Properties["process"] != "background scan" {
		t.Errorf("MutatingPolicy entry %+v", mpol)
	}
}

// TestGeneratingPolicyEntries checks the entry of a GeneratingPolicy:
// upstream's source and process (admission review, whatever the policy
// says), no rule name, the audit annotations as properties.
func TestGeneratingPolicyEntries(t *testing.T) {
	eng := newEngine(t)
	set, err := eng.Compile(readSet(t, `
apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: quota
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [namespaces]}
  auditAnnotations:
  - {key: target, valueExpression: "string(object.metadata.name)"}
  generate:
  - expression: 'generator.Apply(object.metadata.name, [{"kind": dyn("ResourceQuota"), "apiVersion": dyn("v1"), "metadata": dyn({"name": "q"})}])'
`).Policies...)
	if err != nil {
		t.Fatal(err)
	}
	obj := object(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n")
	resp, err := set.Generate(context.Background(), &engine.Request{Operation: api.Create, Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	var got []api.PolicyReportResult
	for p, r := range resp.Rules() {
		got = append(got, result(*p, *r, Options{Clock: fixedClock}))
	}
	if len(got) != 1 {
		t.Fatalf("%d entries, want 1", len(got))
	}
	e := got[0]
	if e.Source != SourceGeneratingPolicy || e.Policy != "quota" || e.Rule != "quota" || e.Result != api.ResultPass ||
		e.Properties[propertyProcess] != processAdmission || e.Properties["target"] != "team" {
		t.Errorf("GeneratingPolicy entry %+v", e)
	}
}

// TestMutatingPolicyStoreEntries checks that a Store keeps the results of
// MutatingPolicies (upstream's background scanner reports them: a fail
// for a resource the policy would change) in reports of their own, and
// not those of a ClusterPolicy's mutate rules.
func TestMutatingPolicyStoreEntries(t *testing.T) {
	eng := newEngine(t)
	policies := readSet(t, `apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: team}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'team': 'a'}}}"
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: team}
spec:
  rules:
  - name: label
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    mutate: {patchStrategicMerge: {metadata: {labels: {team: a}}}}
`).Policies
	// a ClusterPolicy would mutate first: each in a set of its own
	mpol, err := eng.Compile(policies[0])
	if err != nil {
		t.Fatal(err)
	}
	cpol, err := eng.Compile(policies[1])
	if err != nil {
		t.Fatal(err)
	}
	st := NewStore(Options{Clock: fixedClock})
	for _, tt := range []struct{ uid, labels string }{
		{"u1", "{}"},
		{"u2", "{team: a}"},
	} {
		obj := object(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+tt.uid+", namespace: shop, uid: "+tt.uid+", labels: "+tt.labels+"}\n")
		var res []engine.PolicyResult
		for _, set := range []*engine.PolicySet{mpol, cpol} {
			resp, err := set.Mutate(context.Background(), &engine.Request{Object: obj, Background: true})
			if err != nil {
				t.Fatal(err)
			}
			res = append(res, resp.Policies...)
		}
		if err := st.Update(tt.uid, res, true); err != nil {
			t.Fatal(err)
		}
	}
	reps := st.Reports()
	if len(reps) != 2 || reps[0].Name != "u1" || reps[1].Name != "u2" || reps[0].Namespace != "shop" {
		t.Fatalf("reports %+v, want shop/u1 and shop/u2", reps)
	}
	got := map[string]string{}
	for _, rep := range reps {
		for _, r := range rep.Results {
			if r.Source != SourceMutatingPolicy || r.Policy != "team" || len(rep.Results) != 1 {
				t.Errorf("entry %+v", r)
			}
			got[rep.Scope.UID] = string(r.Result) + ": " + r.Message
		}
	}
	if got["u1"] != "fail: mutation is not applied" || got["u2"] != "pass: success" {
		t.Errorf("entries %v", got)
	}
}
