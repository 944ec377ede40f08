package cluster

import (
	"strings"
	"testing"

	admv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// celWebhooks returns the webhooks of a configuration by name.
func celWebhooks(mwc *admv1.MutatingWebhookConfiguration, vwc *admv1.ValidatingWebhookConfiguration) (map[string]admv1.MutatingWebhook, map[string]admv1.ValidatingWebhook) {
	m, v := map[string]admv1.MutatingWebhook{}, map[string]admv1.ValidatingWebhook{}
	for _, w := range mwc.Webhooks {
		m[w.Name] = w
	}
	for _, w := range vwc.Webhooks {
		v[w.Name] = w
	}
	return m, v
}

// The webhooks of the CEL kinds, as upstream's webhook controller derives
// them from matchConstraints: a golden file, and each way checked.
func TestCELWebhookConfigurations(t *testing.T) {
	set := policiesFile(t, "webhook-cel-policies.yaml")
	mwc, vwc, missing := WebhookConfigurations(set, served(), webhookOptions())
	checkWebhooksGolden(t, "webhooks-cel.golden.yaml", mwc, vwc)
	if len(missing) != 0 {
		t.Errorf("missing = %v, want none (CEL kinds name resources)", missing)
	}
	rules := map[string]string{}
	for _, line := range WebhookRules(mwc, vwc) {
		name, r, _ := strings.Cut(line, ": ")
		rules[name] += r + "; "
	}
	for _, tt := range []struct{ webhook, want string }{
		// resource rules, with the Pod controller variants'
		// (the MutatingPolicy with mutateExisting: its triggers, namespaces)
		// (and the GeneratingPolicy's trigger, serviceaccounts)
		{"validate.gavel.io-fail", "/v1 namespaces,pods,pods/ephemeralcontainers,serviceaccounts [CREATE UPDATE]"},
		{"validate.gavel.io-fail", "apps/v1 daemonsets,deployments,replicasets,statefulsets [CREATE UPDATE]"},
		{"validate.gavel.io-fail", "batch/v1 cronjobs,jobs [CREATE UPDATE]"},
		// a condition on Kyverno's libraries stays the engine's
		{"validate.gavel.io-fail", "/v1 secrets [CREATE]"},
		// the ClusterPolicy of the same name
		{"validate.gavel.io-fail", "networking.k8s.io/v1 ingresses"},
		{"mutate.gavel.io-fail", "/v1 configmaps [CREATE]"},
		{"validate.gavel.io-ignore-finegrained-validatingpolicy.labelled", "/v1 configmaps [CREATE UPDATE]"},
		{"validate.gavel.io-fail-finegrained-validatingpolicy.exact", "apps/v1 deployments/scale [CREATE]"},
		// ImageValidatingPolicy: both webhooks, its own (a timeout)
		{"validate.gavel.io-fail-finegrained-imagevalidatingpolicy.signed", "/v1 pods"},
		{"mutate.gavel.io-fail-finegrained-imagevalidatingpolicy.signed", "/v1 pods"},
	} {
		if !strings.Contains(rules[tt.webhook], tt.want) {
			t.Errorf("%s: rules %q lack %q", tt.webhook, rules[tt.webhook], tt.want)
		}
	}
	all := strings.Join(WebhookRules(mwc, vwc), "\n")
	for _, absent := range []string{"persistentvolumeclaims", "replicasets [CREATE]", "secrets [CREATE UPDATE]", "limitranges"} {
		if strings.Contains(all, absent) {
			t.Errorf("%q reached a webhook (admission disabled, the API server's kinds, a target):\n%s", absent, all)
		}
	}
	mw, vw := celWebhooks(mwc, vwc)
	labelled := vw["validate.gavel.io-ignore-finegrained-validatingpolicy.labelled"]
	if *labelled.FailurePolicy != admv1.Ignore || len(labelled.MatchConditions) != 1 || labelled.MatchConditions[0].Name != "has-labels" ||
		*labelled.ClientConfig.Service.Path != "/validate/ignore/finegrained/validatingpolicy.labelled" {
		t.Errorf("labelled: %+v", labelled)
	}
	// the API server refuses a configuration whose path has a segment
	// that is not a lowercase RFC 1123 subdomain (then no webhook of the
	// configuration is written)
	var paths []string
	for _, w := range mw {
		paths = append(paths, *w.ClientConfig.Service.Path)
	}
	for _, w := range vw {
		paths = append(paths, *w.ClientConfig.Service.Path)
	}
	for _, path := range paths {
		for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
			if errs := validation.IsDNS1123Subdomain(seg); len(errs) > 0 {
				t.Errorf("path %s: segment %q: %v", path, seg, errs)
			}
		}
	}
	exact := vw["validate.gavel.io-fail-finegrained-validatingpolicy.exact"]
	if *exact.MatchPolicy != admv1.Exact || *exact.TimeoutSeconds != 5 {
		t.Errorf("exact: matchPolicy %s, timeout %d", *exact.MatchPolicy, *exact.TimeoutSeconds)
	}
	if w := mw["mutate.gavel.io-fail-finegrained-imagevalidatingpolicy.signed"]; *w.TimeoutSeconds != 20 {
		t.Errorf("signed: timeout %d, want 20", *w.TimeoutSeconds)
	}
	// selector groups: the namespaced policies of shop share one, pinned
	// to their namespace (and the configuration's selector kept)
	var groups []admv1.ValidatingWebhook
	for name, w := range vw {
		if strings.Contains(name, "finegrained-selectors-") {
			groups = append(groups, w)
		}
	}
	if len(groups) != 2 {
		t.Fatalf("%d selector groups, want 2", len(groups))
	}
	for _, w := range groups {
		r := strings.Join(WebhookRules(&admv1.MutatingWebhookConfiguration{}, &admv1.ValidatingWebhookConfiguration{Webhooks: []admv1.ValidatingWebhook{w}}), "\n")
		switch {
		case strings.Contains(r, "statefulsets"):
			if !strings.Contains(r, "deployments") || len(w.NamespaceSelector.MatchExpressions) != 2 ||
				w.NamespaceSelector.MatchExpressions[0].Values[0] != "shop" || w.ObjectSelector != nil {
				t.Errorf("shop's group: %s, %+v", r, w.NamespaceSelector)
			}
		case strings.Contains(r, "services"):
			if w.ObjectSelector == nil || w.ObjectSelector.MatchLabels["checked"] != "true" || len(w.NamespaceSelector.MatchExpressions) != 1 {
				t.Errorf("selected's group: %s, %+v %+v", r, w.NamespaceSelector, w.ObjectSelector)
			}
		default:
			t.Errorf("unexpected selector group %s: %s", w.Name, r)
		}
	}
}

// The PolicySource's webhook sets and the webhook configurations agree:
// every webhook of its own is served by the set of its key, which holds
// the policies of the webhook.
func TestCELWebhookGroups(t *testing.T) {
	set := policiesFile(t, "webhook-cel-policies.yaml")
	groups := map[string][]string{}
	for _, p := range set.Policies() {
		g := webhookGroup(p)
		groups[g.key] = append(groups[g.key], idOf(p))
	}
	for key, want := range map[string]string{
		"validatingpolicy.labelled":    "ValidatingPolicy.labelled",
		"validatingpolicy.exact":       "ValidatingPolicy.exact",
		"imagevalidatingpolicy.signed": "ImageValidatingPolicy.signed",
	} {
		if got := strings.Join(groups[key], ","); got != want {
			t.Errorf("group %s = %s, want %s", key, got, want)
		}
	}
	shop := 0
	for key, ids := range groups {
		if strings.HasPrefix(key, selectorsPrefix) && len(ids) == 2 {
			shop++
			if strings.Join(ids, ",") != "NamespacedValidatingPolicy.shop/replicas,NamespacedValidatingPolicy.shop/statefulsets" {
				t.Errorf("group %s: %v", key, ids)
			}
		}
	}
	if shop != 1 {
		t.Errorf("groups %v: want one of shop's two policies", groups)
	}
	mwc, vwc, _ := WebhookConfigurations(set, served(), webhookOptions())
	for _, line := range WebhookRules(mwc, vwc) {
		name, _, _ := strings.Cut(line, ": ")
		if _, rest, ok := strings.Cut(name, "-finegrained-"); ok {
			found := false
			for key := range groups {
				found = found || strings.ToLower(strings.ReplaceAll(key, "/", "-")) == rest
			}
			if !found {
				t.Errorf("webhook %s has no policy set", name)
			}
		}
	}
}
