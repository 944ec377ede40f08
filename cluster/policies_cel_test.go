package cluster

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// objectOf decodes a YAML object, with generation 1 (written through the
// API server).
func objectOf(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetGeneration() == 0 {
		u.SetGeneration(1)
	}
	return u
}

// requireOwner is a ValidatingPolicy denying Pods without an owner label,
// of the name of the ClusterPolicy requireLabel("need-team", ...); broken
// makes its expression fail to compile.
func requireOwner(t *testing.T, broken bool) *unstructured.Unstructured {
	expr := "has(object.metadata.labels) && 'owner' in object.metadata.labels"
	if broken {
		expr = "object.metadata.labels.owner +"
	}
	return objectOf(t, `apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: need-team, uid: vpol-1}
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "`+expr+`"
    message: owner label required
`)
}

var celSourceObjects = []string{`apiVersion: policies.kyverno.io/v1
kind: NamespacedValidatingPolicy
metadata: {name: replicas, namespace: shop}
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations:
  - expression: "object.spec.replicas <= 3"
`, `apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: add-team}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'team': 'a'}}}"
`, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: vap-limit}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations:
  - expression: "object.spec.replicas <= 2"
    message: at most two replicas
`, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: vap-limit}
spec:
  policyName: vap-limit
  validationActions: [Deny]
`, `apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata: {name: exempt, namespace: default}
spec:
  policyRefs:
  - {name: need-team, kind: ValidatingPolicy}
  matchConditions:
  - {name: exempt, expression: "object.metadata.name == 'exempt'"}
`}

func ids(set *engine.PolicySet) string {
	var out []string
	for _, p := range set.Policies() {
		out = append(out, idOf(p))
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// deniedBy returns the policies that deny a Pod of that name and labels.
func deniedBy(t *testing.T, set *engine.PolicySet, name string, labels map[string]any) string {
	t.Helper()
	obj := pod(labels)
	obj["metadata"].(map[string]any)["name"] = name
	resp, err := set.Validate(t.Context(), &engine.Request{Operation: api.Create, Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, pr := range resp.Policies {
		if pr.Blocks() {
			out = append(out, idOf(pr.Policy))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// The policy source watches every kind the engine evaluates, in one set:
// a ValidatingPolicy beside the ClusterPolicy of its name, CEL
// PolicyExceptions, the API server's kinds in the background set only.
func TestPolicySourceCELKinds(t *testing.T) {
	objs := []runtime.Object{requireLabel("need-team", "team", false), requireOwner(t, false)}
	for _, text := range celSourceObjects {
		objs = append(objs, objectOf(t, text))
	}
	var src *PolicySource
	fakeHost(t, nil, objs, func(h *Host) {
		var err error
		if src, err = NewPolicySource(h, PolicySourceOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	want := "MutatingPolicy.add-team,NamespacedValidatingPolicy.shop/replicas,ValidatingAdmissionPolicy.vap-limit,ValidatingPolicy.need-team,need-team"
	eventually(t, "the policies", func() bool { return ids(src.Set()) == want })
	if errs := src.Errors(); len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
	if got := ids(src.WebhookSet("", "")); got != "MutatingPolicy.add-team,NamespacedValidatingPolicy.shop/replicas,ValidatingPolicy.need-team,need-team" {
		t.Errorf("webhooks serve %s: the API server's kinds are its own", got)
	}
	if got := ids(src.WebhookSet(api.Fail, "")); got != "MutatingPolicy.add-team,ValidatingPolicy.need-team,need-team" {
		t.Errorf("the shared webhook serves %s", got)
	}
	ns := webhookGroup(src.WebhookSet("", "").Policies()[1])
	if got := ids(src.WebhookSet(api.Fail, ns.key)); !strings.HasPrefix(ns.key, selectorsPrefix) || got != "NamespacedValidatingPolicy.shop/replicas" {
		t.Errorf("the namespaced policy's webhook %q serves %s", ns.key, got)
	}
	fail := src.WebhookSet(api.Fail, "")
	if got := deniedBy(t, fail, "p", nil); got != "ValidatingPolicy.need-team,need-team" {
		t.Errorf("an unlabelled Pod is denied by %q", got)
	}
	if got := deniedBy(t, fail, "p", map[string]any{"team": "a", "owner": "b"}); got != "" {
		t.Errorf("a labelled Pod is denied by %q", got)
	}
	// the CEL PolicyException of the host
	if got := deniedBy(t, fail, "exempt", map[string]any{"team": "a"}); got != "" {
		t.Errorf("the excepted Pod is denied by %q", got)
	}
	// the background set evaluates the ValidatingAdmissionPolicy
	dep := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "d", "namespace": "default", "uid": "d1"}, "spec": map[string]any{"replicas": int64(5)}}
	resp, err := src.Set().Validate(t.Context(), &engine.Request{Object: dep, Background: true})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for p, r := range resp.Rules() {
		found = found || (api.KindOf(p.Policy.Source()) == api.KindValidatingAdmissionPolicy && r.Status == engine.StatusFail)
	}
	if !found {
		t.Errorf("no failure of vap-limit in the background: %+v", resp.Policies)
	}
}

// A ValidatingPolicy that does not compile keeps its previous version
// serving, and gets upstream's status (conditionStatus) with the error,
// and an event; a good version clears them.
func TestPolicySourceBrokenValidatingPolicy(t *testing.T) {
	var src *PolicySource
	h, dyn := fakeHost(t, nil, []runtime.Object{requireOwner(t, false)}, func(h *Host) {
		var err error
		if src, err = NewPolicySource(h, PolicySourceOptions{ReportStatus: true}); err != nil {
			t.Fatal(err)
		}
	})
	ri := dyn.Resource(fakeCELKinds[0].gvr)
	cond := func() (bool, string, string) {
		u, err := ri.Get(t.Context(), "need-team", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ready, _, _ := unstructured.NestedBool(u.Object, "status", "conditionStatus", "ready")
		msg, _, _ := unstructured.NestedString(u.Object, "status", "conditionStatus", "message")
		c := readCondition(u.Object, statusCEL, ConditionWebhookConfigured)
		if c == nil {
			return ready, "", msg
		}
		return ready, string(c.Status), msg
	}
	eventually(t, "the Ready status", func() bool { r, s, _ := cond(); return r && s == "True" })

	bad := requireOwner(t, true)
	bad.SetGeneration(2)
	if _, err := ri.Update(t.Context(), bad, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the compile error", func() bool { return src.Errors()["ValidatingPolicy.need-team"] != nil })
	if got := deniedBy(t, src.WebhookSet(api.Fail, ""), "p", nil); got != "ValidatingPolicy.need-team" {
		t.Errorf("the previous version does not serve: denied by %q", got)
	}
	eventually(t, "the status of the error", func() bool {
		r, s, m := cond()
		return !r && s == "False" && strings.Contains(m, "spec.validations[0].expression")
	})
	u, err := ri.Get(t.Context(), "need-team", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := readCondition(u.Object, statusCEL, ConditionRBACPermissionsGranted); c == nil || c.Status != metav1.ConditionTrue || c.Message != "Policy is ready for reporting." {
		t.Errorf("RBACPermissionsGranted %+v", c)
	}
	eventually(t, "the event", func() bool {
		for _, e := range listEvents(t, h) {
			if e.Reason == EventReasonPolicyError && e.Regarding.Kind == "ValidatingPolicy" && e.Regarding.Name == "need-team" &&
				e.Type == "Warning" && e.Action == EventActionNone && strings.Contains(e.Note, "spec.validations[0].expression") {
				return true
			}
		}
		return false
	})

	good := requireOwner(t, false)
	good.SetGeneration(3)
	cur, err := ri.Get(t.Context(), "need-team", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	good.Object["status"] = cur.Object["status"]
	if _, err := ri.Update(t.Context(), good, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the status cleared", func() bool { r, s, m := cond(); return r && s == "True" && m == "" })
}
