package generate_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// dataPolicy generates a ConfigMap in every Namespace labelled env=prod; a
// second rule keeps the policy valid when the first is deleted.
func dataPolicy(sync, orphan bool, value string, withRule bool) string {
	rule := fmt.Sprintf(`
  - name: k-kafka-address
    match:
      any:
      - resources:
          kinds: [Namespace]
          selector:
            matchLabels:
              env: prod
    generate:
      synchronize: %v
      orphanDownstreamOnPolicyDelete: %v
      apiVersion: v1
      kind: ConfigMap
      name: zk-kafka-address
      namespace: "{{request.object.metadata.name}}"
      data:
        metadata:
          labels:
            somekey: somevalue
        data:
          ZK_ADDRESS: %q`, sync, orphan, value)
	if !withRule {
		rule = ""
	}
	return `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: zk-kafka-address
spec:
  rules:` + rule + `
  - name: keep
    match:
      any:
      - resources:
          kinds: [Namespace]
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: keep
      namespace: "{{request.object.metadata.name}}"
      data:
        data:
          k: v
`
}

// clonePolicy clones default/<source> into every Namespace labelled
// env=prod.
func clonePolicy(sync bool, source string) string {
	return fmt.Sprintf(`apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: sync-secrets
spec:
  rules:
  - name: sync-image-pull-secret
    match:
      any:
      - resources:
          kinds: [Namespace]
          selector:
            matchLabels:
              env: prod
    generate:
      synchronize: %v
      apiVersion: v1
      kind: Secret
      name: regcred
      namespace: "{{request.object.metadata.name}}"
      clone:
        namespace: default
        name: %s
`, sync, source)
}

var (
	origData     = map[string]any{"ZK_ADDRESS": "a"}
	tamperedData = map[string]any{"ZK_ADDRESS": "tampered"}
	newData      = map[string]any{"ZK_ADDRESS": "b"}
	origSecret   = map[string]any{"token": "b3JpZw=="}
	newSecret    = map[string]any{"token": "bmV3"}
	otherSecret  = map[string]any{"token": "b3RoZXI="}
)

// syncEnv is one row's setup: a trigger Namespace team-a (env=prod) that
// was admitted, and its downstream resource.
type syncEnv struct {
	*harness
	clone   bool
	sync    bool
	orphan  bool
	policy  *engine.Policy
	trigger map[string]any
	source  map[string]any
}

func (e *syncEnv) downstream() map[string]any {
	if e.clone {
		return e.get("v1", "Secret", "team-a", "regcred")
	}
	return e.get("v1", "ConfigMap", "team-a", "zk-kafka-address")
}

func newSyncEnv(t *testing.T, clone, sync, orphan bool) *syncEnv {
	t.Helper()
	e := &syncEnv{clone: clone, sync: sync, orphan: orphan}
	if clone {
		e.source = secret("default", "regcred", origSecret)
		other := secret("default", "other", otherSecret)
		e.harness = newHarness(t, clonePolicy(sync, "regcred"), e.source, other)
	} else {
		e.harness = newHarness(t, dataPolicy(sync, orphan, "a", true))
	}
	e.policy = e.ctrl.Policies().Policies()[0]
	e.trigger = namespace("team-a", map[string]any{"env": "prod"})
	urs := e.admit(api.Create, e.trigger, nil)
	for _, ur := range urs {
		if ur.Status.State != api.URCompleted {
			t.Fatalf("admission request: %s %s", ur.Status.State, ur.Status.Message)
		}
	}
	if e.downstream() == nil {
		t.Fatal("downstream not generated")
	}
	return e
}

type syncAction func(t *testing.T, e *syncEnv)

func deleteDownstream(t *testing.T, e *syncEnv) {
	ds := e.downstream()
	e.delete(ds)
	if _, err := e.ctrl.OnDownstreamChange(e.ctx, ds, nil); err != nil {
		t.Fatal(err)
	}
}

func modifyDownstream(t *testing.T, e *syncEnv) {
	ds := e.downstream()
	d := tamperedData
	if e.clone {
		d = map[string]any{"token": "dGFtcGVyZWQ="}
	}
	mod := withData(ds, d)
	e.update(mod)
	if _, err := e.ctrl.OnDownstreamChange(e.ctx, ds, mod); err != nil {
		t.Fatal(err)
	}
}

func deletePolicy(t *testing.T, e *syncEnv) {
	if _, err := e.ctrl.OnPolicyDelete(e.ctx, e.policy); err != nil {
		t.Fatal(err)
	}
}

func deleteRule(t *testing.T, e *syncEnv) {
	cur := e.compile(dataPolicy(e.sync, e.orphan, "a", false))
	if _, err := e.ctrl.OnPolicyUpdate(e.ctx, e.policy, cur); err != nil {
		t.Fatal(err)
	}
}

func modifyPolicy(t *testing.T, e *syncEnv) {
	var cur *engine.Policy
	if e.clone {
		cur = e.compile(clonePolicy(e.sync, "other"))
	} else {
		cur = e.compile(dataPolicy(e.sync, e.orphan, "b", true))
	}
	if _, err := e.ctrl.OnPolicyUpdate(e.ctx, e.policy, cur); err != nil {
		t.Fatal(err)
	}
}

func deleteTrigger(t *testing.T, e *syncEnv) {
	e.admit(api.Delete, nil, e.trigger)
}

func deleteTriggerEvent(t *testing.T, e *syncEnv) {
	e.delete(e.trigger)
	if _, err := e.ctrl.OnTriggerDelete(e.ctx, e.trigger); err != nil {
		t.Fatal(err)
	}
}

func modifyTrigger(t *testing.T, e *syncEnv) {
	e.admit(api.Update, withLabels(e.trigger, map[string]any{"env": "dev"}), e.trigger)
}

func modifyTriggerEvent(t *testing.T, e *syncEnv) {
	cur := withLabels(e.trigger, map[string]any{"env": "dev"})
	e.update(cur)
	if _, err := e.ctrl.OnTriggerUpdate(e.ctx, e.trigger, cur); err != nil {
		t.Fatal(err)
	}
}

func deleteSource(t *testing.T, e *syncEnv) {
	old := e.get("v1", "Secret", "default", "regcred")
	e.delete(old)
	if _, err := e.ctrl.OnSourceChange(e.ctx, old, nil); err != nil {
		t.Fatal(err)
	}
}

func modifySource(t *testing.T, e *syncEnv) {
	old := e.get("v1", "Secret", "default", "regcred")
	cur := withData(old, newSecret)
	e.update(cur)
	if _, err := e.ctrl.OnSourceChange(e.ctx, old, cur); err != nil {
		t.Fatal(err)
	}
}

// Expected downstream states after an action.
const (
	present  = "present with the original content"
	absent   = "deleted"
	modified = "present with the modified content"
	synced   = "present with the new content"
)

func (e *syncEnv) check(t *testing.T, want string) {
	t.Helper()
	ds := e.downstream()
	orig, mod, fresh := origData, tamperedData, newData
	if e.clone {
		orig, mod, fresh = origSecret, map[string]any{"token": "dGFtcGVyZWQ="}, newSecret
	}
	var got string
	switch {
	case ds == nil:
		got = absent
	case reflect.DeepEqual(dataOf(ds), orig):
		got = present
	case reflect.DeepEqual(dataOf(ds), mod):
		got = modified
	case reflect.DeepEqual(dataOf(ds), fresh):
		got = synced
	default:
		got = fmt.Sprintf("present with data %v", dataOf(ds))
	}
	if got != want {
		t.Errorf("downstream %s, want %s", got, want)
	}
}

// TestSynchronizeData checks every row of upstream's table for generate
// rules with a data source.
func TestSynchronizeData(t *testing.T) {
	tests := []struct {
		name   string
		sync   bool
		orphan bool
		action syncAction
		want   string
	}{
		{"delete downstream/sync: downstream recreated", true, false, deleteDownstream, present},
		{"delete downstream/nosync: downstream deleted", false, false, deleteDownstream, absent},
		{"delete policy/sync orphan: downstream retained", true, true, deletePolicy, present},
		{"delete policy/sync: downstream deleted", true, false, deletePolicy, absent},
		{"delete policy/nosync: downstream retained", false, false, deletePolicy, present},
		{"delete policy/nosync orphan: downstream retained", false, true, deletePolicy, present},
		{"delete rule/sync orphan: downstream retained", true, true, deleteRule, present},
		{"delete rule/sync: downstream deleted", true, false, deleteRule, absent},
		{"delete rule/nosync: downstream retained", false, false, deleteRule, present},
		{"delete trigger/sync: downstream deleted", true, false, deleteTrigger, absent},
		{"delete trigger/nosync: none", false, false, deleteTrigger, present},
		{"delete trigger event/sync: downstream deleted", true, false, deleteTriggerEvent, absent},
		{"delete trigger event/nosync: none", false, false, deleteTriggerEvent, present},
		{"modify downstream/sync: downstream reverted", true, false, modifyDownstream, present},
		{"modify downstream/nosync: downstream modified", false, false, modifyDownstream, modified},
		{"modify policy/sync: downstream synced", true, false, modifyPolicy, synced},
		{"modify policy/nosync: downstream unmodified", false, false, modifyPolicy, present},
		{"modify trigger/sync: downstream deleted", true, false, modifyTrigger, absent},
		{"modify trigger/nosync: none", false, false, modifyTrigger, present},
		{"modify trigger event/sync: downstream deleted", true, false, modifyTriggerEvent, absent},
		{"modify trigger event/nosync: none", false, false, modifyTriggerEvent, present},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSyncEnv(t, false, tt.sync, tt.orphan)
			tt.action(t, e)
			e.check(t, tt.want)
		})
	}
}

// TestSynchronizeClone checks every row of upstream's table for generate
// rules with a clone source.
func TestSynchronizeClone(t *testing.T) {
	tests := []struct {
		name   string
		sync   bool
		action syncAction
		want   string
	}{
		{"delete downstream/sync: downstream recreated", true, deleteDownstream, present},
		{"delete downstream/nosync: downstream deleted", false, deleteDownstream, absent},
		{"delete policy/sync: downstream retained", true, deletePolicy, present},
		{"delete policy/nosync: downstream retained", false, deletePolicy, present},
		{"delete source/sync: downstream deleted", true, deleteSource, absent},
		{"delete source/nosync: downstream retained", false, deleteSource, present},
		{"delete trigger/sync: downstream deleted", true, deleteTrigger, absent},
		{"delete trigger/nosync: none", false, deleteTrigger, present},
		{"delete trigger event/sync: downstream deleted", true, deleteTriggerEvent, absent},
		{"modify downstream/sync: downstream reverted", true, modifyDownstream, present},
		{"modify downstream/nosync: downstream modified", false, modifyDownstream, modified},
		{"modify policy/sync: downstream unmodified", true, modifyPolicy, present},
		{"modify policy/nosync: downstream unmodified", false, modifyPolicy, present},
		{"modify source/sync: downstream synced", true, modifySource, synced},
		{"modify source/nosync: downstream unmodified", false, modifySource, present},
		{"modify trigger/sync: downstream deleted", true, modifyTrigger, absent},
		{"modify trigger/nosync: none", false, modifyTrigger, present},
		{"modify trigger event/sync: downstream deleted", true, modifyTriggerEvent, absent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSyncEnv(t, true, tt.sync, false)
			tt.action(t, e)
			e.check(t, tt.want)
		})
	}
}
