package cluster

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/loader"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// served are the resources of a small cluster: built-in groups with
// subresources, two versions of one kind, and a custom resource.
func served() []*metav1.APIResourceList {
	res := func(name, kind string, namespaced bool) metav1.APIResource {
		return metav1.APIResource{Name: name, Kind: kind, Namespaced: namespaced}
	}
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			res("pods", "Pod", true), res("pods/exec", "PodExecOptions", true), res("pods/status", "Pod", true),
			res("pods/ephemeralcontainers", "Pod", true), res("configmaps", "ConfigMap", true),
			res("secrets", "Secret", true), res("namespaces", "Namespace", false),
			res("serviceaccounts", "ServiceAccount", true), res("persistentvolumeclaims", "PersistentVolumeClaim", true),
			res("replicationcontrollers", "ReplicationController", true),
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			res("deployments", "Deployment", true), res("deployments/scale", "Scale", true),
			res("daemonsets", "DaemonSet", true), res("replicasets", "ReplicaSet", true), res("statefulsets", "StatefulSet", true),
		}},
		{GroupVersion: "batch/v1", APIResources: []metav1.APIResource{res("jobs", "Job", true), res("cronjobs", "CronJob", true)}},
		{GroupVersion: "networking.k8s.io/v1", APIResources: []metav1.APIResource{
			res("ingresses", "Ingress", true), res("networkpolicies", "NetworkPolicy", true),
		}},
		{GroupVersion: "policy/v1", APIResources: []metav1.APIResource{res("poddisruptionbudgets", "PodDisruptionBudget", true)}},
		{GroupVersion: "autoscaling/v1", APIResources: []metav1.APIResource{res("horizontalpodautoscalers", "HorizontalPodAutoscaler", true)}},
		{GroupVersion: "autoscaling/v2", APIResources: []metav1.APIResource{res("horizontalpodautoscalers", "HorizontalPodAutoscaler", true)}},
		{GroupVersion: "rbac.authorization.k8s.io/v1", APIResources: []metav1.APIResource{
			res("roles", "Role", true), res("rolebindings", "RoleBinding", true),
			res("clusterroles", "ClusterRole", false), res("clusterrolebindings", "ClusterRoleBinding", false),
		}},
		{GroupVersion: "storage.k8s.io/v1", APIResources: []metav1.APIResource{res("storageclasses", "StorageClass", false)}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{res("widgets", "Widget", true)}},
	}
}

func webhookPolicies(t *testing.T) *engine.PolicySet {
	return policiesFile(t, "webhook-policies.yaml")
}

// policiesFile compiles the policies of a file of testdata.
func policiesFile(t *testing.T, name string) *engine.PolicySet {
	t.Helper()
	var s loader.Set
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := s.Read(f, name); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(s.Policies...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func webhookOptions() WebhookOptions {
	port := int32(443)
	return WebhookOptions{
		Service:  &admv1.ServiceReference{Namespace: "gavel", Name: "gavel", Port: &port},
		CABundle: []byte("CA"),
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"gavel"},
		}}},
	}
}

// The webhook configurations of a set of policies, as upstream derives
// them: a golden file, and the points the issue names checked one by one.
func TestWebhookConfigurations(t *testing.T) {
	mwc, vwc, missing := WebhookConfigurations(webhookPolicies(t), served(), webhookOptions())
	checkWebhooksGolden(t, "webhooks.golden.yaml", mwc, vwc)
	if !slices.Equal(missing, []string{"Gadget"}) {
		t.Errorf("missing = %v, want [Gadget]", missing)
	}

	rules := map[string]string{}
	for _, line := range WebhookRules(mwc, vwc) {
		name, r, _ := strings.Cut(line, ": ")
		rules[name] = r
	}
	for _, tt := range []struct{ webhook, want string }{
		{"validate.gavel.io-fail", "/v1 pods/exec [CONNECT]"},
		{"validate.gavel.io-fail", "networking.k8s.io/v1 ingresses [CREATE UPDATE]"},
		{"validate.gavel.io-fail", "policy/v1 poddisruptionbudgets [CREATE UPDATE]"},
		{"validate.gavel.io-fail", "autoscaling/v2 horizontalpodautoscalers [CREATE UPDATE]"},
		{"validate.gavel.io-fail", "rbac.authorization.k8s.io/v1 clusterrolebindings [CREATE UPDATE]"},
		{"validate.gavel.io-fail", "storage.k8s.io/v1 storageclasses"},
		{"validate.gavel.io-fail", "persistentvolumeclaims"},
		{"validate.gavel.io-fail", "/v1 configmaps,persistentvolumeclaims,pods,pods/ephemeralcontainers,replicationcontrollers [CREATE UPDATE DELETE CONNECT]"},
		{"validate.gavel.io-fail", "apps/v1 daemonsets,deployments,replicasets,statefulsets [CREATE UPDATE DELETE CONNECT]"},
		{"validate.gavel.io-ignore", "*/* *,pods/ephemeralcontainers [CREATE UPDATE DELETE CONNECT]"},
		{"mutate.gavel.io-ignore", "/v1 namespaces [CREATE UPDATE]"},
		{"mutate.gavel.io-ignore", "/v1 serviceaccounts [CREATE UPDATE]"},
		{"mutate.gavel.io-ignore", "apps/v1 deployments [CREATE UPDATE]"},
		{"validate.gavel.io-ignore-finegrained-widgets", "example.com/v1 widgets"},
		{"downstream.gavel.io", "networking.k8s.io/v1 networkpolicies [UPDATE DELETE]"},
		{"downstream.gavel.io", "configmaps,secrets [UPDATE DELETE]"},
		{"clone-source.gavel.io", "configmaps,secrets [UPDATE DELETE]"},
	} {
		if !strings.Contains(rules[tt.webhook], tt.want) {
			t.Errorf("%s: rules %q lack %q", tt.webhook, rules[tt.webhook], tt.want)
		}
	}
	// admission: false keeps a policy out; mutate-existing is validating
	if strings.Contains(rules["validate.gavel.io-fail"], "secrets") {
		t.Errorf("the admission: false policy's Secrets reached a webhook: %s", rules["validate.gavel.io-fail"])
	}
	for _, w := range vwc.Webhooks {
		if w.Name == "validate.gavel.io-ignore-finegrained-widgets" {
			if w.ClientConfig.Service == nil || *w.ClientConfig.Service.Path != "/validate/ignore/finegrained/widgets" || len(w.MatchConditions) != 1 {
				t.Errorf("fine-grained webhook: %+v", w)
			}
		}
	}
	for _, w := range mwc.Webhooks {
		if w.Name == "mutate.gavel.io-ignore" && *w.TimeoutSeconds != 15 {
			t.Errorf("mutate.gavel.io-ignore timeout %d, want the policy's 15", *w.TimeoutSeconds)
		}
	}
}

// A kind with a wildcard covers the narrower entries: the namespaced
// Policy's "*" does not repeat the namespaced resources the others name.
func TestHookEntryCovers(t *testing.T) {
	e := func(g, v, r, sub string, scope admv1.ScopeType) hookEntry {
		return hookEntry{group: g, version: v, resource: r, sub: sub, scope: scope, op: admv1.Create}
	}
	all, ns := admv1.AllScopes, admv1.NamespacedScope
	for _, tt := range []struct {
		a, b hookEntry
		want bool
	}{
		{e("*", "*", "*", "*", all), e("", "v1", "pods", "exec", ns), true},
		{e("*", "*", "*", "", all), e("", "v1", "pods", "", ns), true},
		{e("*", "*", "*", "", all), e("", "v1", "pods", "exec", ns), false},
		{e("*", "*", "*", "", ns), e("", "v1", "namespaces", "", all), false},
		{e("", "v1", "pods", "*", all), e("", "v1", "pods", "exec", ns), true},
		{e("*", "*", "*", "scale", all), e("apps", "v1", "deployments", "scale", ns), true},
		{e("", "v1", "pods", "", all), e("", "v1", "pods", "", all), false},
		{e("apps", "*", "deployments", "", all), e("apps", "v1", "deployments", "", ns), true},
	} {
		if got := tt.a.covers(tt.b); got != tt.want {
			t.Errorf("%+v covers %+v = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// checkWebhooksGolden compares the webhook configurations, as YAML, with
// testdata/name (rewritten with -update).
func checkWebhooksGolden(t *testing.T, name string, mwc, vwc any) {
	t.Helper()
	var buf bytes.Buffer
	for _, o := range []any{mwc, vwc} {
		data, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(data)
	}
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("webhook configurations differ from %s (go test -run %s -update):\n%s", golden, t.Name(), buf.String())
	}
}

// ValidatePolicies adds the policies' own webhook: every version of the
// ClusterPolicies and Policies, created or updated, on PolicyPath, with
// failure policy Ignore; without it, none.
func TestPolicyWebhook(t *testing.T) {
	opts := webhookOptions()
	_, vwc, _ := WebhookConfigurations(webhookPolicies(t), served(), opts)
	if slices.ContainsFunc(vwc.Webhooks, func(w admv1.ValidatingWebhook) bool { return w.Name == PolicyWebhookName }) {
		t.Fatal("the policy webhook without ValidatePolicies")
	}
	opts.ValidatePolicies = true
	_, vwc, _ = WebhookConfigurations(webhookPolicies(t), served(), opts)
	i := slices.IndexFunc(vwc.Webhooks, func(w admv1.ValidatingWebhook) bool { return w.Name == PolicyWebhookName })
	if i < 0 {
		t.Fatal("no policy webhook with ValidatePolicies")
	}
	w := vwc.Webhooks[i]
	rules := WebhookRules(&admv1.MutatingWebhookConfiguration{}, &admv1.ValidatingWebhookConfiguration{Webhooks: []admv1.ValidatingWebhook{w}})
	if want := []string{PolicyWebhookName + ": kyverno.io/* clusterpolicies,policies [CREATE UPDATE]"}; !slices.Equal(rules, want) {
		t.Errorf("rules %q, want %q", rules, want)
	}
	if w.ClientConfig.Service == nil || *w.ClientConfig.Service.Path != PolicyPath || *w.FailurePolicy != admv1.Ignore ||
		*w.SideEffects != admv1.SideEffectClassNone || w.NamespaceSelector != nil {
		t.Errorf("policy webhook: %+v", w)
	}
}
