package generate_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/genlabel"
	"github.com/gavelpolicy/gavel/loader"
)

func readObjects(t *testing.T, file string) []map[string]any {
	t.Helper()
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

func readFile(t *testing.T, file string) string {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// The corpus' label-existing-namespaces policy (mutateExistingOnPolicyUpdate
// at the policy level) labels every existing Namespace when it is created.
func TestCorpusLabelExistingNamespaces(t *testing.T) {
	dir := filepath.Join("testdata", "label-existing-namespaces")
	h := newHarness(t, "", readObjects(t, filepath.Join(dir, "cluster.yaml"))...)
	p := h.compile(readFile(t, filepath.Join(dir, "policy.yaml")))
	if _, err := h.ctrl.OnPolicyUpdate(h.ctx, nil, p); err != nil {
		t.Fatal(err)
	}
	for _, want := range readObjects(t, filepath.Join(dir, "want.yaml")) {
		s := genlabel.Spec(want)
		got := h.get("v1", "Namespace", "", s.Name)
		if !reflect.DeepEqual(labelsOf(got), labelsOf(want)) {
			t.Errorf("%s labels %v, want %v", s.Name, labelsOf(got), labelsOf(want))
		}
	}
}

// The corpus' restart-deployment-on-secret-change policy annotates the
// Deployment with the resourceVersion of the updated Secret, through a
// mutate UpdateRequest queued at admission.
func TestCorpusRestartDeploymentOnSecretChange(t *testing.T) {
	dir := filepath.Join("testdata", "restart-deployment-on-secret-change")
	h := newHarness(t, readFile(t, filepath.Join(dir, "policy.yaml")), readObjects(t, filepath.Join(dir, "cluster.yaml"))...)
	old := h.get("v1", "Secret", "default", "mysecret")
	rv := old["metadata"].(map[string]any)["resourceVersion"]
	cur := readObjects(t, filepath.Join(dir, "update.yaml"))[0]
	cur["metadata"].(map[string]any)["resourceVersion"] = rv
	urs := h.admit(api.Update, cur, old)
	if len(urs) != 1 || urs[0].Spec.Type != api.URMutate || urs[0].Status.State != api.URCompleted {
		t.Fatalf("update requests %+v", urs)
	}
	deploy := h.get("apps/v1", "Deployment", "default", "busybox")
	tmd := deploy["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)
	ann, _ := tmd["annotations"].(map[string]any)
	if ann["ops.corp.com/triggerrestart"] != rv {
		t.Errorf("annotations %v, want triggerrestart=%v", ann, rv)
	}
	// a CREATE does not meet the rule's preconditions
	h2 := newHarness(t, readFile(t, filepath.Join(dir, "policy.yaml")), readObjects(t, filepath.Join(dir, "cluster.yaml"))[0])
	if urs := h2.admit(api.Create, cur, nil); len(urs) != 0 {
		t.Errorf("create queued %+v", urs)
	}
}

func labelsOf(obj map[string]any) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	l, _ := md["labels"].(map[string]any)
	return l
}

// A MutatingPolicy with mutateExisting labels the existing Namespaces when
// it is created (a request naming no trigger), those its
// targetMatchConditions keep, and writes only those that change; a
// Namespace admitted later queues the labelling of every Namespace again.
func TestMutatingPolicyExistingNamespaces(t *testing.T) {
	dir := filepath.Join("testdata", "mpol-label-namespaces")
	h := newHarness(t, "", readObjects(t, filepath.Join(dir, "cluster.yaml"))...)
	p := h.compile(readFile(t, filepath.Join(dir, "policy.yaml")))
	before := h.get("v1", "Namespace", "", "team-b")["metadata"].(map[string]any)["resourceVersion"]
	urs, err := h.ctrl.OnPolicyUpdate(h.ctx, nil, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(urs) != 1 || urs[0].Spec.Type != api.URMutate || urs[0].Status.State != api.URCompleted {
		t.Fatalf("update requests %+v", urs)
	}
	owner := func(name string) any { return labelsOf(h.get("v1", "Namespace", "", name))["owner"] }
	if owner("team-a") != "platform" || owner("kube-system") != nil {
		t.Errorf("owners: team-a %v, kube-system %v", owner("team-a"), owner("kube-system"))
	}
	if after := h.get("v1", "Namespace", "", "team-b")["metadata"].(map[string]any)["resourceVersion"]; after != before {
		t.Errorf("team-b written (resourceVersion %v, was %v) though unchanged", after, before)
	}
	h2 := newHarness(t, readFile(t, filepath.Join(dir, "policy.yaml")), readObjects(t, filepath.Join(dir, "cluster.yaml"))...)
	urs = h2.admit(api.Create, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-c"}}, nil)
	if len(urs) != 1 || urs[0].Status.State != api.URCompleted {
		t.Fatalf("admission update requests %+v", urs)
	}
	for _, ns := range []string{"team-a", "team-c"} {
		if o := labelsOf(h2.get("v1", "Namespace", "", ns))["owner"]; o != "platform" {
			t.Errorf("%s owner %v after the admission", ns, o)
		}
	}
}

// A MutatingPolicy whose target expression resolves the targets from a
// trigger: on a policy event each existing trigger (the objects its
// matchConstraints name) is processed as an update of it, as upstream's
// policy controller does; the targets of triggers the matchConditions
// leave out are not written.
func TestMutatingPolicyExistingTriggers(t *testing.T) {
	cm := func(ns, name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": ns}}
	}
	h := newHarness(t, "", cm("a", "trigger"), cm("a", "target"), cm("b", "other"), cm("b", "target"))
	p := h.compile(`apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: label-target}
spec:
  evaluation:
    mutateExisting: {enabled: true}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [UPDATE], resources: [configmaps]}
  matchConditions:
  - {name: trigger, expression: "object.metadata.name == 'trigger'"}
  targetMatchConstraints:
    expression: resource.Get("v1", "configmaps", object.metadata.namespace, "target")
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'mutated-by': request.object.metadata.name}}}"
`)
	urs, err := h.ctrl.OnPolicyUpdate(h.ctx, nil, p)
	if err != nil {
		t.Fatal(err)
	}
	completed := 0
	for _, ur := range urs {
		if ur.Spec.Type != api.URMutate || ur.Spec.RuleContext[0].Trigger.Kind != "ConfigMap" {
			t.Errorf("update request %+v", ur.Spec)
		}
		if ur.Status.State == api.URCompleted {
			completed++
		}
	}
	if completed == 0 {
		t.Fatalf("no request completed: %+v", urs)
	}
	if l := labelsOf(h.get("v1", "ConfigMap", "a", "target"))["mutated-by"]; l != "trigger" {
		t.Errorf("a/target mutated-by %v, want trigger", l)
	}
	if l := labelsOf(h.get("v1", "ConfigMap", "b", "target"))["mutated-by"]; l != nil {
		t.Errorf("b/target mutated-by %v: b has no trigger", l)
	}
}
