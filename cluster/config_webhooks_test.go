package cluster

import (
	"reflect"
	"strings"
	"testing"

	admv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
)

// upstreamWebhooks is the default of upstream's chart (and docs) for the
// webhooks key: a list of one object.
const upstreamWebhooks = `[{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system"]},{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kyverno"]}],"matchLabels":null}}]`

func notIn(key string, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpNotIn, Values: values}
}

// The webhook keys of the ConfigMap: upstream's formats, and malformed
// values ignored with an error naming the key.
func TestParseWebhookKeys(t *testing.T) {
	const name = "kubernetes.io/metadata.name"
	for _, tc := range []struct {
		name      string
		data      map[string]string
		want      Config
		errorKeys []string
	}{
		{name: "unset", data: map[string]string{}, want: Config{}},
		{name: "empty values", data: map[string]string{ConfigWebhooks: "", ConfigWebhookLabels: " ", ConfigMatchConditions: ""}, want: Config{}},
		{
			name: "upstream's default list",
			data: map[string]string{ConfigWebhooks: upstreamWebhooks},
			want: Config{Webhooks: WebhookSelectors{NamespaceSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{notIn(name, "kube-system"), notIn(name, "kyverno")},
			}}},
		},
		{
			name: "an object",
			data: map[string]string{ConfigWebhooks: `{"objectSelector":{"matchLabels":{"gavel":"on"}}}`},
			want: Config{Webhooks: WebhookSelectors{ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"gavel": "on"}}}},
		},
		{
			name: "a list of two: both required",
			data: map[string]string{ConfigWebhooks: `[{"namespaceSelector":{"matchLabels":{"a":"1"}}},{"namespaceSelector":{"matchExpressions":[{"key":"b","operator":"NotIn","values":["2"]}]},"objectSelector":{"matchLabels":{"c":"3"}}}]`},
			want: Config{Webhooks: WebhookSelectors{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "1"}, MatchExpressions: []metav1.LabelSelectorRequirement{notIn("b", "2")}},
				ObjectSelector:    &metav1.LabelSelector{MatchLabels: map[string]string{"c": "3"}},
			}},
		},
		{
			name: "annotations, labels and match conditions",
			data: map[string]string{
				ConfigWebhookAnnotations: `{"admissions.enforcer/disabled":"true"}`,
				ConfigWebhookLabels:      `{"team":"platform"}`,
				ConfigMatchConditions:    `[{"name":"not-leases","expression":"request.resource.resource != 'leases'"}]`,
			},
			want: Config{
				WebhookAnnotations: map[string]string{"admissions.enforcer/disabled": "true"},
				WebhookLabels:      map[string]string{"team": "platform"},
				MatchConditions:    []admv1.MatchCondition{{Name: "not-leases", Expression: "request.resource.resource != 'leases'"}},
			},
		},
		{
			name: "malformed values ignored, the others kept",
			data: map[string]string{
				ConfigWebhooks:           `{"namespaceSelector":`,
				ConfigWebhookAnnotations: `["a"]`,
				ConfigWebhookLabels:      `{"team":"platform"}`,
				ConfigMatchConditions:    `{"name":"x"}`,
			},
			want:      Config{WebhookLabels: map[string]string{"team": "platform"}},
			errorKeys: []string{ConfigWebhooks, ConfigWebhookAnnotations, ConfigMatchConditions},
		},
		{
			name:      "an invalid selector operator",
			data:      map[string]string{ConfigWebhooks: `{"namespaceSelector":{"matchExpressions":[{"key":"a","operator":"Near"}]}}`},
			errorKeys: []string{ConfigWebhooks},
		},
		{
			name:      "a match condition without a name",
			data:      map[string]string{ConfigMatchConditions: `[{"expression":"true"}]`},
			errorKeys: []string{ConfigMatchConditions},
		},
		{
			name:      "repeated match condition names",
			data:      map[string]string{ConfigMatchConditions: `[{"name":"a","expression":"true"},{"name":"a","expression":"false"}]`},
			errorKeys: []string{ConfigMatchConditions},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ParseConfig(tc.data)
			var keys []string
			for _, err := range c.Errors {
				for _, k := range []string{ConfigWebhooks, ConfigWebhookAnnotations, ConfigWebhookLabels, ConfigMatchConditions} {
					if strings.HasPrefix(err.Error(), "configuration key "+k+":") {
						keys = append(keys, k)
					}
				}
			}
			if !reflect.DeepEqual(keys, tc.errorKeys) {
				t.Errorf("errors %v, want errors of the keys %v", c.Errors, tc.errorKeys)
			}
			got := Config{Webhooks: c.Webhooks, WebhookAnnotations: c.WebhookAnnotations, WebhookLabels: c.WebhookLabels, MatchConditions: c.MatchConditions}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// The configuration's webhook keys in the webhook configurations: a
// golden file, and the points upstream defines checked one by one.
func TestWebhookConfigurationsWithConfig(t *testing.T) {
	opts := webhookOptions()
	opts.Config = ParseConfig(map[string]string{
		ConfigWebhooks:           upstreamWebhooks,
		ConfigWebhookAnnotations: `{"admissions.enforcer/disabled":"true"}`,
		ConfigWebhookLabels:      `{"team":"platform","webhook.gavel.io/managed-by":"someone"}`,
		ConfigMatchConditions:    `[{"name":"not-leases","expression":"request.resource.resource != 'leases'"}]`,
	})
	if len(opts.Config.Errors) > 0 {
		t.Fatal(opts.Config.Errors)
	}
	mwc, vwc, _ := WebhookConfigurations(webhookPolicies(t), served(), opts)
	checkWebhooksGolden(t, "webhooks-config.golden.yaml", mwc, vwc)

	for _, meta := range []metav1.ObjectMeta{mwc.ObjectMeta, vwc.ObjectMeta} {
		if meta.Labels["team"] != "platform" || meta.Labels[LabelWebhookManagedBy] != "gavel" {
			t.Errorf("%s: labels %v, want team=platform and gavel's own", meta.Name, meta.Labels)
		}
		if meta.Annotations["admissions.enforcer/disabled"] != "true" {
			t.Errorf("%s: annotations %v", meta.Name, meta.Annotations)
		}
	}
	type hookView struct {
		name       string
		ns, obj    *metav1.LabelSelector
		conditions []admv1.MatchCondition
	}
	var hooks []hookView
	for _, w := range mwc.Webhooks {
		hooks = append(hooks, hookView{w.Name, w.NamespaceSelector, w.ObjectSelector, w.MatchConditions})
	}
	for _, w := range vwc.Webhooks {
		hooks = append(hooks, hookView{w.Name, w.NamespaceSelector, w.ObjectSelector, w.MatchConditions})
	}
	fine := 0
	for _, w := range hooks {
		downstream := w.name == DownstreamWebhookName || w.name == CloneSourceWebhookName
		hasKubeSystem := w.ns != nil && reflect.DeepEqual(w.ns.MatchExpressions[len(w.ns.MatchExpressions)-2:],
			[]metav1.LabelSelectorRequirement{notIn("kubernetes.io/metadata.name", "kube-system"), notIn("kubernetes.io/metadata.name", "kyverno")})
		if hasKubeSystem == downstream {
			t.Errorf("%s: namespace selector %v (the configuration's on resource webhooks only)", w.name, w.ns)
		}
		configConds := len(w.conditions) == 1 && w.conditions[0].Name == "not-leases"
		switch {
		case downstream:
			if len(w.conditions) != 0 {
				t.Errorf("%s: match conditions %v", w.name, w.conditions)
			}
		case strings.Contains(w.name, "-finegrained-"):
			fine++
			if configConds || len(w.conditions) == 0 {
				t.Errorf("%s: match conditions %v, want the policy's own (they replace the configuration's)", w.name, w.conditions)
			}
		case !configConds:
			t.Errorf("%s: match conditions %v, want the configuration's", w.name, w.conditions)
		}
	}
	if fine == 0 {
		t.Error("no fine-grained webhook: the policies of the test lost their match conditions")
	}
}

// A ConfigMap edit rebuilds the webhook configurations: its labels and
// annotations written, then the ones removed from the ConfigMap removed
// from the configurations, others' labels kept.
func TestWebhookControllerConfigChange(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kyverno", Namespace: "kyverno"}, Data: map[string]string{
		ConfigWebhookLabels:      `{"team":"platform","tier":"1"}`,
		ConfigWebhookAnnotations: `{"note":"a"}`,
		ConfigWebhooks:           `{"objectSelector":{"matchLabels":{"gavel":"on"}}}`,
	}}
	var wc *WebhookController
	h, _ := fakeHostWith(t, Options{ConfigMap: "kyverno/kyverno"}, []runtime.Object{cm}, []runtime.Object{requireLabel("need-team", "team", false)}, func(h *Host) {
		h.kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = served()
		src, err := NewPolicySource(h, PolicySourceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wc = NewWebhookController(h, src, webhookOptions(), 0)
	})
	ctx := t.Context()
	eventually(t, "the policy", func() bool { return len(wc.src.Set().Policies()) == 1 })
	if err := wc.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	ar := h.kube.AdmissionregistrationV1()
	vwc, err := ar.ValidatingWebhookConfigurations().Get(ctx, "gavel", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if vwc.Labels["tier"] != "1" || vwc.Annotations["note"] != "a" || len(vwc.Webhooks) != 1 ||
		!reflect.DeepEqual(vwc.Webhooks[0].ObjectSelector, &metav1.LabelSelector{MatchLabels: map[string]string{"gavel": "on"}}) {
		t.Fatalf("first write: labels %v, annotations %v, webhooks %+v", vwc.Labels, vwc.Annotations, vwc.Webhooks)
	}
	// another writer's label stays
	vwc.Labels["helm"] = "release"
	if _, err := ar.ValidatingWebhookConfigurations().Update(ctx, vwc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for wc.queue.Len() > 0 { // drain what the start queued
		k, _ := wc.queue.Get()
		wc.queue.Done(k)
	}
	cm.Data = map[string]string{ConfigWebhookLabels: `{"team":"platform"}`, ConfigWebhooks: `{not json`}
	cm.ResourceVersion = "2"
	if _, err := h.kube.CoreV1().ConfigMaps("kyverno").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the configuration change queued", func() bool { return wc.queue.Len() > 0 })
	if err := wc.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	vwc, err = ar.ValidatingWebhookConfigurations().Get(ctx, "gavel", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := vwc.Labels["tier"]; ok || vwc.Labels["team"] != "platform" || vwc.Labels["helm"] != "release" {
		t.Errorf("labels %v, want team and helm, tier removed", vwc.Labels)
	}
	if _, ok := vwc.Annotations["note"]; ok || vwc.Annotations[annotationWebhookHash] == "" {
		t.Errorf("annotations %v, want note removed, the hash kept", vwc.Annotations)
	}
	if vwc.Webhooks[0].ObjectSelector != nil {
		t.Errorf("object selector %v, want none (the malformed webhooks value ignored)", vwc.Webhooks[0].ObjectSelector)
	}
}

// The webhooks of CEL policies with selectors of their own require the
// configuration's selectors too, and do not get its match conditions
// (upstream's resolveNamespaceSelector; its CEL webhooks have their
// policies' conditions only).
func TestCELWebhooksWithConfig(t *testing.T) {
	opts := webhookOptions()
	opts.NamespaceSelector = nil
	opts.Config = ParseConfig(map[string]string{
		ConfigWebhooks:        `{"namespaceSelector":{"matchLabels":{"gavel":"on"}},"objectSelector":{"matchLabels":{"o":"k"}}}`,
		ConfigMatchConditions: `[{"name":"not-leases","expression":"request.resource.resource != 'leases'"}]`,
	})
	mwc, vwc, _ := WebhookConfigurations(policiesFile(t, "webhook-cel-policies.yaml"), served(), opts)
	var own int
	check := func(name string, ns, obj *metav1.LabelSelector, mcs []admv1.MatchCondition) {
		if ns == nil || ns.MatchLabels["gavel"] != "on" || obj == nil || obj.MatchLabels["o"] != "k" {
			t.Errorf("%s: selectors %v %v, want the configuration's required", name, ns, obj)
		}
		shared := !strings.Contains(name, "-finegrained-")
		for _, mc := range mcs {
			if mc.Name == "not-leases" && !shared {
				t.Errorf("%s: the configuration's match conditions on a policy's own webhook", name)
			}
		}
		if shared && (len(mcs) != 1 || mcs[0].Name != "not-leases") {
			t.Errorf("%s: match conditions %v, want the configuration's", name, mcs)
		}
		if !shared {
			own++
		}
	}
	for _, w := range mwc.Webhooks {
		check(w.Name, w.NamespaceSelector, w.ObjectSelector, w.MatchConditions)
	}
	for _, w := range vwc.Webhooks {
		if w.Name != DownstreamWebhookName && w.Name != CloneSourceWebhookName {
			check(w.Name, w.NamespaceSelector, w.ObjectSelector, w.MatchConditions)
		}
	}
	if own == 0 {
		t.Error("no webhook of a policy's own in the CEL policies")
	}
}
