// Command generate is a namespace provisioner built on gavel's generate
// rules: every new Namespace gets a default-deny NetworkPolicy and a
// ResourceQuota. It runs against an in-memory cluster: the admission step
// (PolicySet.Generate) queues UpdateRequests, the background controller
// (generate.Controller.Run) drains them and writes the downstream
// resources, and a tampered NetworkPolicy is restored because the rule
// synchronizes. A policy update goes through the controller
// (OnPolicyUpdate), which resyncs the downstream resources, and admission
// then serves the controller's policies, so that both use the new version.
package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/generate"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
)

//go:embed policies.yaml
var policies string

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func namespace(name, tier string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"tier": tier}}}
}

func run(ctx context.Context, w io.Writer) error {
	cluster := inmem.New()
	queue := generate.NewMemoryQueue(16)
	eng, err := engine.New(engine.WithClient(cluster), engine.WithUpdateRequestQueue(queue))
	if err != nil {
		return err
	}
	set := &loader.Set{}
	if err := set.Read(strings.NewReader(policies), "policies.yaml"); err != nil {
		return err
	}
	ps, err := eng.Compile(set.Policies...)
	if err != nil {
		return err
	}
	processed := make(chan *api.UpdateRequest, 16)
	ctrl := generate.NewController(ps, cluster, generate.WithObserver(func(ur *api.UpdateRequest, _ []engine.PolicyResult) {
		processed <- ur
	}))
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(runCtx, queue) }()

	// Admission: each Namespace is created, then evaluated by the engine,
	// which queues the work for the controller.
	queued := 0
	for _, ns := range []map[string]any{namespace("team-a", "small"), namespace("team-b", "large"), namespace("kube-system", "system")} {
		cluster.Add(ns)
		resp, err := ps.Generate(ctx, &engine.Request{Operation: api.Create, Object: ns})
		if err != nil {
			return err
		}
		queued += len(resp.UpdateRequests)
	}
	for i := 0; i < queued; i++ {
		select {
		case ur := <-processed:
			fmt.Fprintf(w, "update request for %s: %s\n", ur.Spec.Resource.Name, ur.Status.State)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		return err
	}
	printObjects(w, cluster)

	// Someone deletes a generated NetworkPolicy; the watch that sees it
	// tells the controller, which recreates it.
	np, err := cluster.Get(ctx, "networking.k8s.io/v1", "NetworkPolicy", "team-a", "default-deny")
	if err != nil {
		return err
	}
	if err := cluster.Delete(ctx, "networking.k8s.io/v1", "NetworkPolicy", "team-a", "default-deny"); err != nil {
		return err
	}
	urs, err := ctrl.OnDownstreamChange(ctx, np, nil)
	if err != nil {
		return err
	}
	for _, ur := range urs {
		fmt.Fprintf(w, "resync of %s/%s: %s\n", ur.Spec.Resource.Name, ur.Spec.RuleContext[0].Rule, ur.Status.State)
	}
	if _, err := cluster.Get(ctx, "networking.k8s.io/v1", "NetworkPolicy", "team-a", "default-deny"); err != nil {
		return err
	}
	fmt.Fprintln(w, "team-a/default-deny restored")

	// The policy changes (small namespaces get 8 CPUs): the controller
	// installs it and resyncs the synchronized downstream resources, and
	// admission goes on with the controller's policies, so that both use
	// the new version (a set kept from before would still hold the old).
	updated := strings.Replace(policies, "|| '4'", "|| '8'", 1)
	next := &loader.Set{}
	if err := next.Read(strings.NewReader(updated), "policies.yaml"); err != nil {
		return err
	}
	cur, err := eng.CompilePolicy(next.Policies[0])
	if err != nil {
		return err
	}
	if _, err := ctrl.OnPolicyUpdate(ctx, ps.Policies()[0], cur); err != nil {
		return err
	}
	admission := ctrl.Policies()
	ns := namespace("team-c", "small")
	cluster.Add(ns)
	resp, err := admission.Generate(ctx, &engine.Request{Operation: api.Create, Object: ns})
	if err != nil {
		return err
	}
	for range resp.UpdateRequests {
		ur, err := queue.Next(ctx)
		if err != nil {
			return err
		}
		if err := ctrl.Process(ctx, ur); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "policy updated; team-c: %d update request\n", len(resp.UpdateRequests))
	for _, name := range []string{"team-a", "team-c"} {
		q, err := cluster.Get(ctx, "v1", "ResourceQuota", name, "default-quota")
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "ResourceQuota %s/default-quota cpu=%v\n", name, q["spec"].(map[string]any)["hard"].(map[string]any)["requests.cpu"])
	}
	return nil
}

func printObjects(w io.Writer, cluster *inmem.Cluster) {
	for _, obj := range cluster.Objects() {
		kind, _ := obj["kind"].(string)
		if kind == "Namespace" {
			continue
		}
		md, _ := obj["metadata"].(map[string]any)
		labels, _ := md["labels"].(map[string]any)
		line := fmt.Sprintf("%s %s/%s (rule %s)", kind, md["namespace"], md["name"], labels["generate.kyverno.io/rule-name"]) // upstream's tracking label
		if spec, ok := obj["spec"].(map[string]any); ok {
			if hard, ok := spec["hard"].(map[string]any); ok {
				line += fmt.Sprintf(" cpu=%v", hard["requests.cpu"])
			}
		}
		fmt.Fprintln(w, line)
	}
}
