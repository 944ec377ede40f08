package cluster_test

import (
	"context"
	"log"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cluster"
	"github.com/gavelpolicy/gavel/engine"
)

// A webhook replica turns the deletion of a synchronized downstream
// resource into a durable UpdateRequest, which the leader processes (now,
// or when one starts): the resource comes back.
func ExampleDownstreamAdmission() {
	ctx := context.Background()
	var h *cluster.Host                // from cluster.New
	var policies *cluster.PolicySource // from cluster.NewPolicySource
	downstream := cluster.NewDownstreamAdmission(h, cluster.DownstreamAdmissionOptions{
		ControllerUsername: "system:serviceaccount:gavel:gavel",
	})

	// in the handler of the webhook registered for labelled objects
	old := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
		"name": "defaults", "namespace": "team-a",
		"labels": map[string]any{
			"app.kubernetes.io/managed-by":    "kyverno",
			"generate.kyverno.io/policy-name": "provisioner",
			"generate.kyverno.io/rule-name":   "defaults",
		},
	}}
	req := &engine.Request{Operation: api.Delete, OldObject: old, UserInfo: api.UserInfoData{Username: "alice"}}
	if _, err := downstream.Handle(ctx, policies.Set(), req); err != nil {
		log.Printf("downstream: %v", err) // logged; the request is admitted all the same
	}
}
