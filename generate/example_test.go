package generate_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/generate"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
)

// The engine queues UpdateRequests at admission (here into a
// MemoryQueue); the controller processes them and writes the cloned
// Secret. A long-running host runs Controller.Run on the queue instead.
func ExampleController() {
	const policy = `apiVersion: kyverno.io/v1
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
    generate:
      apiVersion: v1
      kind: Secret
      name: regcred
      namespace: "{{request.object.metadata.name}}"
      synchronize: true
      clone:
        namespace: default
        name: regcred
`
	ctx := context.Background()
	cluster := inmem.New(map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
		"metadata": map[string]any{"name": "regcred", "namespace": "default"},
		"data":     map[string]any{".dockerconfigjson": "eyJhdXRocyI6e319"}})
	queue := generate.NewMemoryQueue(16)
	eng, _ := engine.New(engine.WithClient(cluster), engine.WithUpdateRequestQueue(queue))
	s := &loader.Set{}
	_ = s.Read(strings.NewReader(policy), "policy.yaml")
	set, err := eng.Compile(s.Policies...)
	if err != nil {
		panic(err)
	}
	ctrl := generate.NewController(set, cluster)

	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-a"}}
	cluster.Add(ns)
	if _, err := set.Generate(ctx, &engine.Request{Operation: api.Create, Object: ns}); err != nil {
		panic(err)
	}
	urs := drain(ctx, queue)
	if err := ctrl.ProcessAll(ctx, urs); err != nil {
		panic(err)
	}
	fmt.Println(urs[0].Spec.Type, urs[0].Status.State, urs[0].Status.GeneratedResources)
	cloned, _ := cluster.Get(ctx, "v1", "Secret", "team-a", "regcred")
	fmt.Println(cloned["data"])
	// Output:
	// generate Completed [{v1 Secret team-a regcred }]
	// map[.dockerconfigjson:eyJhdXRocyI6e319]
}

// With WithQueue, an edit of a synchronized downstream resource becomes a
// Pending request on the host's queue (a durable one in a cluster); the
// edit is reverted when the request is processed.
func ExampleWithQueue() {
	const policy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: defaults
spec:
  rules:
  - name: owner
    match:
      any:
      - resources:
          kinds: [Namespace]
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: defaults
      namespace: "{{request.object.metadata.name}}"
      synchronize: true
      data:
        data:
          owner: platform
`
	ctx := context.Background()
	cluster := inmem.New()
	queue := generate.NewMemoryQueue(16)
	eng, _ := engine.New(engine.WithClient(cluster), engine.WithUpdateRequestQueue(queue))
	s := &loader.Set{}
	_ = s.Read(strings.NewReader(policy), "policy.yaml")
	set, err := eng.Compile(s.Policies...)
	if err != nil {
		panic(err)
	}
	ctrl := generate.NewController(set, cluster, generate.WithQueue(queue))

	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-a"}}
	cluster.Add(ns)
	if _, err := set.Generate(ctx, &engine.Request{Operation: api.Create, Object: ns}); err != nil {
		panic(err)
	}
	if err := ctrl.ProcessAll(ctx, drain(ctx, queue)); err != nil {
		panic(err)
	}

	// someone edits the downstream ConfigMap
	old, _ := cluster.Get(ctx, "v1", "ConfigMap", "team-a", "defaults")
	edited := map[string]any{}
	for k, v := range old {
		edited[k] = v
	}
	edited["data"] = map[string]any{"owner": "someone"}
	if _, err := cluster.Update(ctx, edited); err != nil {
		panic(err)
	}
	urs, _ := ctrl.OnDownstreamChange(ctx, old, edited)
	cm, _ := cluster.Get(ctx, "v1", "ConfigMap", "team-a", "defaults")
	fmt.Println(len(urs), urs[0].Status.State, queue.Len(), cm["data"])

	ur, _ := queue.Next(ctx)
	if err := ctrl.Process(ctx, ur); err != nil {
		panic(err)
	}
	cm, _ = cluster.Get(ctx, "v1", "ConfigMap", "team-a", "defaults")
	fmt.Println(ur.Status.State, cm["data"])
	// Output:
	// 1 Pending 1 map[owner:someone]
	// Completed map[owner:platform]
}

// A GeneratingPolicy takes the same path: the engine queues a
// cel-generate request at admission, the controller evaluates the policy
// and writes what generator.Apply generated; WithDownstreamKinds tells the
// host the kinds the policy generates (to watch them), and Restore learns
// them again from the existing triggers when a host starts.
func ExampleWithDownstreamKinds() {
	const policy = `apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: default-quota
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
  generate:
  - expression: >-
      generator.Apply(object.metadata.name, [{"kind": dyn("ResourceQuota"), "apiVersion": dyn("v1"),
        "metadata": dyn({"name": "quota"}), "spec": dyn({"hard": {"pods": "10"}})}])
`
	ctx := context.Background()
	cluster := inmem.New()
	queue := generate.NewMemoryQueue(16)
	eng, _ := engine.New(engine.WithClient(cluster), engine.WithUpdateRequestQueue(queue))
	s := &loader.Set{}
	_ = s.Read(strings.NewReader(policy), "policy.yaml")
	set, err := eng.Compile(s.Policies...)
	if err != nil {
		panic(err)
	}
	ctrl := generate.NewController(set, cluster, generate.WithDownstreamKinds(func(apiVersion, kind string) {
		fmt.Println("watch", apiVersion, kind)
	}))

	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-a", "uid": "1"}}
	cluster.Add(ns)
	if _, err := set.Generate(ctx, &engine.Request{Operation: api.Create, Object: ns}); err != nil {
		panic(err)
	}
	urs := drain(ctx, queue)
	if err := ctrl.ProcessAll(ctx, urs); err != nil {
		panic(err)
	}
	fmt.Println(urs[0].Spec.Type, urs[0].Status.State, urs[0].Status.GeneratedResources)
	quota, _ := cluster.Get(ctx, "v1", "ResourceQuota", "team-a", "quota")
	fmt.Println(quota["spec"])
	// Output:
	// watch v1 ResourceQuota
	// cel-generate Completed [{v1 ResourceQuota team-a quota }]
	// map[hard:map[pods:10]]
}

// drain takes every request queued so far.
func drain(ctx context.Context, q *generate.MemoryQueue) []*api.UpdateRequest {
	var urs []*api.UpdateRequest
	for q.Len() > 0 {
		ur, err := q.Next(ctx)
		if err != nil {
			panic(err)
		}
		urs = append(urs, ur)
	}
	return urs
}
