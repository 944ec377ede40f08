//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gavelpolicy/gavel/cluster"
)

var (
	validatingPolicies = schemaGVR("policies.kyverno.io", "v1", "validatingpolicies")
	mutatingPolicies   = schemaGVR("policies.kyverno.io", "v1", "mutatingpolicies")
)

// TestCELPolicies runs the CEL policy kinds in gavel as the chart
// deploys it (the ServiceAccount's rights, webhooks derived from the
// policies): a ValidatingPolicy denies a Pod at admission and its Audit
// twin reports from the background scans, a MutatingPolicy patches a Pod
// at admission, a MutatingPolicy with mutateExisting patches an existing
// object through an UpdateRequest, and a broken ValidatingPolicy keeps
// its previous version and says why in its status.
func TestCELPolicies(t *testing.T) {
	e := suite
	ctx := context.Background()
	e.stopGavel()
	e.chartWebhooks(t)
	e.namespace(t, "cel-a", map[string]string{"gavel-cel": "true"})
	if err := e.ApplyFile(ctx, filepath.Join("testdata", "celkinds.yaml")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range []string{"cel-require-team", "cel-audit-owner"} {
			_ = e.Dynamic.Resource(validatingPolicies).Delete(ctx, n, metav1.DeleteOptions{})
		}
		for _, n := range []string{"cel-add-env", "cel-label-target"} {
			_ = e.Dynamic.Resource(mutatingPolicies).Delete(ctx, n, metav1.DeleteOptions{})
		}
	})
	p, _, _ := e.deployed(t, "celkinds")
	t.Cleanup(p.Stop)
	eventually(t, 30*time.Second, "the webhooks of the CEL policies", func() bool {
		names := strings.Join(e.webhookNames(), " ")
		return strings.Contains(names, "validate.gavel.io-fail-finegrained-selectors-") &&
			strings.Contains(names, "mutate.gavel.io-fail-finegrained-selectors-") &&
			strings.Contains(names, "validate.gavel.io-fail-finegrained-mutatingpolicy.cel-label-target")
	})
	pods := e.Kube.CoreV1().Pods("cel-a")

	t.Run("StatusConditions", func(t *testing.T) {
		// upstream's conditions, as the policy library's tests assert them
		eventually(t, 30*time.Second, "cel-require-team ready", func() bool {
			u, err := e.Dynamic.Resource(validatingPolicies).Get(ctx, "cel-require-team", metav1.GetOptions{})
			if err != nil {
				return false
			}
			ready, _, _ := unstructured.NestedBool(u.Object, "status", "conditionStatus", "ready")
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditionStatus", "conditions")
			got := map[string]string{}
			for _, c := range conds {
				m := c.(map[string]any)
				got[m["type"].(string)] = m["status"].(string) + " " + m["message"].(string)
			}
			return ready && len(conds) == 2 && got[cluster.ConditionWebhookConfigured] == "True Webhook configured." &&
				got[cluster.ConditionRBACPermissionsGranted] == "True Policy is ready for reporting."
		})
	})

	t.Run("ValidatingPolicyDenies", func(t *testing.T) {
		var err error
		eventually(t, 30*time.Second, "the denial", func() bool {
			_, err = pods.Create(ctx, testPod("cel-a", "no-team", nil), metav1.CreateOptions{})
			if err == nil {
				_ = pods.Delete(ctx, "no-team", metav1.DeleteOptions{})
			}
			return err != nil
		})
		if !strings.Contains(err.Error(), "denied the request") || !strings.Contains(err.Error(), "the team label is required") {
			t.Errorf("denial: %v", err)
		}
	})

	t.Run("MutatingPolicyPatches", func(t *testing.T) {
		pod, err := pods.Create(ctx, testPod("cel-a", "with-team", map[string]string{"team": "a"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pod.Labels["env"] != "e2e" || pod.Labels["team"] != "a" {
			t.Errorf("labels %v: the MutatingPolicy did not patch the Pod", pod.Labels)
		}
	})

	t.Run("AuditTwinReports", func(t *testing.T) {
		// the Pod with-team has no owner: a fail entry of the Audit twin
		// from the background scans, in the Pod's report
		var entry map[string]any
		eventually(t, 45*time.Second, "the fail entry of cel-audit-owner", func() bool {
			entry = e.reportEntry(ctx, "cel-a", "cel-audit-owner", "fail", "with-team")
			return entry != nil
		})
		props, _ := entry["properties"].(map[string]any)
		if entry["source"] != "KyvernoValidatingPolicy" || entry["policy"] != "cel-audit-owner" ||
			entry["message"] != "the owner label is recommended" || props["process"] != "background scan" {
			t.Errorf("entry %v", entry)
		}
	})

	t.Run("MutateExistingThroughUpdateRequest", func(t *testing.T) {
		cms := e.Kube.CoreV1().ConfigMaps("cel-a")
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "target"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "trigger"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the target patched", func() bool {
			cm, err := cms.Get(ctx, "target", metav1.GetOptions{})
			return err == nil && cm.Labels["mutated-by"] == "trigger"
		})
		eventually(t, 30*time.Second, "the UpdateRequest done", func() bool { return e.pendingURs(t) == 0 })
	})

	t.Run("BrokenValidatingPolicyKeepsItsPreviousVersion", func(t *testing.T) {
		ri := e.Dynamic.Resource(validatingPolicies)
		u, err := ri.Get(ctx, "cel-require-team", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		good, _, _ := unstructured.NestedSlice(u.Object, "spec", "validations")
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"expression": "object.metadata.labels.team +", "message": "broken"}}, "spec", "validations")
		if _, err := ri.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		var msg string
		eventually(t, 30*time.Second, "the broken policy's status", func() bool {
			u, err := ri.Get(ctx, "cel-require-team", metav1.GetOptions{})
			if err != nil {
				return false
			}
			ready, _, _ := unstructured.NestedBool(u.Object, "status", "conditionStatus", "ready")
			msg, _, _ = unstructured.NestedString(u.Object, "status", "conditionStatus", "message")
			return !ready && strings.Contains(msg, "spec.validations[0].expression")
		})
		// the previous version still denies
		_, err = pods.Create(ctx, testPod("cel-a", "no-team-2", nil), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "the team label is required") {
			t.Errorf("the previous version does not serve: %v", err)
		}
		// and a good version clears the status
		u, err = ri.Get(ctx, "cel-require-team", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedSlice(u.Object, good, "spec", "validations")
		if _, err := ri.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the status ready again", func() bool {
			u, err := ri.Get(ctx, "cel-require-team", metav1.GetOptions{})
			ready, _, _ := unstructured.NestedBool(u.Object, "status", "conditionStatus", "ready")
			return err == nil && ready
		})
		t.Logf("status message of the broken version: %s", msg)
	})
}
