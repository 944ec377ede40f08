package generate_test

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/generate"
	"github.com/gavelpolicy/gavel/internal/genlabel"
)

// gpolData generates a ConfigMap named name with ZK_ADDRESS=value in each
// Namespace labelled env=prod.
func gpolData(ops, name, value string, sync, orphan bool) string {
	return fmt.Sprintf(`apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: zk
spec:
  evaluation:
    synchronize:
      enabled: %v
    orphanDownstreamOnPolicyDelete:
      enabled: %v
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: [%s]
      resources: ["namespaces"]
    objectSelector:
      matchLabels:
        env: prod
  generate:
  - expression: >-
      generator.Apply(object.metadata.name, [{"kind": dyn("ConfigMap"), "apiVersion": dyn("v1"),
        "metadata": dyn({"name": %q}), "data": dyn({"ZK_ADDRESS": %q})}])
`, sync, orphan, ops, name, value)
}

// gpolClone clones the Secret default/regcred into each new Namespace.
const gpolClone = `apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: clone-regcred
spec:
  evaluation:
    synchronize:
      enabled: true
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["namespaces"]
  variables:
  - name: source
    expression: resource.Get("v1", "secrets", "default", "regcred")
  generate:
  - expression: generator.Apply(object.metadata.name, [variables.source])
`

func prodNS(name, uid string) map[string]any {
	ns := namespace(name, map[string]any{"env": "prod"})
	ns["metadata"].(map[string]any)["uid"] = uid
	return ns
}

func urStates(urs []*api.UpdateRequest) []string {
	var out []string
	for _, ur := range urs {
		out = append(out, string(ur.Spec.Type)+":"+string(ur.Status.State))
	}
	return out
}

func TestGeneratingPolicyCreatesDownstream(t *testing.T) {
	h := newHarness(t, gpolData(`"CREATE"`, "zk", "1.1.1.1", true, false))
	urs := h.admit(api.Create, prodNS("prod-a", "uid-a"), nil)
	if got, want := urStates(urs), []string{"cel-generate:Completed"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("requests %v, want %v", got, want)
	}
	if got := urs[0].Status.GeneratedResources; len(got) != 1 || got[0].Name != "zk" || got[0].Namespace != "prod-a" {
		t.Errorf("generated resources %+v", got)
	}
	cm := h.get("v1", "ConfigMap", "prod-a", "zk")
	if cm == nil {
		t.Fatal("downstream not created")
	}
	labels := genlabel.Of(cm)
	for k, v := range map[string]string{genlabel.PolicyName: "zk", genlabel.TriggerUID: "uid-a", genlabel.TriggerName: "prod-a", genlabel.ManagedBy: "kyverno"} {
		if labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, labels[k], v)
		}
	}
	if _, ok := labels[genlabel.RuleName]; ok {
		t.Error("a GeneratingPolicy's downstream has no rule-name label")
	}
	// a Namespace the objectSelector leaves out queues nothing
	if urs := h.admit(api.Create, namespace("dev", nil), nil); len(urs) != 0 {
		t.Errorf("dev queued %v", urStates(urs))
	}
}

func TestGeneratingPolicySynchronize(t *testing.T) {
	h := newHarness(t, gpolData(`"CREATE"`, "zk", "1.1.1.1", true, false))
	ns := prodNS("prod-a", "uid-a")
	h.admit(api.Create, ns, nil)
	cm := h.get("v1", "ConfigMap", "prod-a", "zk")

	// modified downstream: reverted
	h.update(withData(cm, map[string]any{"ZK_ADDRESS": "tampered"}))
	if _, err := h.ctrl.OnDownstreamChange(h.ctx, cm, withData(cm, map[string]any{"ZK_ADDRESS": "tampered"})); err != nil {
		t.Fatal(err)
	}
	if got := dataOf(h.get("v1", "ConfigMap", "prod-a", "zk"))["ZK_ADDRESS"]; got != "1.1.1.1" {
		t.Errorf("modified downstream not reverted: %v", got)
	}
	// deleted downstream: recreated
	h.delete(cm)
	if _, err := h.ctrl.OnDownstreamChange(h.ctx, cm, nil); err != nil {
		t.Fatal(err)
	}
	if h.get("v1", "ConfigMap", "prod-a", "zk") == nil {
		t.Error("deleted downstream not recreated")
	}
	// a policy that matches CREATE only: an update of the trigger deletes
	// the downstream, as upstream's table says
	h.admit(api.Update, withLabels(ns, map[string]any{"env": "prod", "x": "y"}), ns)
	if h.get("v1", "ConfigMap", "prod-a", "zk") != nil {
		t.Error("downstream kept after the trigger's update")
	}
}

func TestGeneratingPolicyTriggerChanges(t *testing.T) {
	// the name comes from the trigger's label, so that an update of the
	// trigger changes what the policy generates
	p := strings.Replace(gpolData(`"CREATE", "UPDATE"`, "NAME", "v", true, false), `"NAME"`, `"zk-" + object.metadata.labels.version`, 1)
	h := newHarness(t, p)
	ns := namespace("prod-b", map[string]any{"env": "prod", "version": "1"})
	ns["metadata"].(map[string]any)["uid"] = "uid-b"
	h.admit(api.Create, ns, nil)
	if h.get("v1", "ConfigMap", "prod-b", "zk-1") == nil {
		t.Fatal("zk-1 not generated")
	}
	ns2 := withLabels(ns, map[string]any{"env": "prod", "version": "2"})
	h.admit(api.Update, ns2, ns)
	if h.get("v1", "ConfigMap", "prod-b", "zk-2") == nil || h.get("v1", "ConfigMap", "prod-b", "zk-1") != nil {
		t.Error("an updated trigger must replace zk-1 by zk-2")
	}
	// no longer selected: its downstream goes
	ns3 := withLabels(ns2, map[string]any{"env": "dev", "version": "2"})
	h.admit(api.Update, ns3, ns2)
	if h.get("v1", "ConfigMap", "prod-b", "zk-2") != nil {
		t.Error("downstream of a trigger the policy no longer selects kept")
	}
	// deleted trigger: nothing left, and a request for it is harmless
	h.admit(api.Create, ns, nil)
	h.admit(api.Delete, nil, h.get("v1", "Namespace", "", "prod-b"))
	if h.get("v1", "ConfigMap", "prod-b", "zk-1") != nil {
		t.Error("downstream of a deleted trigger kept")
	}
}

func TestGeneratingPolicyDoesNotAdopt(t *testing.T) {
	foreign := configMap("prod-c", "zk", map[string]any{"ZK_ADDRESS": "mine"})
	h := newHarness(t, gpolData(`"CREATE"`, "zk", "1.1.1.1", true, false), foreign)
	urs := h.admit(api.Create, prodNS("prod-c", "uid-c"), nil)
	if got := dataOf(h.get("v1", "ConfigMap", "prod-c", "zk"))["ZK_ADDRESS"]; got != "mine" {
		t.Errorf("an unrelated object was overwritten: %v", got)
	}
	if len(urs) != 1 || urs[0].Status.State != api.URCompleted || len(urs[0].Status.GeneratedResources) != 0 {
		t.Errorf("request %+v", urs[0].Status)
	}
}

func TestGeneratingPolicyNoSynchronize(t *testing.T) {
	h := newHarness(t, gpolData(`"CREATE"`, "zk", "1.1.1.1", false, false))
	ns := prodNS("prod-d", "uid-d")
	h.admit(api.Create, ns, nil)
	cm := h.get("v1", "ConfigMap", "prod-d", "zk")
	h.delete(cm)
	urs, err := h.ctrl.OnDownstreamChange(h.ctx, cm, nil)
	if err != nil || len(urs) != 0 {
		t.Fatalf("OnDownstreamChange: %v %v", urStates(urs), err)
	}
	if h.get("v1", "ConfigMap", "prod-d", "zk") != nil {
		t.Error("without synchronize a deleted downstream stays deleted")
	}
}

func TestGeneratingPolicyClone(t *testing.T) {
	src := secret("default", "regcred", map[string]any{"k": "djE="})
	src["metadata"].(map[string]any)["uid"] = "src-uid"
	h := newHarness(t, gpolClone, src)
	h.admit(api.Create, prodNS("team", "uid-t"), nil)
	copy := h.get("v1", "Secret", "team", "regcred")
	if copy == nil || dataOf(copy)["k"] != "djE=" {
		t.Fatalf("clone not created: %v", copy)
	}
	if got := genlabel.Of(copy)[genlabel.SourceUID]; got != "src-uid" {
		t.Errorf("source uid label %q", got)
	}
	tagged := h.get("v1", "Secret", "default", "regcred")
	if _, ok := genlabel.Of(tagged)[generate.LabelCloneSource]; !ok {
		t.Error("the source is not labelled as a clone source")
	}
	// modified source: the clone follows
	h.update(withData(tagged, map[string]any{"k": "djI="}))
	if _, err := h.ctrl.OnSourceChange(h.ctx, tagged, h.get("v1", "Secret", "default", "regcred")); err != nil {
		t.Fatal(err)
	}
	if got := dataOf(h.get("v1", "Secret", "team", "regcred"))["k"]; got != "djI=" {
		t.Errorf("clone not synced with its source: %v", got)
	}
	// deleted source: the clone goes
	cur := h.get("v1", "Secret", "default", "regcred")
	h.delete(cur)
	if _, err := h.ctrl.OnSourceChange(h.ctx, cur, nil); err != nil {
		t.Fatal(err)
	}
	if h.get("v1", "Secret", "team", "regcred") != nil {
		t.Error("clone of a deleted source kept")
	}
}

func TestGeneratingPolicyPolicyChanges(t *testing.T) {
	h := newHarness(t, gpolData(`"CREATE"`, "zk", "1.1.1.1", true, false))
	h.admit(api.Create, prodNS("prod-e", "uid-e"), nil)
	old := h.ctrl.Policies().Policies()[0]
	cur := h.compile(gpolData(`"CREATE"`, "zk", "2.2.2.2", true, false))
	if _, err := h.ctrl.OnPolicyUpdate(h.ctx, old, cur); err != nil {
		t.Fatal(err)
	}
	if got := dataOf(h.get("v1", "ConfigMap", "prod-e", "zk"))["ZK_ADDRESS"]; got != "2.2.2.2" {
		t.Errorf("downstream not synced with the policy: %v", got)
	}
	// renamed downstream: the old one goes
	renamed := h.compile(gpolData(`"CREATE"`, "zk2", "2.2.2.2", true, false))
	if _, err := h.ctrl.OnPolicyUpdate(h.ctx, cur, renamed); err != nil {
		t.Fatal(err)
	}
	if h.get("v1", "ConfigMap", "prod-e", "zk") != nil || h.get("v1", "ConfigMap", "prod-e", "zk2") == nil {
		t.Error("a policy update must replace zk by zk2")
	}
	if _, err := h.ctrl.OnPolicyDelete(h.ctx, renamed); err != nil {
		t.Fatal(err)
	}
	if h.get("v1", "ConfigMap", "prod-e", "zk2") != nil {
		t.Error("downstream of a deleted synchronized policy kept")
	}
	if len(h.ctrl.Policies().Policies()) != 0 {
		t.Error("the deleted policy is still in the controller's set")
	}
}

func TestGeneratingPolicyOrphanOnDelete(t *testing.T) {
	h := newHarness(t, gpolData(`"CREATE"`, "zk", "1.1.1.1", true, true))
	h.admit(api.Create, prodNS("prod-f", "uid-f"), nil)
	if _, err := h.ctrl.OnPolicyDelete(h.ctx, h.ctrl.Policies().Policies()[0]); err != nil {
		t.Fatal(err)
	}
	if h.get("v1", "ConfigMap", "prod-f", "zk") == nil {
		t.Error("orphanDownstreamOnPolicyDelete: the downstream must stay")
	}
}

func TestGeneratingPolicyGenerateExisting(t *testing.T) {
	p := strings.Replace(gpolData(`"CREATE"`, "zk", "v", false, false), "  evaluation:\n", "  evaluation:\n    generateExisting:\n      enabled: true\n", 1)
	h := newHarness(t, "", prodNS("prod-g", "uid-g"), prodNS("prod-h", "uid-h"), namespace("dev", nil))
	var kinds []string
	h.ctrl = generate.NewController(h.set, h.cluster, generate.WithDownstreamKinds(func(av, k string) { kinds = append(kinds, av+" "+k) }))
	urs, err := h.ctrl.OnPolicyUpdate(h.ctx, nil, h.compile(p))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := urStates(urs), []string{"cel-generate:Completed", "cel-generate:Completed"}; !reflect.DeepEqual(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
	for _, ns := range []string{"prod-g", "prod-h"} {
		if h.get("v1", "ConfigMap", ns, "zk") == nil {
			t.Errorf("no downstream in existing namespace %s", ns)
		}
	}
	if h.get("v1", "ConfigMap", "dev", "zk") != nil {
		t.Error("generateExisting applied to a namespace the policy does not select")
	}
	if !reflect.DeepEqual(kinds, []string{"v1 ConfigMap"}) {
		t.Errorf("downstream kinds %v", kinds)
	}
}

func TestGeneratingPolicyRestore(t *testing.T) {
	p := gpolData(`"CREATE"`, "zk", "v", true, false)
	h := newHarness(t, p, prodNS("prod-i", "uid-i"))
	var kinds []string
	h.ctrl = generate.NewController(h.set, h.cluster, generate.WithDownstreamKinds(func(av, k string) { kinds = append(kinds, av+" "+k) }))
	if err := h.ctrl.Restore(h.ctx); err != nil {
		t.Fatal(err)
	}
	sort.Strings(kinds)
	if !reflect.DeepEqual(kinds, []string{"v1 ConfigMap"}) {
		t.Errorf("restored kinds %v", kinds)
	}
	if h.get("v1", "ConfigMap", "prod-i", "zk") != nil {
		t.Error("Restore must not write")
	}
}

// A ClusterPolicy and a GeneratingPolicy of the same name keep apart.
func TestGeneratingPolicySharesNameWithClusterPolicy(t *testing.T) {
	h := newHarness(t, gpolData(`"CREATE"`, "zk", "gpol", true, false))
	cp := h.compile(strings.ReplaceAll(dataPolicy(true, false, "cpol", true), "name: zk-kafka-address\nspec", "name: zk\nspec"))
	if _, err := h.ctrl.OnPolicyUpdate(h.ctx, nil, cp); err != nil {
		t.Fatal(err)
	}
	if n := len(h.ctrl.Policies().Policies()); n != 2 {
		t.Fatalf("the controller holds %d policies, want both", n)
	}
	h.admit(api.Create, prodNS("prod-j", "uid-j"), nil)
	if got := dataOf(h.get("v1", "ConfigMap", "prod-j", "zk"))["ZK_ADDRESS"]; got != "gpol" {
		t.Errorf("GeneratingPolicy downstream %v", got)
	}
	if got := dataOf(h.get("v1", "ConfigMap", "prod-j", "zk-kafka-address"))["ZK_ADDRESS"]; got != "cpol" {
		t.Errorf("ClusterPolicy downstream %v", got)
	}
	gp := h.ctrl.Policies().Policies()[0]
	if _, err := h.ctrl.OnPolicyDelete(h.ctx, gp); err != nil {
		t.Fatal(err)
	}
	if h.get("v1", "ConfigMap", "prod-j", "zk") != nil || h.get("v1", "ConfigMap", "prod-j", "zk-kafka-address") == nil {
		t.Error("deleting the GeneratingPolicy must delete its downstream only")
	}
}

// An up-to-date downstream is not written again (a write would go
// through the webhooks again).
func TestGeneratingPolicyNoWriteWhenUpToDate(t *testing.T) {
	h := newHarness(t, gpolData(`"CREATE", "UPDATE"`, "zk", "1.1.1.1", true, false))
	ns := prodNS("prod-k", "uid-k")
	h.admit(api.Create, ns, nil)
	before := h.get("v1", "ConfigMap", "prod-k", "zk")["metadata"].(map[string]any)["resourceVersion"]
	h.admit(api.Update, withLabels(ns, map[string]any{"env": "prod", "x": "1"}), ns)
	after := h.get("v1", "ConfigMap", "prod-k", "zk")["metadata"].(map[string]any)["resourceVersion"]
	if before != after {
		t.Errorf("an up-to-date downstream was written again (resourceVersion %v → %v)", before, after)
	}
}
