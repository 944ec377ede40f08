package engine_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
)

const genOnDeletePolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: audit-event-on-delete
spec:
  background: false
  rules:
  - name: generate-event-on-delete
    match:
      any:
      - resources:
          kinds: [Secret]
          operations: [DELETE]
    generate:
      apiVersion: v1
      kind: Event
      name: "delete.{{ request.object.metadata.name }}"
      namespace: "{{request.object.metadata.namespace}}"
      synchronize: false
      data:
        involvedObject:
          kind: Secret
          name: "{{ request.name }}"
          uid: "{{ request.oldObject.metadata.uid }}"
        reason: Delete
`

const genMutateExistingPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: mutate-existing
spec:
  rules:
  - name: label-secret
    match:
      any:
      - resources:
          kinds: [ConfigMap]
    mutate:
      targets:
      - apiVersion: v1
        kind: Secret
        name: secret-1
        namespace: "{{ request.object.metadata.namespace }}"
      patchStrategicMerge:
        metadata:
          labels:
            foo: bar
`

func genSet(t *testing.T, policy string, opts ...engine.Option) *engine.PolicySet {
	t.Helper()
	s := &loader.Set{}
	if err := s.Read(strings.NewReader(policy), "policy.yaml"); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(s.Policies...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

type failingQueue struct{}

func (failingQueue) Enqueue(context.Context, *api.UpdateRequest) error {
	return errors.New("queue full")
}

func TestGenerateModes(t *testing.T) {
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "s1", "namespace": "ns", "uid": "u-1"}}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "ns"}}
	target := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "secret-1", "namespace": "ns"}}
	ctx := context.Background()

	t.Run("deletion at admission fails the rule and queues a generate request", func(t *testing.T) {
		q := &genQueue{}
		set := genSet(t, genOnDeletePolicy, engine.WithClient(inmem.New()), engine.WithUpdateRequestQueue(q))
		resp, err := set.Generate(ctx, &engine.Request{Operation: api.Delete, OldObject: secret, Name: "s1"})
		if err != nil {
			t.Fatal(err)
		}
		rr := resp.Policies[0].Rules[0]
		if rr.Status != engine.StatusFail || len(q.urs) != 1 || q.urs[0].Spec.RuleContext[0].DeleteDownstream {
			t.Fatalf("result %+v, requests %+v", rr, q.urs)
		}
	})
	t.Run("deletion in the controller generates", func(t *testing.T) {
		set := genSet(t, genOnDeletePolicy, engine.WithClient(inmem.New()), engine.WithUpdateRequestQueue(&genQueue{}))
		resp, err := set.Generate(ctx, &engine.Request{Controller: true, Operation: api.Delete, Object: secret, OldObject: secret, Name: "s1"})
		if err != nil {
			t.Fatal(err)
		}
		rr := resp.Policies[0].Rules[0]
		if rr.Status != engine.StatusPass || len(rr.GeneratedResources) != 1 || len(resp.UpdateRequests) != 0 {
			t.Fatalf("result %+v", rr)
		}
		obj := rr.GeneratedResources[0]
		io := obj["involvedObject"].(map[string]any)
		if obj["kind"] != "Event" || io["name"] != "s1" || io["uid"] != "u-1" {
			t.Errorf("event %v", obj)
		}
	})
	t.Run("background scan skips background: false policies", func(t *testing.T) {
		set := genSet(t, genOnDeletePolicy)
		resp, err := set.Generate(ctx, &engine.Request{Object: secret, Background: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Policies) != 1 || len(resp.Policies[0].Rules) != 0 {
			t.Fatalf("policies %+v", resp.Policies)
		}
	})
	t.Run("a rule without data, clone, cloneList or foreach generates nothing", func(t *testing.T) {
		set := genSet(t, `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: nothing
spec:
  rules:
  - name: no-source
    match:
      any:
      - resources:
          kinds: [Secret]
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: cm
      namespace: "{{ request.object.metadata.namespace }}"
`, engine.WithClient(inmem.New()))
		resp, err := set.Generate(ctx, &engine.Request{Controller: true, Object: secret})
		if err != nil {
			t.Fatal(err)
		}
		rr := resp.Policies[0].Rules[0]
		if rr.Status != engine.StatusPass || len(rr.GeneratedResources) != 0 {
			t.Fatalf("result %+v", rr)
		}
	})
	t.Run("no object", func(t *testing.T) {
		set := genSet(t, genOnDeletePolicy)
		if _, err := set.Generate(ctx, &engine.Request{}); !errors.Is(err, engine.ErrNoObject) {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("enqueue failure is returned with the response", func(t *testing.T) {
		set := genSet(t, genMutateExistingPolicy, engine.WithClient(inmem.New(target)), engine.WithUpdateRequestQueue(failingQueue{}))
		resp, err := set.Generate(ctx, &engine.Request{Object: cm})
		if err == nil || !strings.Contains(err.Error(), "queue full") || resp == nil || len(resp.UpdateRequests) != 1 {
			t.Fatalf("resp %+v, err %v", resp, err)
		}
		// the refused request says so, for the host's events
		if st := resp.UpdateRequests[0].Status; st.State != api.URFailed || st.Message != "queue full" {
			t.Fatalf("status %+v, want Failed with the queue's error", st)
		}
	})
	t.Run("a queued request stays Pending", func(t *testing.T) {
		set := genSet(t, genMutateExistingPolicy, engine.WithClient(inmem.New(target)), engine.WithUpdateRequestQueue(&genQueue{}))
		resp, err := set.Generate(ctx, &engine.Request{Object: cm})
		if err != nil || len(resp.UpdateRequests) != 1 || resp.UpdateRequests[0].Status.State == api.URFailed {
			t.Fatalf("resp %+v, err %v", resp, err)
		}
	})
	t.Run("mutate at admission leaves mutate-existing rules to the controller", func(t *testing.T) {
		set := genSet(t, genMutateExistingPolicy, engine.WithClient(inmem.New(target)), engine.WithUpdateRequestQueue(&genQueue{}))
		resp, err := set.Mutate(ctx, &engine.Request{Object: cm})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Policies[0].Rules) != 0 || resp.Patch != nil {
			t.Fatalf("rules %+v patch %s", resp.Policies[0].Rules, resp.Patch)
		}
	})
	t.Run("mutate outside admission patches targets", func(t *testing.T) {
		set := genSet(t, genMutateExistingPolicy, engine.WithClient(inmem.New(target)))
		resp, err := set.Mutate(ctx, &engine.Request{Object: cm})
		if err != nil {
			t.Fatal(err)
		}
		rr := resp.Policies[0].Rules[0]
		if rr.Status != engine.StatusPass || len(rr.PatchedTargets) != 1 || resp.Patch != nil {
			t.Fatalf("result %+v", rr)
		}
	})
	t.Run("missing named target is an error", func(t *testing.T) {
		set := genSet(t, genMutateExistingPolicy, engine.WithClient(inmem.New()))
		resp, err := set.Mutate(ctx, &engine.Request{Object: cm})
		if err != nil {
			t.Fatal(err)
		}
		rr := resp.Policies[0].Rules[0]
		if rr.Status != engine.StatusError || !strings.Contains(rr.Message, "not found") {
			t.Fatalf("result %+v", rr)
		}
	})
}

func TestGenerateDoesNotModifyInput(t *testing.T) {
	set := genSet(t, genOnDeletePolicy, engine.WithClient(inmem.New()))
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "s1", "namespace": "ns", "uid": "u", "labels": map[string]any{"a": "b"}}}
	before := genDeepCopy(secret)
	resp, err := set.Generate(context.Background(), &engine.Request{Controller: true, Operation: api.Delete, Object: secret, OldObject: secret, Name: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	rr := resp.Policies[0].Rules[0]
	if len(rr.GeneratedResources) != 1 {
		t.Fatalf("result %+v", rr)
	}
	obj := rr.GeneratedResources[0]
	obj["metadata"].(map[string]any)["labels"].(map[string]any)["x"] = "y"
	obj["involvedObject"].(map[string]any)["kind"] = "changed"
	if !reflect.DeepEqual(secret, before) {
		t.Fatalf("input modified: %v", secret)
	}
	again, err := set.Generate(context.Background(), &engine.Request{Controller: true, Operation: api.Delete, Object: secret, OldObject: secret, Name: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	obj = again.Policies[0].Rules[0].GeneratedResources[0]
	if obj["involvedObject"].(map[string]any)["kind"] != "Secret" || obj["metadata"].(map[string]any)["labels"].(map[string]any)["x"] != nil {
		t.Fatalf("compiled policy modified through a result: %v", obj)
	}
}

func genDeepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, x := range t {
			m[k] = genDeepCopy(x)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, x := range t {
			s[i] = genDeepCopy(x)
		}
		return s
	}
	return v
}
