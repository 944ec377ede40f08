package cluster_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cluster"
	"github.com/gavelpolicy/gavel/engine"
)

// A webhook records the events of each admission's results: here a
// denial, a PolicyViolation on the policy, "(blocked)".
func ExampleHost_RecordAdmissionEvents() {
	ctx, cancel := context.WithCancel(context.Background())
	kube := kubefake.NewClientset()
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		cluster.PolicyExceptions: "PolicyExceptionList", cluster.UpdateRequests: "UpdateRequestList"})
	h, err := cluster.NewForClients(kube, dyn, meta.NewDefaultRESTMapper(nil), cluster.Options{
		Namespace: "gavel", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Events: cluster.EventOptions{Omit: cluster.DefaultOmitEvents}, // upstream's chart default
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer h.Shutdown()
	defer cancel()

	docs, err := api.ReadDocuments(strings.NewReader(`apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: require-team}
spec:
  rules:
  - name: check-team
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      failureAction: Enforce
      message: label team is required
      pattern: {metadata: {labels: {team: "?*"}}}
`), "policy.yaml")
	if err != nil {
		log.Fatal(err)
	}
	p, err := api.DecodePolicy(docs[0])
	if err != nil {
		log.Fatal(err)
	}
	eng, err := engine.New()
	if err != nil {
		log.Fatal(err)
	}
	set, err := eng.Compile(p)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := set.Validate(ctx, &engine.Request{Operation: api.Create, Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "shop"},
	}})
	if err != nil {
		log.Fatal(err)
	}
	h.RecordAdmissionEvents(resp, resp.Blocked()) // queued: returns at once

	for range 500 { // the writers are asynchronous
		evs, err := kube.EventsV1().Events("").List(ctx, metav1.ListOptions{})
		if err != nil {
			log.Fatal(err)
		}
		if len(evs.Items) > 0 {
			ev := evs.Items[0]
			fmt.Println(ev.Namespace, ev.Type, ev.Reason, ev.Action, ev.ReportingController)
			fmt.Println(ev.Regarding.Kind, ev.Regarding.Name, "related:", ev.Related.Kind, ev.Related.Namespace+"/"+ev.Related.Name)
			fmt.Println(ev.Note)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Output:
	// default Warning PolicyViolation Resource Blocked kyverno-admission
	// ClusterPolicy require-team related: Pod shop/web
	// Pod shop/web: [check-team] fail (blocked); validation error: label team is required. rule check-team failed at path /metadata/labels/
}
