//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
)

const dsdelPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: dsdel-defaults
spec:
  generateExisting: true
  rules:
  - name: defaults
    match:
      any:
      - resources:
          kinds: [Namespace]
          selector:
            matchLabels:
              gavel-e2e: dsdel
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: dsdel-defaults
      namespace: "{{request.object.metadata.name}}"
      synchronize: true
      data:
        data:
          owner: gavel
`

// downstreamWebhook registers the webhook of the example's manifests
// that receives the updates and deletions of generated objects (selected
// by their tracking label) at url, as gavel-downstream; the returned
// function deletes it.
func (e *env) downstreamWebhook(t *testing.T, url string) func() {
	t.Helper()
	ctx := context.Background()
	ignore := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNoneOnDryRun
	timeout := int32(5)
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "gavel-downstream"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "downstream.gavel.io", AdmissionReviewVersions: []string{"v1"}, SideEffects: &none,
			FailurePolicy: &ignore, TimeoutSeconds: &timeout,
			ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "generate.kyverno.io/policy-name", Operator: metav1.LabelSelectorOpExists,
			}}},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr(url + "/downstream"), CABundle: e.CAPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update, admissionregistrationv1.Delete},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
		}},
	}
	vw := e.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	_ = vw.Delete(ctx, cfg.Name, metav1.DeleteOptions{})
	if _, err := vw.Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return func() { _ = vw.Delete(ctx, cfg.Name, metav1.DeleteOptions{}) }
}

// TestDownstreamDeletedWhileNoController: a synchronized downstream
// deleted through the API server while no controller runs is seen at
// admission (an UpdateRequest, Pending) and comes back when a controller
// starts; its informers alone could not see it (a deleted object is not
// listed).
func TestDownstreamDeletedWhileNoController(t *testing.T) {
	e := suite
	ctx := context.Background()
	e.stopControllers()
	e.namespace(t, "dsdel-a", map[string]string{"gavel-e2e": "dsdel"})
	docs, err := api.ReadDocuments(strings.NewReader(dsdelPolicy), "policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Apply(ctx, docs[0].Object); err != nil {
		t.Fatal(err)
	}
	port, _ := freePort()
	wh := e.gavel(t, "dsdel-webhook", "-controller=false", "-listen", fmt.Sprintf("127.0.0.1:%d", port))
	defer wh.Stop()
	defer e.downstreamWebhook(t, fmt.Sprintf("https://127.0.0.1:%d", port))()
	owner := func() string {
		cm, err := e.configMap("dsdel-a", "dsdel-defaults")
		if err != nil {
			return "<absent>"
		}
		return cm.Data["owner"]
	}

	c1 := e.gavel(t, "dsdel-controller-1", "-webhook=false")
	eventually(t, 60*time.Second, "the downstream generated", func() bool { return owner() == "gavel" })
	eventually(t, 30*time.Second, "no UpdateRequest left", func() bool { return e.pendingURs(t) == 0 })
	c1.Stop() // the lease is released: no controller runs from now on

	saved, err := e.configMap("dsdel-a", "dsdel-defaults")
	if err != nil {
		t.Fatal(err)
	}
	cms := e.Kube.CoreV1().ConfigMaps("dsdel-a")
	// the API server starts calling a new webhook configuration within
	// moments: until a deletion gives an UpdateRequest, put the object
	// back (as gavel had written it) and delete it again
	var took time.Duration
	eventually(t, 30*time.Second, "an UpdateRequest of the deletion", func() bool {
		start := time.Now()
		if err := cms.Delete(ctx, "dsdel-defaults", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		took = time.Since(start)
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if e.pendingURs(t) > 0 {
				return true
			}
			time.Sleep(100 * time.Millisecond)
		}
		again := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: saved.Name, Namespace: saved.Namespace, Labels: saved.Labels}, Data: saved.Data}
		if _, err := cms.Create(ctx, again, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return false
	})
	t.Logf("deletion admitted in %s (one UpdateRequest written by the webhook)", took.Round(time.Millisecond))
	time.Sleep(time.Second)
	if _, err := e.configMap("dsdel-a", "dsdel-defaults"); !apierrors.IsNotFound(err) {
		t.Fatalf("the downstream with no controller: %v", err)
	}
	if n := e.pendingURs(t); n != 1 {
		t.Fatalf("%d pending UpdateRequests, want 1", n)
	}

	start := time.Now()
	c2 := e.gavel(t, "dsdel-controller-2", "-webhook=false")
	defer c2.Stop()
	eventually(t, 60*time.Second, "the downstream recreated by the controller that started later", func() bool { return owner() == "gavel" })
	t.Logf("deleted with no controller: recreated %s after the controller started", time.Since(start).Round(time.Millisecond))
	eventually(t, 30*time.Second, "no UpdateRequest left", func() bool { return e.pendingURs(t) == 0 })

	// the policy goes while a controller runs: its downstream with it
	if err := e.Dynamic.Resource(clusterPolicies).Delete(ctx, "dsdel-defaults", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the downstream deleted with the policy", func() bool {
		_, err := e.configMap("dsdel-a", "dsdel-defaults")
		return apierrors.IsNotFound(err)
	})
}
