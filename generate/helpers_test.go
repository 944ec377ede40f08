package generate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/generate"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/internal/genlabel"
	"github.com/gavelpolicy/gavel/loader"
)

// harness is an in-memory cluster with an engine that queues at admission
// and a controller that drains the queue.
type harness struct {
	t       *testing.T
	ctx     context.Context
	cluster *inmem.Cluster
	queue   *generate.MemoryQueue
	eng     *engine.Engine
	set     *engine.PolicySet
	ctrl    *generate.Controller
}

func newHarness(t *testing.T, policyYAML string, objs ...map[string]any) *harness {
	t.Helper()
	h := &harness{t: t, ctx: context.Background(), cluster: inmem.New(objs...), queue: generate.NewMemoryQueue(64)}
	eng, err := engine.New(engine.WithClient(h.cluster), engine.WithUpdateRequestQueue(h.queue))
	if err != nil {
		t.Fatal(err)
	}
	h.eng = eng
	var policies []*engine.Policy
	if policyYAML != "" {
		policies = append(policies, h.compile(policyYAML))
	}
	h.set = eng.NewPolicySet(policies...)
	h.ctrl = generate.NewController(h.set, h.cluster)
	return h
}

func (h *harness) compile(policyYAML string) *engine.Policy {
	h.t.Helper()
	s := &loader.Set{}
	if err := s.Read(strings.NewReader(policyYAML), "policy.yaml"); err != nil {
		h.t.Fatal(err)
	}
	if len(s.Policies) != 1 {
		h.t.Fatalf("want one policy, got %d", len(s.Policies))
	}
	p, err := h.eng.CompilePolicy(s.Policies[0])
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// admit applies the operation to the cluster, runs the engine's admission
// Generate (which queues UpdateRequests) and processes the queue.
func (h *harness) admit(op api.AdmissionOperation, obj, old map[string]any) []*api.UpdateRequest {
	h.t.Helper()
	req := &engine.Request{Operation: op}
	switch op {
	case api.Create:
		h.cluster.Add(obj)
		req.Object = obj
	case api.Update:
		if _, err := h.cluster.Update(h.ctx, obj); err != nil {
			h.t.Fatal(err)
		}
		req.Object, req.OldObject = obj, old
	case api.Delete:
		s := genlabel.Spec(old)
		if err := h.cluster.Delete(h.ctx, s.APIVersion, s.Kind, s.Namespace, s.Name); err != nil {
			h.t.Fatal(err)
		}
		req.OldObject = old
	}
	resp, err := h.ctrl.Policies().Generate(h.ctx, req)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(resp.UpdateRequests) != h.queue.Len() {
		h.t.Fatalf("response lists %d update requests, queue holds %d", len(resp.UpdateRequests), h.queue.Len())
	}
	return h.drain()
}

// drain processes every queued request.
func (h *harness) drain() []*api.UpdateRequest {
	h.t.Helper()
	var urs []*api.UpdateRequest
	for h.queue.Len() > 0 {
		ur, err := h.queue.Next(h.ctx)
		if err != nil {
			h.t.Fatal(err)
		}
		if err := h.ctrl.Process(h.ctx, ur); err != nil {
			h.t.Fatalf("process: %v (status %+v)", err, ur.Status)
		}
		urs = append(urs, ur)
	}
	return urs
}

func (h *harness) get(apiVersion, kind, ns, name string) map[string]any {
	h.t.Helper()
	obj, err := h.cluster.Get(h.ctx, apiVersion, kind, ns, name)
	if err != nil {
		return nil
	}
	return obj
}

func (h *harness) update(obj map[string]any) {
	h.t.Helper()
	if _, err := h.cluster.Update(h.ctx, obj); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) delete(obj map[string]any) {
	h.t.Helper()
	s := genlabel.Spec(obj)
	if err := h.cluster.Delete(h.ctx, s.APIVersion, s.Kind, s.Namespace, s.Name); err != nil {
		h.t.Fatal(err)
	}
}

func namespace(name string, labels map[string]any) map[string]any {
	md := map[string]any{"name": name}
	if labels != nil {
		md["labels"] = labels
	}
	return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": md}
}

func secret(ns, name string, data map[string]any) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": name, "namespace": ns}, "data": data}
}

func configMap(ns, name string, data map[string]any) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns}, "data": data}
}

func dataOf(obj map[string]any) map[string]any {
	d, _ := obj["data"].(map[string]any)
	return d
}

// withData returns a copy of obj with data replaced.
func withData(obj map[string]any, data map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range obj {
		out[k] = v
	}
	out["data"] = data
	return out
}

// withLabels returns a copy of obj with metadata.labels replaced.
func withLabels(obj map[string]any, labels map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range obj {
		out[k] = v
	}
	md := map[string]any{}
	for k, v := range obj["metadata"].(map[string]any) {
		md[k] = v
	}
	md["labels"] = labels
	out["metadata"] = md
	return out
}
