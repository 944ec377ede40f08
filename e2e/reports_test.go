//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cluster"
)

// admissionOnlyPolicy is an Audit policy with background: false: only
// admission results can reach its report.
const admissionOnlyPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: adm-only-team
spec:
  validationFailureAction: Audit
  background: false
  rules:
  - name: check-team
    match:
      any:
      - resources:
          kinds: [Pod]
          namespaces: [adm-reports]
    validate:
      message: "label team is required"
      pattern:
        metadata:
          labels:
            team: "?*"
`

// TestAdmissionReports creates a Pod that fails an admission-only Audit
// policy: its failure reaches the Pod's PolicyReport (named after its UID,
// owned by it) through the webhook's ephemeral report, which the leader
// deletes once merged, and the report goes when the Pod is deleted. A dry-run create is not
// reported. Then a leader started with -report-format openreports writes
// the failure of another Pod to an openreports.io Report.
func TestAdmissionReports(t *testing.T) {
	e := suite
	ctx := context.Background()
	// a fresh webhook and controller of their own
	ar := e.Kube.AdmissionregistrationV1()
	_ = ar.MutatingWebhookConfigurations().Delete(ctx, "gavel", metav1.DeleteOptions{})
	_ = ar.ValidatingWebhookConfigurations().Delete(ctx, "gavel", metav1.DeleteOptions{})
	for _, p := range e.Procs() {
		if (strings.HasPrefix(p.Name, "webhook") || strings.HasPrefix(p.Name, "controller")) && p.Running() {
			p.Stop()
		}
	}
	// only this policy: the suite's earlier tests leave theirs, and
	// thousands of Pods that they would have the new leader report on
	_ = e.Dynamic.Resource(clusterPolicies).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	docs, err := api.ReadDocuments(strings.NewReader(admissionOnlyPolicy), "policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Apply(ctx, docs[0].Object); err != nil {
		t.Fatal(err)
	}
	e.namespace(t, "adm-reports", nil)
	port, _ := freePort()
	wh := e.gavel(t, "webhook-reports", "-controller=false", "-listen", fmt.Sprintf("127.0.0.1:%d", port))
	ctrl := e.gavel(t, "controller-reports", "-webhook=false", "-scan-interval", "1h")
	defer func() {
		wh.Stop()
		ctrl.Stop()
	}()
	e.webhooks(t, fmt.Sprintf("https://127.0.0.1:%d", port))
	eventually(t, 30*time.Second, "a leader", func() bool { return e.leader() == "controller-reports" })

	// every ephemeral report written in the namespace, by the name of its
	// resource
	w, err := e.Dynamic.Resource(cluster.EphemeralReports).Namespace("adm-reports").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	written := map[string]int{}
	go func() {
		for ev := range w.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type == watch.Added {
				name, _, _ := unstructured.NestedString(u.Object, "spec", "owner", "name")
				mu.Lock()
				written[name]++
				mu.Unlock()
			}
		}
	}()

	pods := e.Kube.CoreV1().Pods("adm-reports")
	// the webhook may not have seen the policy yet: a dry run is answered
	// all the same, and never reported
	if _, err := pods.Create(ctx, testPod("adm-reports", "dry", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, testPod("adm-reports", "no-team", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// the policy's entries by Pod, from the Pods' reports
	entries := func() map[string]string {
		var out map[string]string
		for name, r := range e.resourceReports(ctx, cluster.PolicyReports, "adm-reports") {
			results, _, _ := unstructured.NestedSlice(r.Object, "results")
			for _, x := range results {
				if m := x.(map[string]any); m["policy"] == "adm-only-team" {
					if out == nil {
						out = map[string]string{}
					}
					out[name] = fmt.Sprint(m["result"])
				}
			}
		}
		return out
	}
	start := time.Now()
	eventually(t, 60*time.Second, "the admission's fail entry", func() bool { return entries()["no-team"] == "fail" })
	t.Logf("the entry reached the report %s after the create", time.Since(start).Round(100*time.Millisecond))
	eventually(t, 60*time.Second, "the ephemeral reports deleted", func() bool {
		l, err := e.Dynamic.Resource(cluster.EphemeralReports).Namespace("adm-reports").List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0
	})
	if got := entries(); len(got) != 1 {
		t.Errorf("entries %v, want no-team's only (no dry run)", got)
	}
	mu.Lock()
	if written["dry"] != 0 || written["no-team"] != 1 {
		t.Errorf("ephemeral reports written by resource: %v, want no-team's only", written)
	}
	mu.Unlock()
	if err := pods.Delete(ctx, "no-team", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the entry removed with the Pod", func() bool { return entries() == nil })

	t.Run("OpenReports", func(t *testing.T) {
		// a leader that writes openreports.io Reports
		ctrl.Stop()
		orc := e.gavel(t, "controller-openreports", "-webhook=false", "-scan-interval", "1h", "-report-format", "openreports")
		defer orc.Stop()
		eventually(t, 60*time.Second, "a leader", func() bool { return e.leader() == "controller-openreports" })
		if _, err := pods.Create(ctx, testPod("adm-reports", "no-team-2", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 60*time.Second, "the fail entry in the Pod's Report", func() bool {
			r := e.resourceReports(ctx, cluster.OpenReports, "adm-reports")["no-team-2"]
			if r == nil {
				return false
			}
			results, _, _ := unstructured.NestedSlice(r.Object, "results")
			fail, _, _ := unstructured.NestedInt64(r.Object, "summary", "fail")
			return len(results) == 1 && fail == 1 && results[0].(map[string]any)["result"] == "fail"
		})
	})
}
