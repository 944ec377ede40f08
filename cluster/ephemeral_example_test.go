package cluster_test

import (
	"context"
	"log"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cluster"
	"github.com/gavelpolicy/gavel/engine"
)

// A webhook replica records the results of admitted requests; the
// leader's Reporter (Controller.Run) merges them into the policy reports.
func ExampleAdmissionReports() {
	ctx := context.Background()
	var h *cluster.Host                // from cluster.New
	var policies *cluster.PolicySource // from cluster.NewPolicySource
	reports := cluster.NewAdmissionReports(h, cluster.AdmissionReportsOptions{QueueSize: 1024})
	go reports.Run(ctx) // writes the EphemeralReports

	// in the validating webhook's handler
	req := &engine.Request{Operation: api.Create, UID: "request-uid", Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "namespace": "default", "uid": "pod-uid"},
	}}
	resp, err := policies.Set().Validate(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	if !resp.Blocked() {
		reports.Record(req, resp, "") // queued; never waits
	}
	if n := reports.Dropped(); n > 0 {
		log.Printf("%d admissions not reported: the queue was full", n)
	}
}
