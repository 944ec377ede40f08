package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	admv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The controller writes the configurations the policies need, owned by
// its ClusterRole, leaves them alone while nothing changes and updates
// them when a policy does.
func TestWebhookControllerWritesConfigurations(t *testing.T) {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gavel", UID: "role-uid"}}
	var src *PolicySource
	var wc *WebhookController
	h, dyn := fakeHost(t, []runtime.Object{role}, []runtime.Object{requireLabel("need-team", "team", false)}, func(h *Host) {
		h.kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = served()
		var err error
		if src, err = NewPolicySource(h, PolicySourceOptions{}); err != nil {
			t.Fatal(err)
		}
		opts := webhookOptions()
		opts.OwnerClusterRole = "gavel"
		wc = NewWebhookController(h, src, opts, 0)
	})
	if !src.WaitForSync(t.Context()) {
		t.Fatal("not synced")
	}
	ctx := t.Context()
	if err := wc.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	ar := h.kube.AdmissionregistrationV1()
	vwc, err := ar.ValidatingWebhookConfigurations().Get(ctx, "gavel", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(vwc.Webhooks) != 1 || vwc.Webhooks[0].Name != "validate.gavel.io-fail" ||
		!strings.Contains(describeRules(vwc.Webhooks[0].Rules), "pods") {
		t.Errorf("validating webhooks: %v", WebhookRules(&admv1.MutatingWebhookConfiguration{}, vwc))
	}
	if len(vwc.OwnerReferences) != 1 || vwc.OwnerReferences[0].UID != "role-uid" {
		t.Errorf("owners %v, want the ClusterRole gavel", vwc.OwnerReferences)
	}
	if _, err := ar.MutatingWebhookConfigurations().Get(ctx, "gavel", metav1.GetOptions{}); err != nil {
		t.Errorf("the mutating configuration, empty, is written too: %v", err)
	}

	writes := 0
	h.kube.(interface {
		PrependReactor(verb, resource string, reaction k8stesting.ReactionFunc)
	}).PrependReactor("update", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if strings.HasSuffix(a.GetResource().Resource, "webhookconfigurations") {
			writes++
		}
		return false, nil, nil
	})
	if err := wc.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if writes != 0 {
		t.Errorf("%d writes with nothing changed", writes)
	}

	// a policy on Ingress: its kind reaches the webhook
	p := requireLabel("ingress-team", "team", false)
	spec := p.Object["spec"].(map[string]any)
	spec["failurePolicy"] = "Ignore"
	rule := spec["rules"].([]any)[0].(map[string]any)
	rule["match"] = map[string]any{"any": []any{map[string]any{"resources": map[string]any{"kinds": []any{"Ingress"}}}}}
	if _, err := dyn.Resource(ClusterPolicies).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new policy", func() bool { return len(src.Set().Policies()) == 2 })
	if err := wc.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	vwc, _ = ar.ValidatingWebhookConfigurations().Get(ctx, "gavel", metav1.GetOptions{})
	rules := WebhookRules(&admv1.MutatingWebhookConfiguration{}, vwc)
	if writes != 1 || len(rules) != 2 || !strings.Contains(rules[1], "validate.gavel.io-ignore: networking.k8s.io/v1 ingresses") {
		t.Errorf("after the Ingress policy: %d writes, webhooks %q", writes, rules)
	}
}

func TestDetectKyverno(t *testing.T) {
	h, _ := fakeHost(t, nil, nil, nil)
	if err := DetectKyverno(t.Context(), h.kube); err != nil {
		t.Fatalf("no Kyverno: %v", err)
	}
	vwc := &admv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "kyverno-policy-validating-webhook-cfg"}}
	if _, err := h.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(t.Context(), vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := DetectKyverno(t.Context(), h.kube)
	var kerr *KyvernoInstalledError
	if !errors.As(err, &kerr) || len(kerr.Found) != 1 || !strings.Contains(err.Error(), "ValidatingWebhookConfiguration kyverno-policy-validating-webhook-cfg") {
		t.Errorf("with Kyverno's webhook configuration: %v", err)
	}
}

// With a WebhookController, a policy is written Ready once the webhook
// configurations that serve it are written, not when it compiles, as
// upstream's webhook controller writes the status: a request right after
// Ready reaches its webhook.
func TestReadyWhenServed(t *testing.T) {
	var src *PolicySource
	var wc *WebhookController
	_, dyn := fakeHost(t, nil, []runtime.Object{requireLabel("need-team", "team", false)}, func(h *Host) {
		h.kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = served()
		var err error
		if src, err = NewPolicySource(h, PolicySourceOptions{ReportStatus: true}); err != nil {
			t.Fatal(err)
		}
		wc = NewWebhookController(h, src, webhookOptions(), 0)
	})
	ctx := t.Context()
	if !src.WaitForSync(ctx) {
		t.Fatal("not synced")
	}
	readyCond := func() *metav1.Condition {
		u, err := dyn.Resource(ClusterPolicies).Get(ctx, "need-team", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return readCondition(u.Object, statusClassic, "Ready")
	}
	// the status worker had its chance: compiled, not yet served
	eventually(t, "the status queue drained", func() bool { return src.status.Len() == 0 })
	time.Sleep(50 * time.Millisecond)
	if c := readyCond(); c != nil {
		t.Fatalf("Ready written before the webhooks serve the policy: %+v", c)
	}
	if err := wc.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Ready once served", func() bool {
		c := readyCond()
		return c != nil && c.Status == metav1.ConditionTrue
	})

	// a broken version is reported at once, served or not
	bad := requireLabel("need-team", "team", true)
	bad.SetGeneration(2)
	cur, err := dyn.Resource(ClusterPolicies).Get(ctx, "need-team", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bad.Object["status"] = cur.Object["status"]
	if _, err := dyn.Resource(ClusterPolicies).Update(ctx, bad, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Ready False with the error", func() bool {
		c := readyCond()
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == ReasonFailed
	})
}
