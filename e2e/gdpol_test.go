//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gavelpolicy/gavel/api"
)

var (
	deletingPolicies   = schemaGVR("policies.kyverno.io", "v1", "deletingpolicies")
	generatingPolicies = schemaGVR("policies.kyverno.io", "v1", "generatingpolicies")
)

const expirePolicy = `apiVersion: policies.kyverno.io/v1
kind: DeletingPolicy
metadata:
  name: expire-configmaps
spec:
  schedule: "@every 4s"
  deletionPropagationPolicy: Background
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      resources: ["configmaps"]
    namespaceSelector:
      matchLabels:
        gavel-e2e: dpol
  conditions:
  - name: expired
    expression: "object.metadata.?labels.?expired.orValue('') == 'true'"
`

func (e *env) applyYAML(t *testing.T, text string) {
	t.Helper()
	docs, err := api.ReadDocuments(strings.NewReader(text), "policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if err := e.Apply(context.Background(), d.Object); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeletingPolicyOnSchedule: the leader runs a DeletingPolicy on its
// schedule: it deletes the objects its matchConstraints and conditions
// select (and only those), records an event per deletion and the time of
// the run in the policy's status.
func TestDeletingPolicyOnSchedule(t *testing.T) {
	// the cluster host's PolicySource does not watch the deleting and
	// generating kinds yet (it is being extended to every kind the engine
	// evaluates); the scheduler and the controller's side are in place
	e := suite
	ctx := context.Background()
	e.stopControllers()
	e.namespace(t, "dpol-a", map[string]string{"gavel-e2e": "dpol"})
	e.namespace(t, "dpol-b", nil)
	cms := func(ns string) interface {
		Create(context.Context, *corev1.ConfigMap, metav1.CreateOptions) (*corev1.ConfigMap, error)
	} {
		return e.Kube.CoreV1().ConfigMaps(ns)
	}
	for _, c := range []struct{ ns, name, expired string }{
		{"dpol-a", "expired-1", "true"}, {"dpol-a", "expired-2", "true"}, {"dpol-a", "fresh", "false"}, {"dpol-b", "expired-elsewhere", "true"},
	} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: c.ns, Labels: map[string]string{"expired": c.expired}}}
		if _, err := cms(c.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	exists := func(ns, name string) bool {
		_, err := e.configMap(ns, name)
		return err == nil
	}
	e.applyYAML(t, expirePolicy)
	// the deletions' events are success events: generateSuccessEvents,
	// as upstream's
	conf := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dpol-config", Namespace: "gavel"}, Data: map[string]string{"generateSuccessEvents": "true"}}
	if _, err := e.Kube.CoreV1().ConfigMaps("gavel").Create(ctx, conf, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	start := time.Now()
	c := e.gavel(t, "dpol-controller", "-webhook=false", "-config", "gavel/dpol-config")
	defer c.Stop()
	eventually(t, 60*time.Second, "the expired ConfigMaps deleted", func() bool {
		return !exists("dpol-a", "expired-1") && !exists("dpol-a", "expired-2")
	})
	t.Logf("deleted %s after the controller started", time.Since(start).Round(time.Millisecond))
	if !exists("dpol-a", "fresh") || !exists("dpol-b", "expired-elsewhere") {
		t.Error("the policy deleted what it does not select")
	}
	// the run's time is written after its deletions
	eventually(t, 10*time.Second, "status.lastExecutionTime after a run", func() bool {
		p, err := e.Dynamic.Resource(deletingPolicies).Get(ctx, "expire-configmaps", metav1.GetOptions{})
		if err != nil {
			return false
		}
		last, _, _ := unstructured.NestedString(p.Object, "status", "lastExecutionTime")
		return last != ""
	})
	eventually(t, 30*time.Second, "the events of the deletions", func() bool {
		l, err := e.Kube.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		n := 0
		for _, ev := range l.Items {
			if ev.Reason == "PolicyApplied" && ev.Regarding.Kind == "DeletingPolicy" && ev.Related != nil && strings.HasPrefix(ev.Related.Name, "expired-") &&
				ev.Action == "Resource Cleaned Up" && ev.ReportingController == "kyverno-cleanup" && ev.Type == "Normal" &&
				ev.Note == "successfully deleted the target resource ConfigMap/dpol-a/"+ev.Related.Name {
				n++
			}
		}
		return n == 2
	})
	// it goes on running: a new expired object goes too
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "expired-3", Namespace: "dpol-a", Labels: map[string]string{"expired": "true"}}}
	if _, err := cms("dpol-a").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the next run", func() bool { return !exists("dpol-a", "expired-3") })
	if err := e.Dynamic.Resource(deletingPolicies).Delete(ctx, "expire-configmaps", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

const gpolE2E = `apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: gpol-defaults
spec:
  evaluation:
    synchronize:
      enabled: true
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["namespaces"]
    objectSelector:
      matchLabels:
        gavel-e2e: gpol
  generate:
  - expression: >-
      generator.Apply(object.metadata.name, [{"kind": dyn("ConfigMap"), "apiVersion": dyn("v1"),
        "metadata": dyn({"name": "gpol-defaults"}), "data": dyn({"owner": "gavel"})}])
`

// TestGeneratingPolicyLeaderKilled: a GeneratingPolicy with synchronize
// loses no downstream when the leader is killed: the triggers admitted
// while no controller runs, and those a leader killed in the middle of
// its work left, are generated by the next leader, from the durable
// UpdateRequests; a downstream deleted while no controller runs comes
// back, one edited while a leader runs is reverted, and the downstream
// goes with the policy.
func TestGeneratingPolicyLeaderKilled(t *testing.T) {
	// the cluster host's PolicySource does not watch the deleting and
	// generating kinds yet (it is being extended to every kind the engine
	// evaluates); the scheduler and the controller's side are in place
	e := suite
	ctx := context.Background()
	e.stopControllers()
	e.applyYAML(t, gpolE2E)
	port, _ := freePort()
	wh := e.gavel(t, "gpol-webhook", "-controller=false", "-listen", fmt.Sprintf("127.0.0.1:%d", port))
	defer wh.Stop()
	url := fmt.Sprintf("https://127.0.0.1:%d", port)
	e.webhooks(t, url)
	defer e.deleteWebhooks()
	defer e.downstreamWebhook(t, url)()
	owner := func(ns string) string {
		cm, err := e.configMap(ns, "gpol-defaults")
		if err != nil {
			return "<absent>"
		}
		return cm.Data["owner"]
	}
	all := func(names []string) func() bool {
		return func() bool {
			for _, ns := range names {
				if owner(ns) != "gavel" {
					return false
				}
			}
			return true
		}
	}

	c1 := e.gavel(t, "gpol-controller-1", "-webhook=false")
	eventually(t, 30*time.Second, "gpol-controller-1 leading", func() bool { return e.leader() == "gpol-controller-1" })
	// the webhook may not have seen the policy yet: create until generated
	i := 0
	eventually(t, 60*time.Second, "the first downstream", func() bool {
		i++
		e.namespace(t, fmt.Sprintf("gpol-0-%d", i), map[string]string{"gavel-e2e": "gpol"})
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if owner(fmt.Sprintf("gpol-0-%d", i)) == "gavel" {
				return true
			}
			time.Sleep(100 * time.Millisecond)
		}
		return false
	})
	first := fmt.Sprintf("gpol-0-%d", i)

	// killed with work to come: the triggers admitted while no controller
	// runs wait in UpdateRequests
	c1.Kill()
	var pending []string
	for j := range 5 {
		ns := fmt.Sprintf("gpol-pending-%d", j)
		pending = append(pending, ns)
		e.namespace(t, ns, map[string]string{"gavel-e2e": "gpol"})
	}
	if err := e.Kube.CoreV1().ConfigMaps(first).Delete(ctx, "gpol-defaults", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if n := e.pendingURs(t); n < len(pending) {
		t.Fatalf("%d pending UpdateRequests with no controller, want at least %d", n, len(pending))
	}
	if owner(pending[0]) != "<absent>" {
		t.Fatal("generated with no controller")
	}

	// killed in the middle of its work: many triggers, the leader killed
	// as soon as it generated the first of them
	var burst []string
	for j := range 20 {
		ns := fmt.Sprintf("gpol-burst-%d", j)
		burst = append(burst, ns)
		e.namespace(t, ns, map[string]string{"gavel-e2e": "gpol"})
	}
	c2 := e.gavel(t, "gpol-controller-2", "-webhook=false")
	eventually(t, 60*time.Second, "gpol-controller-2 at work", func() bool {
		for _, ns := range append(append([]string{}, pending...), burst...) {
			if owner(ns) == "gavel" {
				return true
			}
		}
		return false
	})
	c2.Kill()
	start := time.Now()
	c3 := e.gavel(t, "gpol-controller-3", "-webhook=false")
	defer c3.Stop()
	want := append(append([]string{first}, pending...), burst...)
	eventually(t, 90*time.Second, "every downstream generated by the next leader", all(want))
	eventually(t, 30*time.Second, "no UpdateRequest left", func() bool { return e.pendingURs(t) == 0 })
	t.Logf("%d downstream objects complete %s after the third controller started (lease expiry included)", len(want), time.Since(start).Round(time.Millisecond))

	// an edit while a leader runs is reverted
	cm, err := e.configMap(burst[0], "gpol-defaults")
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["owner"] = "someone"
	if _, err := e.Kube.CoreV1().ConfigMaps(burst[0]).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the edit reverted", func() bool { return owner(burst[0]) == "gavel" })

	// the policy deleted: its synchronized downstream with it
	if err := e.Dynamic.Resource(generatingPolicies).Delete(ctx, "gpol-defaults", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the downstream deleted with the policy", func() bool {
		for _, ns := range want {
			if owner(ns) != "<absent>" {
				return false
			}
		}
		return true
	})
}

// deleteWebhooks deletes the suite's webhook configurations (a later test
// registers its own).
func (e *env) deleteWebhooks() {
	ctx := context.Background()
	ar := e.Kube.AdmissionregistrationV1()
	_ = ar.MutatingWebhookConfigurations().Delete(ctx, "gavel", metav1.DeleteOptions{})
	_ = ar.ValidatingWebhookConfigurations().Delete(ctx, "gavel", metav1.DeleteOptions{})
}
