package cluster_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cluster"
	"github.com/gavelpolicy/gavel/engine"
)

// ParseConfig reads the data of the configuration ConfigMap as upstream
// reads its kyverno ConfigMap; the Config answers which resources and
// which users' requests are left out.
func ExampleParseConfig() {
	cfg := cluster.ParseConfig(map[string]string{
		"resourceFilters":  "[Event,*,*][*/*,kube-system,*][Node,*,*][Node/?*,*,*]",
		"excludeGroups":    "system:nodes",
		"excludeUsernames": "system:*, !system:serviceaccount:ci:deployer",
	})
	node := schema.GroupVersionKind{Version: "v1", Kind: "Node"}
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	ns := schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	fmt.Println(cfg.Filtered(node, "", "", "worker-1"))
	fmt.Println(cfg.Filtered(node, "status", "", "worker-1"))
	fmt.Println(cfg.Filtered(pod, "", "kube-system", "coredns"))
	fmt.Println(cfg.Filtered(ns, "", "", "kube-system"))
	fmt.Println(cfg.Filtered(pod, "", "default", "web"))
	fmt.Println(cfg.ExcludedUser("system:kube-scheduler", nil, nil, nil))
	fmt.Println(cfg.ExcludedUser("system:serviceaccount:ci:deployer", nil, nil, nil))
	fmt.Println(cfg.SkipsRequest(&engine.Request{Operation: api.Update, Kind: node, Name: "worker-1",
		UserInfo: api.UserInfoData{Username: "alice"}}))
	// Output:
	// true
	// true
	// true
	// true
	// false
	// true
	// false
	// true
}

// The webhook keys of the configuration ConfigMap are carried into the
// webhook configurations: WebhookOptions.Config (the WebhookController
// sets it to Host.Config at each reconciliation).
func ExampleConfig_webhooks() {
	cfg := cluster.ParseConfig(map[string]string{
		"webhooks":           `[{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system"]}]}}]`,
		"webhookLabels":      `{"team":"platform"}`,
		"matchConditions":    `[{"name":"not-leases","expression":"request.resource.resource != 'leases'"}]`,
		"webhookAnnotations": `{"broken":`,
	})
	fmt.Println(cfg.Webhooks.NamespaceSelector.MatchExpressions[0].Values)
	fmt.Println(cfg.WebhookLabels["team"], cfg.MatchConditions[0].Name)
	for _, err := range cfg.Errors {
		fmt.Println(err)
	}
	// Output:
	// [kube-system]
	// platform not-leases
	// configuration key webhookAnnotations: unexpected end of JSON input
}
