//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cliPolicies are the policies of the CLI's --cluster runs: Pods need a
// team label, Pods of prod namespaces an owner label, and the suite's
// ClusterRoles an owner label.
const cliPolicies = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team
spec:
  validationFailureAction: Enforce
  rules:
  - name: team
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: the team label is required
      pattern:
        metadata:
          labels:
            team: "?*"
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: prod-owner
spec:
  validationFailureAction: Enforce
  rules:
  - name: owner
    match:
      any:
      - resources:
          kinds: [Pod]
          namespaceSelector:
            matchLabels:
              env: prod
    validate:
      message: prod Pods need an owner
      pattern:
        metadata:
          labels:
            owner: "?*"
`

const cliRolePolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: role-owner
spec:
  validationFailureAction: Enforce
  rules:
  - name: owner
    match:
      any:
      - resources:
          kinds: [ClusterRole]
          names: ["cli-*"]
    validate:
      message: the owner label is required
      pattern:
        metadata:
          labels:
            owner: "?*"
`

// cliAPICallPolicy reads the Pods of the resource's namespace with an
// apiCall entry: the REST client of --cluster against the API server.
const cliAPICallPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: pod-count
spec:
  validationFailureAction: Enforce
  background: true
  rules:
  - name: at-most-100
    match:
      any:
      - resources:
          kinds: [Pod]
    context:
    - name: podCount
      apiCall:
        urlPath: "/api/v1/namespaces/{{request.object.metadata.namespace}}/pods"
        jmesPath: "items | length(@)"
    validate:
      message: "too many Pods: {{podCount}}"
      deny:
        conditions:
          any:
          - key: "{{podCount}}"
            operator: GreaterThan
            value: 100
`

// TestCLICluster runs gavel apply --cluster against the suite's API
// server. It runs before the scenarios, whose webhooks would see its
// Pods.
func TestCLICluster(t *testing.T) {
	e := suite
	ctx := context.Background()
	dir := t.TempDir()
	bin := filepath.Join(dir, "gavel")
	build := exec.Command("go", "build", "-o", bin, "./cmd/gavel")
	build.Dir = e.root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/gavel: %v\n%s", err, out)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	policies := write("policies.yaml", cliPolicies)
	rolePolicy := write("role.yaml", cliRolePolicy)
	apiCallPolicy := write("apicall.yaml", cliAPICallPolicy)
	// a kubeconfig whose current context is a server that is not there:
	// only --context e2e reaches the suite's API server
	kc, err := os.ReadFile(e.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	other := strings.Replace(string(kc), "current-context: e2e", "current-context: nowhere", 1)
	other = strings.Replace(other, "contexts:\n", "contexts:\n- name: nowhere\n  context: {cluster: nowhere, user: admin}\n", 1)
	other = strings.Replace(other, "clusters:\n", "clusters:\n- name: nowhere\n  cluster:\n    server: https://127.0.0.1:1\n", 1)
	otherKC := write("kubeconfig-other", other)

	e.namespace(t, "cli-prod", map[string]string{"env": "prod"})
	e.namespace(t, "cli-dev", map[string]string{"env": "dev"})
	pod := func(ns, name string, labels map[string]string) {
		t.Helper()
		_, err := e.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}},
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	// 150 Pods that pass in cli-dev: two pages of --batch-size 100
	for i := range 150 {
		pod("cli-dev", fmt.Sprintf("good-%03d", i), map[string]string{"team": "a"})
	}
	pod("cli-dev", "no-team", nil)
	pod("cli-prod", "owned", map[string]string{"team": "a", "owner": "x"})
	pod("cli-prod", "unowned", map[string]string{"team": "a"})
	for name, labels := range map[string]map[string]string{"cli-owned": {"owner": "x"}, "cli-unowned": nil} {
		_, err := e.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}

	for _, tt := range []struct {
		name   string
		args   []string
		env    []string
		code   int
		stdout []string
		stderr []string
		not    []string
	}{
		{name: "namespace, pages", args: []string{"apply", policies, "-c", "--kubeconfig", e.Kubeconfig(), "-n", "cli-dev", "--batch-size", "100"}, code: 1,
			stdout: []string{"Applying 6 policy rule(s) to 151 resource(s)...", "policy require-team -> resource cli-dev/Pod/no-team failed:\n1 - team validation error: the team label is required. rule team failed at path /metadata/labels/\n", "pass: 150, fail: 1, warn: 0, error: 0, skip: 0"}},
		{name: "namespace labels from the cluster", args: []string{"apply", policies, "--cluster", "--kubeconfig", e.Kubeconfig(), "--namespace", "cli-prod", "--concurrent", "2"}, code: 1,
			stdout: []string{"policy prod-owner -> resource cli-prod/Pod/unowned failed:", "pass: 3, fail: 1"}, not: []string{"cli-prod/Pod/owned failed"}},
		{name: "names, every namespace, policy report", args: []string{"apply", policies, "-c", "--kubeconfig", e.Kubeconfig(), "-r", "no-team", "-r", "owned", "-p"}, code: 1,
			stdout: []string{"name: no-team", "name: owned"}, stderr: []string{"pass: 2, fail: 1"}},
		{name: "name not in the cluster", args: []string{"apply", policies, "-c", "--kubeconfig", e.Kubeconfig(), "-r", "not-there"}, code: 1,
			stderr: []string{"not-there not found in cluster"}},
		{name: "current context unreachable", args: []string{"apply", policies, "-c", "--kubeconfig", otherKC, "-n", "cli-dev"}, code: 1,
			stderr: []string{"127.0.0.1:1"}},
		{name: "context", args: []string{"apply", policies, "-c", "--kubeconfig", otherKC, "--context", "e2e", "-n", "cli-prod"}, code: 1,
			stdout: []string{"pass: 3, fail: 1"}},
		{name: "KUBECONFIG", args: []string{"apply", policies, "-c", "--context", "e2e", "-n", "cli-prod", "-r", "owned"}, env: []string{"KUBECONFIG=" + otherKC}, code: 0,
			stdout: []string{"pass: 2, fail: 0"}},
		{name: "cluster-wide resources", args: []string{"apply", rolePolicy, "-c", "--kubeconfig", e.Kubeconfig(), "--cluster-wide-resources", "--table"}, code: 1,
			stdout: []string{"cli-owned", "cli-unowned", "pass: 1, fail: 1"}},
		{name: "apiCall", args: []string{"apply", apiCallPolicy, "-c", "--kubeconfig", e.Kubeconfig(), "-n", "cli-dev", "-r", "no-team"}, code: 1,
			stdout: []string{"too many Pods: 151", "pass: 0, fail: 1"}},
		{name: "apiCall, few Pods", args: []string{"apply", apiCallPolicy, "-c", "--kubeconfig", e.Kubeconfig(), "-n", "cli-prod"}, code: 0,
			stdout: []string{"pass: 2, fail: 0, warn: 0, error: 0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, tt.args...)
			cmd.Env = append(os.Environ(), tt.env...)
			cmd.Env = append(cmd.Env, "HOME="+dir) // no ~/.kube/config of the machine
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout.String(), stderr.String())
			}
			for _, s := range tt.stdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout lacks %q:\n%s\nstderr:\n%s", s, stdout.String(), stderr.String())
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr.String())
				}
			}
			for _, s := range tt.not {
				if strings.Contains(stdout.String(), s) {
					t.Errorf("stdout has %q:\n%s", s, stdout.String())
				}
			}
		})
	}
}
