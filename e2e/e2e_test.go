//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gavelpolicy/gavel/cluster"
)

func schemaGVR(g, v, r string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: g, Version: v, Resource: r}
}

// webhooks registers gavel's webhook at url for the kinds of the suite.
func (e *env) webhooks(t testing.TB, url string) {
	t.Helper()
	ctx := context.Background()
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNoneOnDryRun
	timeout := int32(10)
	exclude := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"gavel", "kube-system"},
	}}}
	rule := func(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{
			Operations: ops,
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
				Resources: []string{"pods", "namespaces", "configmaps"}},
		}}
	}
	mu := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "gavel"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mutate.gavel.io", AdmissionReviewVersions: []string{"v1"}, SideEffects: &none,
			FailurePolicy: &fail, TimeoutSeconds: &timeout, NamespaceSelector: exclude,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr(url + "/mutate"), CABundle: e.CAPEM},
			Rules:        rule(admissionregistrationv1.Create, admissionregistrationv1.Update),
		}},
	}
	va := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "gavel"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "validate.gavel.io", AdmissionReviewVersions: []string{"v1"}, SideEffects: &none,
			FailurePolicy: &fail, TimeoutSeconds: &timeout, NamespaceSelector: exclude,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr(url + "/validate"), CABundle: e.CAPEM},
			Rules:        rule(admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete),
		}},
	}
	ar := e.Kube.AdmissionregistrationV1()
	_ = ar.MutatingWebhookConfigurations().Delete(ctx, "gavel", metav1.DeleteOptions{})
	_ = ar.ValidatingWebhookConfigurations().Delete(ctx, "gavel", metav1.DeleteOptions{})
	if _, err := ar.MutatingWebhookConfigurations().Create(ctx, mu, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ar.ValidatingWebhookConfigurations().Create(ctx, va, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// warnings collects the warnings the API server returns.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

func testPod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}},
	}
}

func (e *env) namespace(t testing.TB, name string, labels map[string]string) {
	t.Helper()
	_, err := e.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// leader returns the holder of the controller's Lease.
func (e *env) leader() string {
	l, err := e.Kube.CoordinationV1().Leases("gavel").Get(context.Background(), "gavel-controller", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

var _ = coordinationv1.SchemeGroupVersion

func (e *env) pendingURs(t testing.TB) int {
	t.Helper()
	l, err := e.Dynamic.Resource(cluster.UpdateRequests).Namespace("gavel").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, u := range l.Items {
		if s, _, _ := unstructured.NestedString(u.Object, "status", "state"); s == "Pending" || s == "" {
			n++
		}
	}
	return n
}

func (e *env) configMap(ns, name string) (*corev1.ConfigMap, error) {
	return e.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
}

// resourceReports returns the reports of gvr in namespace ns by the name
// of the resource their scope names (one report per resource, named after
// its UID and owned by it: the others are left out).
func (e *env) resourceReports(ctx context.Context, gvr schema.GroupVersionResource, ns string) map[string]*unstructured.Unstructured {
	l, err := e.Dynamic.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range l.Items {
		r := &l.Items[i]
		scope, _, _ := unstructured.NestedStringMap(r.Object, "scope")
		owners := r.GetOwnerReferences()
		if scope["uid"] == "" || scope["uid"] != r.GetName() || len(owners) != 1 || string(owners[0].UID) != scope["uid"] || owners[0].Name != scope["name"] {
			continue
		}
		out[scope["name"]] = r
	}
	return out
}

// reportEntry returns the entry of a policy with the result given in the
// PolicyReport of the resource named in namespace ns, nil when there is
// none (or no such report).
func (e *env) reportEntry(ctx context.Context, ns, policy, result, resource string) map[string]any {
	r := e.resourceReports(ctx, cluster.PolicyReports, ns)[resource]
	if r == nil {
		return nil
	}
	results, _, _ := unstructured.NestedSlice(r.Object, "results")
	for _, x := range results {
		m, _ := x.(map[string]any)
		if m["result"] == result && m["policy"] == policy {
			return m
		}
	}
	return nil
}

// TestScenarios runs the scenarios of the issue in order on one cluster:
// they share the webhook and the controllers.
func TestScenarios(t *testing.T) {
	e := suite
	ctx := context.Background()
	if err := e.ApplyFile(ctx, filepath.Join("testdata", "policies.yaml")); err != nil {
		t.Fatal(err)
	}
	e.namespace(t, "e2e", nil)
	e.namespace(t, "gavel-src", nil)
	port, _ := freePort()
	e.gavel(t, "webhook", "-controller=false", "-listen", fmt.Sprintf("127.0.0.1:%d", port))
	c1 := e.gavel(t, "controller-1", "-webhook=false")
	e.webhooks(t, fmt.Sprintf("https://127.0.0.1:%d", port))
	eventually(t, 30*time.Second, "a leader", func() bool { return e.leader() == "controller-1" })

	var warns warnings
	wcfg := rest.CopyConfig(e.Config)
	wcfg.WarningHandler = &warns
	wkube := kubernetes.NewForConfigOrDie(wcfg)
	pods := wkube.CoreV1().Pods("e2e")

	t.Run("EnforceDenied", func(t *testing.T) {
		// the webhook may start before it has seen every policy: retry
		var err error
		eventually(t, 30*time.Second, "the denial", func() bool {
			_, err = pods.Create(ctx, testPod("e2e", "no-team", nil), metav1.CreateOptions{})
			if err == nil {
				_ = pods.Delete(ctx, "no-team", metav1.DeleteOptions{})
			}
			return err != nil
		})
		want := "admission webhook \"validate.gavel.io\" denied the request: \n\nresource Pod/e2e/no-team was blocked due to the following policies \n\nrequire-team:\n  check-team: 'validation error: label `team` is required. rule check-team failed at path /metadata/labels/team/'\n"
		if err.Error() != want {
			t.Errorf("denial:\n%q\nwant\n%q", err.Error(), want)
		}
		// the PolicyViolation event of the denial, on the ClusterPolicy
		// (in default), related to the Pod, as upstream records it
		var seen []string
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("PolicyViolation events in default: %q", seen)
			}
		})
		eventually(t, 30*time.Second, "the PolicyViolation event", func() bool {
			evs, err := e.Kube.EventsV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "reason=PolicyViolation"})
			if err != nil {
				t.Fatal(err)
			}
			seen = seen[:0]
			for _, ev := range evs.Items {
				seen = append(seen, ev.Note)
				if ev.Regarding.Kind == "ClusterPolicy" && ev.Regarding.Name == "require-team" && ev.Regarding.APIVersion == "kyverno.io/v1" &&
					ev.Related != nil && ev.Related.Kind == "Pod" && ev.Related.Namespace == "e2e" && ev.Related.Name == "no-team" &&
					ev.Type == "Warning" && ev.Action == "Resource Blocked" && ev.ReportingController == "kyverno-admission" &&
					strings.HasPrefix(ev.Note, "Pod e2e/no-team: [check-team] fail (blocked); validation error: label `team` is required.") {
					return true
				}
			}
			return false
		})
	})

	t.Run("MutationAndWarning", func(t *testing.T) {
		p, err := pods.Create(ctx, testPod("e2e", "mutated", map[string]string{"team": "a"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Labels["gavel.io/mutated"] != "true" {
			t.Errorf("labels %v: the mutation was not applied", p.Labels)
		}
		found := false
		for _, w := range warns.all() {
			found = found || strings.Contains(w, "policy warn-owner.check-owner: validation error: label `owner` is recommended")
		}
		if !found {
			t.Errorf("warnings %q: want warn-owner's", warns.all())
		}
	})

	t.Run("AuditReport", func(t *testing.T) {
		// the Pod "mutated" has no owner: a fail entry of warn-owner in
		// the Pod's report
		hasEntry := func() bool { return e.reportEntry(ctx, "e2e", "warn-owner", "fail", "mutated") != nil }
		eventually(t, 30*time.Second, "the fail entry of warn-owner", hasEntry)
		if err := pods.Delete(ctx, "mutated", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the entry removed", func() bool { return !hasEntry() })
	})

	t.Run("Generate", func(t *testing.T) {
		e.namespace(t, "gen-1", map[string]string{"gavel-e2e": "provision"})
		eventually(t, 30*time.Second, "the generated ConfigMap", func() bool {
			_, err := e.configMap("gen-1", "defaults")
			return err == nil
		})
		cm, _ := e.configMap("gen-1", "defaults")
		cm.Data["owner"] = "someone"
		if _, err := e.Kube.CoreV1().ConfigMaps("gen-1").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the manual edit reverted", func() bool {
			cm, err := e.configMap("gen-1", "defaults")
			return err == nil && cm.Data["owner"] == "gavel"
		})
		if err := e.Kube.CoreV1().Namespaces().Delete(ctx, "gen-1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// no namespace controller runs: the namespace stays Terminating,
		// and gavel deletes the downstream ConfigMap
		eventually(t, 30*time.Second, "the downstream deleted", func() bool {
			_, err := e.configMap("gen-1", "defaults")
			return apierrors.IsNotFound(err)
		})
	})

	t.Run("CloneSynchronized", func(t *testing.T) {
		src := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "gavel-src"}, Data: map[string]string{"level": "1"}}
		if _, err := e.Kube.CoreV1().ConfigMaps("gavel-src").Create(ctx, src, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.namespace(t, "clone-1", map[string]string{"gavel-e2e": "clone"})
		eventually(t, 30*time.Second, "the clone", func() bool {
			cm, err := e.configMap("clone-1", "settings")
			return err == nil && cm.Data["level"] == "1"
		})
		// the source changes: the clone follows
		eventually(t, 30*time.Second, "the source updated", func() bool {
			cur, err := e.configMap("gavel-src", "settings")
			if err != nil {
				return false
			}
			cur.Data["level"] = "2"
			_, err = e.Kube.CoreV1().ConfigMaps("gavel-src").Update(ctx, cur, metav1.UpdateOptions{})
			return err == nil
		})
		eventually(t, 30*time.Second, "the clone synchronized", func() bool {
			cm, err := e.configMap("clone-1", "settings")
			return err == nil && cm.Data["level"] == "2"
		})
	})

	t.Run("PolicyException", func(t *testing.T) {
		exc := map[string]any{
			"apiVersion": "kyverno.io/v2", "kind": "PolicyException",
			"metadata": map[string]any{"name": "exempt", "namespace": "gavel"},
			"spec": map[string]any{
				"exceptions": []any{map[string]any{"policyName": "require-team", "ruleNames": []any{"check-team"}}},
				"match": map[string]any{"any": []any{map[string]any{"resources": map[string]any{
					"kinds": []any{"Pod"}, "names": []any{"exempt-*"}}}}},
			},
		}
		if err := e.Apply(ctx, exc); err != nil {
			t.Fatal(err)
		}
		i := 0
		eventually(t, 30*time.Second, "the exception in force", func() bool {
			i++
			_, err := pods.Create(ctx, testPod("e2e", fmt.Sprintf("exempt-%d", i), nil), metav1.CreateOptions{})
			return err == nil
		})
		// other Pods are still denied
		if _, err := pods.Create(ctx, testPod("e2e", "not-exempt", nil), metav1.CreateOptions{}); err == nil {
			t.Error("a Pod outside the exception was admitted")
		}
	})

	t.Run("CELAuthorizerAndParams", func(t *testing.T) { celScenario(t, e) })

	t.Run("BrokenPolicyKeepsPreviousSet", func(t *testing.T) {
		ri := e.Dynamic.Resource(cluster.ClusterPolicies)
		p, err := ri.Get(ctx, "require-team", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rules, _, _ := unstructured.NestedSlice(p.Object, "spec", "rules")
		rules[0].(map[string]any)["validate"].(map[string]any)["deny"] = map[string]any{"conditions": "not a list"}
		_ = unstructured.SetNestedSlice(p.Object, rules, "spec", "rules")
		if _, err := ri.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		var reason, message string
		eventually(t, 30*time.Second, "the Ready condition False", func() bool {
			p, err := ri.Get(ctx, "require-team", metav1.GetOptions{})
			if err != nil {
				return false
			}
			conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
			for _, c := range conds {
				m := c.(map[string]any)
				if m["type"] == "Ready" && m["status"] == "False" {
					reason, _ = m["reason"].(string)
					message, _ = m["message"].(string)
					return true
				}
			}
			return false
		})
		if reason != cluster.ReasonFailed || message == "" {
			t.Errorf("condition reason %q message %q", reason, message)
		}
		eventually(t, 30*time.Second, "the Warning event", func() bool {
			l, err := e.Kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false
			}
			for _, ev := range l.Items {
				if ev.InvolvedObject.Name == "require-team" && ev.Reason == cluster.EventReasonPolicyError {
					return true
				}
			}
			return false
		})
		// the previous version still denies
		if _, err := pods.Create(ctx, testPod("e2e", "still-denied", nil), metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "require-team") {
			t.Errorf("after the broken update: %v, want require-team's denial", err)
		}
	})

	t.Run("RestartFinishesPendingUpdateRequests", func(t *testing.T) {
		c1.Kill()
		const n = 5
		before := e.pendingURs(t)
		for i := range n {
			e.namespace(t, fmt.Sprintf("pending-%d", i), map[string]string{"gavel-e2e": "provision"})
		}
		if got := e.pendingURs(t) - before; got != n {
			t.Fatalf("new pending UpdateRequests with the controller down = %d, want %d", got, n)
		}
		t.Logf("%d UpdateRequests pending with no controller (%d new)", before+n, n)
		for i := range n {
			if _, err := e.configMap(fmt.Sprintf("pending-%d", i), "defaults"); err == nil {
				t.Fatalf("pending-%d generated with no controller", i)
			}
		}
		c1 = e.gavel(t, "controller-1b", "-webhook=false")
		eventually(t, 60*time.Second, "every pending request finished", func() bool {
			for i := range n {
				if _, err := e.configMap(fmt.Sprintf("pending-%d", i), "defaults"); err != nil {
					return false
				}
			}
			return e.pendingURs(t) == 0
		})
	})

	t.Run("LeaderFailover", func(t *testing.T) {
		c2 := e.gavel(t, "controller-2", "-webhook=false")
		eventually(t, 30*time.Second, "controller-1b leading", func() bool { return e.leader() == "controller-1b" })
		time.Sleep(2 * time.Second)
		if l := e.leader(); l != "controller-1b" {
			t.Fatalf("leader changed to %q with both replicas up", l)
		}
		c1.Kill() // no release: the lease must expire
		eventually(t, 30*time.Second, "controller-2 leading", func() bool { return e.leader() == "controller-2" })
		e.namespace(t, "after-failover", map[string]string{"gavel-e2e": "provision"})
		eventually(t, 30*time.Second, "the new leader generating", func() bool {
			_, err := e.configMap("after-failover", "defaults")
			return err == nil
		})
		_ = c2
	})
}
