package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cluster"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/loader"
)

// The webhook configurations a policy needs: its kinds resolved in the
// served resources (a group-less Ingress in networking.k8s.io, pods with
// pods/ephemeralcontainers), in the webhook of its failure policy.
func ExampleWebhookConfigurations() {
	var s loader.Set
	err := s.Read(strings.NewReader(`apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: team}
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: team
    match: {any: [{resources: {kinds: [Pod, Ingress], operations: [CREATE]}}]}
    validate: {pattern: {metadata: {labels: {team: "?*"}}}}
`), "policy.yaml")
	if err != nil {
		log.Fatal(err)
	}
	eng, _ := engine.New()
	set, err := eng.Compile(s.Policies...)
	if err != nil {
		log.Fatal(err)
	}
	served := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true}}},
		{GroupVersion: "networking.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "ingresses", Kind: "Ingress", Namespaced: true}}},
	}
	mwc, vwc, missing := cluster.WebhookConfigurations(set, served, cluster.WebhookOptions{URL: "https://127.0.0.1:9443"})
	for _, line := range cluster.WebhookRules(mwc, vwc) {
		fmt.Println(line)
	}
	fmt.Println(*vwc.Webhooks[0].ClientConfig.URL, *vwc.Webhooks[0].FailurePolicy == admv1.Fail, missing)
	// Output:
	// validate.gavel.io-fail: /v1 pods,pods/ephemeralcontainers [CREATE]; networking.k8s.io/v1 ingresses [CREATE]
	// https://127.0.0.1:9443/validate/fail true []
}

// Kyverno's webhook configurations in the cluster: gavel refuses.
func ExampleDetectKyverno() {
	kube := kubefake.NewClientset(&admv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kyverno-resource-validating-webhook-cfg"},
	})
	err := cluster.DetectKyverno(context.Background(), kube)
	var kerr *cluster.KyvernoInstalledError
	fmt.Println(errors.As(err, &kerr), kerr.Found)
	// Output: true [ValidatingWebhookConfiguration kyverno-resource-validating-webhook-cfg]
}

// Metrics on a registry of the host's own: one admission review answered.
func ExampleNewMetrics() {
	reg := prometheus.NewRegistry()
	m, err := cluster.NewMetrics(reg)
	if err != nil {
		log.Fatal(err)
	}
	m.Admission(cluster.ValidatingWebhook, "Pod", "default", api.Create, false, 2*time.Millisecond)
	families, _ := reg.Gather()
	for _, f := range families {
		if f.GetName() == "kyverno_admission_requests_total" {
			for _, l := range f.GetMetric()[0].GetLabel() {
				fmt.Printf("%s=%s ", l.GetName(), l.GetValue())
			}
			fmt.Println(f.GetMetric()[0].GetCounter().GetValue())
		}
	}
	// Output: request_allowed=false request_webhook=ValidatingWebhookConfiguration resource_kind=Pod resource_namespace=default resource_request_operation=create 1
}
