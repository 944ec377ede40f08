//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gavelpolicy/gavel/e2e/internal/testcluster"
)

// stopGavel stops every gavel process the suite started, and deletes the
// webhook configurations that name them: a test that needs the Lease and
// the webhook configurations to itself.
func (e *env) stopGavel() {
	for _, p := range e.Procs() {
		if p.Name != "etcd" && p.Name != "kube-apiserver" && p.Running() {
			p.Stop()
		}
	}
	ctx := context.Background()
	ar := e.Kube.AdmissionregistrationV1()
	_ = ar.MutatingWebhookConfigurations().Delete(ctx, "gavel", metav1.DeleteOptions{})
	_ = ar.ValidatingWebhookConfigurations().Delete(ctx, "gavel", metav1.DeleteOptions{})
}

// saKubeconfig writes a kubeconfig with a token of gavel's ServiceAccount:
// gavel runs with the chart's RBAC, nothing more.
func (e *env) saKubeconfig(t *testing.T) string {
	t.Helper()
	exp := int64(7200)
	tok, err := e.Kube.CoreV1().ServiceAccounts("gavel").CreateToken(context.Background(), "gavel",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.Dir, "sa-kubeconfig")
	if err := e.WriteKubeconfig(path, "gavel", tok.Status.Token); err != nil {
		t.Fatal(err)
	}
	return path
}

// deployed starts gavel as the chart deploys it (one process: webhook and
// controller, the webhook configurations its own to write), with the
// ServiceAccount's token; it returns the process and its webhook and
// metrics addresses.
func (e *env) deployed(t *testing.T, name string) (*testcluster.Proc, string, string) {
	t.Helper()
	port, _ := freePort()
	mport, _ := freePort()
	url := fmt.Sprintf("https://127.0.0.1:%d", port)
	p, err := e.Spawn(name, exec.Command(e.binary,
		"-kubeconfig", e.saKubeconfig(t), "-namespace", "gavel", "-identity", name,
		"-tls-cert", e.whCert, "-tls-key", e.whKey, "-ca-file", filepath.Join(e.Dir, "ca.crt"),
		"-listen", fmt.Sprintf("127.0.0.1:%d", port), "-metrics-listen", fmt.Sprintf("127.0.0.1:%d", mport),
		"-webhook-url", url, "-webhook-owner", "gavel", "-service-account", "gavel",
		"-lease-duration", "8s", "-renew-deadline", "6s", "-retry-period", "1s",
		"-scan-interval", "5s", "-tuf-url", "", "-kube-api-qps", "200"))
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, p, "msg=started")
	return p, url, fmt.Sprintf("http://127.0.0.1:%d", mport)
}

// productClient is an HTTPS client trusting the suite's CA.
func (e *env) productClient() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.CAPEM)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

func get(c *http.Client, url string) (int, string) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// webhookNames returns the names of the webhooks of gavel's configurations.
func (e *env) webhookNames() []string {
	ctx := context.Background()
	var out []string
	if m, err := e.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "gavel", metav1.GetOptions{}); err == nil {
		for _, w := range m.Webhooks {
			out = append(out, w.Name)
		}
	}
	if v, err := e.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "gavel", metav1.GetOptions{}); err == nil {
		for _, w := range v.Webhooks {
			out = append(out, w.Name)
		}
	}
	return out
}

func labelled(kind, apiVersion, ns, name string, labels map[string]any, spec map[string]any) map[string]any {
	md := map[string]any{"name": name}
	if ns != "" {
		md["namespace"] = ns
	}
	if labels != nil {
		md["labels"] = labels
	}
	obj := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}
	for k, v := range spec {
		obj[k] = v
	}
	return obj
}

// TestProduct installs gavel as a user does: the chart's CRDs, RBAC and
// webhook configurations (applied by the suite's setup), gavel running
// with the chart's ServiceAccount, webhooks derived from the policies.
func TestProduct(t *testing.T) {
	e := suite
	ctx := context.Background()
	e.stopGavel()
	e.chartWebhooks(t)
	if err := e.ApplyFile(ctx, filepath.Join("testdata", "product.yaml")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range []string{"product-require-team", "product-label-sa-and-ns", "product-beta", "product-widgets", "product-touch", "product-secret", "product-no-exec"} {
			_ = e.Dynamic.Resource(clusterPolicies).Delete(ctx, n, metav1.DeleteOptions{})
		}
	})
	for _, ns := range []string{"product-a", "product-beta"} {
		e.namespace(t, ns, nil)
	}
	p, url, metrics := e.deployed(t, "product")
	t.Cleanup(p.Stop)
	eventually(t, 30*time.Second, "the leader's webhooks", func() bool {
		names := strings.Join(e.webhookNames(), " ")
		return strings.Contains(names, "validate.gavel.io-fail") && strings.Contains(names, "mutate.gavel.io-fail")
	})

	t.Run("KindsOfThePolicies", func(t *testing.T) { productKinds(t, e) })
	t.Run("MutateServiceAccountAndNamespace", func(t *testing.T) { productMutations(t, e) })
	t.Run("Subresources", func(t *testing.T) { productSubresources(t, e) })
	t.Run("V2beta1Served", func(t *testing.T) { productV2beta1(t, e) })
	t.Run("CustomResourceInstalledLater", func(t *testing.T) { productWidgets(t, e) })
	t.Run("AggregatedRightsAndGrouplessKinds", func(t *testing.T) { productAggregation(t, e) })
	t.Run("SchemasServerSide", func(t *testing.T) { productSchemas(t, e) })
	t.Run("MetricsAndProbes", func(t *testing.T) {
		c := e.productClient()
		for _, path := range []string{"/healthz", "/readyz"} {
			if code, body := get(c, url+path); code != 200 {
				t.Errorf("%s: %d %s", path, code, body)
			}
		}
		code, body := get(c, metrics+"/metrics")
		if code != 200 {
			t.Fatalf("/metrics: %d %s", code, body)
		}
		for _, want := range []string{
			`kyverno_admission_requests_total{request_allowed="false",request_webhook="ValidatingWebhookConfiguration",resource_kind="Ingress",resource_namespace="product-a",resource_request_operation="create"}`,
			`kyverno_admission_review_duration_seconds_bucket{request_allowed="true",request_webhook="MutatingWebhookConfiguration"`,
			`kyverno_policy_results_total{dry_run="false",policy_background_mode="false",policy_name="product-require-team",policy_namespace="-",policy_type="cluster",policy_validation_mode="enforce",resource_kind="Ingress"`,
			`kyverno_policy_execution_duration_seconds_count{`,
			`kyverno_policy_rule_info_total{policy_background_mode="false",policy_name="product-require-team"`,
			`kyverno_policy_changes_total{`,
			`kyverno_controller_reconcile_total{controller_name="webhooks"}`,
			`workqueue_depth{name="policies"}`,
			`kyverno_http_requests_total{http_method="POST",http_url="/validate/fail"}`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})
	t.Run("RefusesWhereKyvernoRuns", func(t *testing.T) { productKyverno(t, e) })
}

// chartWebhooks puts back the chart's empty webhook configurations, which
// gavel fills (the suite's other tests replace them with their own), and
// deletes them when the test ends.
func (e *env) chartWebhooks(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	docs, err := e.renderChart()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if k, _ := d.Object["kind"].(string); strings.HasSuffix(k, "WebhookConfiguration") {
			_ = e.Dynamic.Resource(schemaGVR("admissionregistration.k8s.io", "v1", strings.ToLower(k)+"s")).Delete(ctx, "gavel", metav1.DeleteOptions{})
			if err := e.Apply(ctx, d.Object); err != nil {
				t.Fatal(err)
			}
		}
	}
	ar := e.Kube.AdmissionregistrationV1()
	t.Cleanup(func() {
		_ = ar.MutatingWebhookConfigurations().Delete(ctx, "gavel", metav1.DeleteOptions{})
		_ = ar.ValidatingWebhookConfigurations().Delete(ctx, "gavel", metav1.DeleteOptions{})
	})
}

func testSA(name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "product-a"}}
}

// denied creates obj and reports whether gavel denied it, failing the test
// on any other error.
func (e *env) denied(t *testing.T, obj map[string]any) bool {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	ri, err := e.Resource(u)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ri.Create(context.Background(), u, metav1.CreateOptions{})
	switch {
	case err == nil:
		return false
	case strings.Contains(err.Error(), "denied the request"):
		return true
	}
	t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	return false
}

func productKinds(t *testing.T, e *env) {
	team := map[string]any{"team": "a"}
	cases := []struct {
		kind, apiVersion, ns string
		spec                 map[string]any
	}{
		{"Ingress", "networking.k8s.io/v1", "product-a", map[string]any{"spec": map[string]any{"defaultBackend": map[string]any{
			"service": map[string]any{"name": "s", "port": map[string]any{"number": int64(80)}}}}}},
		{"PodDisruptionBudget", "policy/v1", "product-a", map[string]any{"spec": map[string]any{"minAvailable": int64(1),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "a"}}}}},
		{"HorizontalPodAutoscaler", "autoscaling/v2", "product-a", map[string]any{"spec": map[string]any{"maxReplicas": int64(2),
			"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}}},
		{"Role", "rbac.authorization.k8s.io/v1", "product-a", nil},
		{"RoleBinding", "rbac.authorization.k8s.io/v1", "product-a", map[string]any{
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
			"subjects": []any{map[string]any{"kind": "User", "name": "u"}}}},
		{"PersistentVolumeClaim", "v1", "product-a", map[string]any{"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"},
			"resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}}}},
		{"StorageClass", "storage.k8s.io/v1", "", map[string]any{"provisioner": "example.com/none"}},
	}
	for _, c := range cases {
		name := "product-" + strings.ToLower(c.kind)
		var got bool
		eventually(t, 30*time.Second, c.kind+" denied", func() bool {
			got = e.denied(t, labelled(c.kind, c.apiVersion, c.ns, name, nil, c.spec))
			return got
		})
		if e.denied(t, labelled(c.kind, c.apiVersion, c.ns, name, team, c.spec)) {
			t.Errorf("%s with the label denied", c.kind)
		}
	}
}

// productSubresources: pods/exec (CONNECT) and pods/ephemeralcontainers
// reach gavel (no kubelet runs: the Pod is never scheduled, but admission
// comes first).
func productSubresources(t *testing.T, e *env) {
	ctx := context.Background()
	pod := testPod("product-a", "product-target", map[string]string{"team": "a"})
	if _, err := e.Kube.CoreV1().Pods("product-a").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var err error
	eventually(t, 30*time.Second, "the exec denied", func() bool {
		err = e.Kube.CoreV1().RESTClient().Post().Namespace("product-a").Resource("pods").Name("product-target").
			SubResource("exec").Param("command", "ls").Param("stdout", "true").Do(ctx).Error()
		return err != nil && strings.Contains(err.Error(), "exec is not allowed")
	})
	cur, err := e.Kube.CoreV1().Pods("product-a").Get(ctx, "product-target", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.EphemeralContainers = append(cur.Spec.EphemeralContainers, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox:1.36"}})
	_, err = e.Kube.CoreV1().Pods("product-a").UpdateEphemeralContainers(ctx, "product-target", cur, metav1.UpdateOptions{})
	if err == nil || !strings.Contains(err.Error(), "ephemeral containers are not allowed") {
		t.Errorf("ephemeral container: %v, want product-no-exec's denial", err)
	}
}

func productMutations(t *testing.T, e *env) {
	ctx := context.Background()
	eventually(t, 30*time.Second, "the ServiceAccount mutated", func() bool {
		name := fmt.Sprintf("product-sa-%d", time.Now().UnixNano())
		sa, err := e.Kube.CoreV1().ServiceAccounts("product-a").Create(ctx, testSA(name), metav1.CreateOptions{})
		return err == nil && sa.Labels["gavel.io/product"] == "seen"
	})
	ns, err := e.Kube.CoreV1().Namespaces().Get(ctx, "product-beta", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels["touch"] = "yes"
	ns, err = e.Kube.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
	if err != nil || ns.Labels["gavel.io/product"] != "seen" {
		t.Errorf("Namespace update: %v, labels %v", err, ns.Labels)
	}
}

func productV2beta1(t *testing.T, e *env) {
	u, err := e.Dynamic.Resource(schemaGVR("kyverno.io", "v2beta1", "clusterpolicies")).Get(context.Background(), "product-beta", metav1.GetOptions{})
	if err != nil || u.GetAPIVersion() != "kyverno.io/v2beta1" {
		t.Fatalf("the v2beta1 policy read in v2beta1: %v", err)
	}
	eventually(t, 30*time.Second, "the v2beta1 policy enforced", func() bool {
		return e.denied(t, labelled("ConfigMap", "v1", "product-beta", fmt.Sprintf("cm-%d", time.Now().UnixNano()), nil, nil))
	})
	if e.denied(t, labelled("ConfigMap", "v1", "product-beta", "with-beta", map[string]any{"beta": "1"}, nil)) {
		t.Error("a ConfigMap with the label denied")
	}
	exc := map[string]any{
		"apiVersion": "kyverno.io/v2beta1", "kind": "PolicyException",
		"metadata": map[string]any{"name": "product-beta-exc", "namespace": "product-beta"},
		"spec": map[string]any{
			"exceptions": []any{map[string]any{"policyName": "product-beta", "ruleNames": []any{"beta-label"}}},
			"match": map[string]any{"any": []any{map[string]any{"resources": map[string]any{
				"kinds": []any{"ConfigMap"}, "names": []any{"exempt-*"}}}}},
		},
	}
	if err := e.Apply(context.Background(), exc); err != nil {
		t.Fatalf("a kyverno.io/v2beta1 PolicyException: %v", err)
	}
	eventually(t, 30*time.Second, "the v2beta1 exception in force", func() bool {
		return !e.denied(t, labelled("ConfigMap", "v1", "product-beta", fmt.Sprintf("exempt-%d", time.Now().UnixNano()), nil, nil))
	})
}

func productWidgets(t *testing.T, e *env) {
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.e2e.gavel.io"},
		"spec": map[string]any{
			"group": "e2e.gavel.io", "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}
	if err := e.Apply(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
	e.ResetMapper()
	eventually(t, 60*time.Second, "the Widget denied once its CRD is installed", func() bool {
		e.ResetMapper()
		u := &unstructured.Unstructured{Object: labelled("Widget", "e2e.gavel.io/v1", "product-a", fmt.Sprintf("w-%d", time.Now().UnixNano()), nil, nil)}
		ri, err := e.Resource(u)
		if err != nil {
			return false
		}
		_, err = ri.Create(context.Background(), u, metav1.CreateOptions{})
		return err != nil && strings.Contains(err.Error(), "label owner is required")
	})
}

// productAggregation: rights granted as upstream's library tests grant
// them (a ClusterRole labelled for Kyverno's background controller) reach
// gavel; a mutateExistingOnPolicyUpdate policy on Deployment (no group)
// reaches the existing Deployments; a generate rule writes a Secret.
func productAggregation(t *testing.T, e *env) {
	ctx := context.Background()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "product-background", Labels: map[string]string{"rbac.kyverno.io/aggregate-to-background-controller": "true"}},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"update", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "update", "delete"}},
		},
	}
	if _, err := e.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Kube.RbacV1().ClusterRoles().Delete(ctx, "product-background", metav1.DeleteOptions{}) })
	if err := e.aggregate("gavel"); err != nil {
		t.Fatal(err)
	}
	deploy := labelled("Deployment", "apps/v1", "product-a", "product-existing", map[string]any{"app": "x"}, map[string]any{"spec": map[string]any{
		"selector": map[string]any{"matchLabels": map[string]any{"app": "x"}},
		"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x"}},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx:1.27"}}}},
	}})
	if err := e.Apply(ctx, deploy); err != nil {
		t.Fatal(err)
	}
	touch := map[string]any{
		"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": map[string]any{"name": "product-touch"},
		"spec": map[string]any{"mutateExistingOnPolicyUpdate": true, "rules": []any{map[string]any{
			"name":  "touch",
			"match": map[string]any{"any": []any{map[string]any{"resources": map[string]any{"kinds": []any{"Deployment"}, "namespaces": []any{"product-a"}}}}},
			"mutate": map[string]any{
				"targets": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
					"name": "{{request.object.metadata.name}}", "namespace": "{{request.object.metadata.namespace}}"}},
				"patchStrategicMerge": map[string]any{"metadata": map[string]any{"labels": map[string]any{"touched": "yes"}}},
			},
		}}},
	}
	if err := e.Apply(ctx, touch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the existing Deployment mutated on the policy's creation", func() bool {
		d, err := e.Kube.AppsV1().Deployments("product-a").Get(ctx, "product-existing", metav1.GetOptions{})
		return err == nil && d.Labels["touched"] == "yes"
	})
	gen := map[string]any{
		"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": map[string]any{"name": "product-secret"},
		"spec": map[string]any{"rules": []any{map[string]any{
			"name":  "secret",
			"match": map[string]any{"any": []any{map[string]any{"resources": map[string]any{"kinds": []any{"Namespace"}, "names": []any{"product-gen-*"}}}}},
			"generate": map[string]any{"apiVersion": "v1", "kind": "Secret", "name": "token", "namespace": "{{request.object.metadata.name}}",
				"data": map[string]any{"stringData": map[string]any{"k": "v"}}},
		}}},
	}
	if err := e.Apply(ctx, gen); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the Secret generated with the aggregated rights", func() bool {
		ns := fmt.Sprintf("product-gen-%d", time.Now().UnixNano())
		e.namespace(t, ns, nil)
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := e.Kube.CoreV1().Secrets(ns).Get(ctx, "token", metav1.GetOptions{}); err == nil {
				return true
			}
			time.Sleep(200 * time.Millisecond)
		}
		return false
	})
}

// productSchemas: upstream's CRD schemas validate policies server side and
// are published in the API server's OpenAPI (kubectl explain).
func productSchemas(t *testing.T, e *env) {
	bad := map[string]any{"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": map[string]any{"name": "product-bad"},
		"spec": map[string]any{"rules": "not a list"}}
	_, err := e.Dynamic.Resource(clusterPolicies).Create(context.Background(), &unstructured.Unstructured{Object: bad}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.rules") {
		t.Errorf("a ClusterPolicy with rules not a list: %v, want Invalid naming spec.rules", err)
	}
	for _, path := range []string{"/openapi/v3/apis/kyverno.io/v1", "/openapi/v3/apis/kyverno.io/v2beta1", "/openapi/v3/apis/wgpolicyk8s.io/v1alpha2", "/openapi/v3/apis/policies.kyverno.io/v1"} {
		body, err := e.Kube.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(context.Background())
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if !bytes.Contains(body, []byte(`"description"`)) || !bytes.Contains(body, []byte("x-kubernetes-group-version-kind")) {
			t.Errorf("%s: no documented schema", path)
		}
	}
}

// productKyverno: where Kyverno's webhook configurations exist, the binary
// refuses to start and the chart to install, each saying why.
func productKyverno(t *testing.T, e *env) {
	ctx := context.Background()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "kyverno-resource-validating-webhook-cfg"}}
	if _, err := e.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = e.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, vwc.Name, metav1.DeleteOptions{})
	}()
	cmd := exec.Command(e.binary, "-kubeconfig", e.Kubeconfig(), "-namespace", "gavel", "-tls-cert", e.whCert, "-tls-key", e.whKey, "-metrics-listen", "")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Kyverno is installed in this cluster (ValidatingWebhookConfiguration kyverno-resource-validating-webhook-cfg)") {
		t.Errorf("the binary with Kyverno installed: %v\n%s", err, out)
	}
	helm := func() (string, error) {
		cmd := exec.Command(e.helm, "install", "gavel-check", filepath.Join(e.root, "charts", "gavel"), "--namespace", "gavel",
			"--dry-run=server", "--kubeconfig", e.Kubeconfig())
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := helm(); err == nil || !strings.Contains(out, "Kyverno is installed in this cluster") {
		t.Errorf("helm install with Kyverno installed: %v\n%s", err, out)
	}
	_ = e.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, vwc.Name, metav1.DeleteOptions{})
	if out, err := helm(); err != nil {
		t.Errorf("helm install --dry-run=server without Kyverno: %v\n%s", err, out)
	}
	if out, err := exec.Command(e.helm, "lint", filepath.Join(e.root, "charts", "gavel")).CombinedOutput(); err != nil {
		t.Errorf("helm lint: %v\n%s", err, out)
	}
}
