package policytest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/policytest"
)

const policyYAML = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team
spec:
  rules:
  - name: check
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      pattern:
        metadata:
          labels:
            team: "?*"
`

const resourceYAML = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    team: a
spec:
  containers:
  - name: c
    image: nginx
`

const testYAML = `apiVersion: cli.kyverno.io/v1alpha1
kind: Test
metadata:
  name: t
policies: [policy.yaml]
resources: [resource.yaml]
results:
- policy: require-team
  rule: check
  kind: Pod
  resources: [web]
  result: pass
`

// runDir writes a test folder and runs its kyverno-test.yaml.
func runDir(t *testing.T, files map[string]string) ([]policytest.Row, error) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	test, err := policytest.Load(filepath.Join(dir, "kyverno-test.yaml"))
	if err != nil {
		return nil, err
	}
	return policytest.Run(context.Background(), test, policytest.Options{})
}

// TestRunNeverPassesSilently: a test whose inputs are broken fails with
// the reason, or yields rows that do not pass; never a passing row.
func TestRunNeverPassesSilently(t *testing.T) {
	for _, tc := range []struct {
		name  string
		patch func(files map[string]string)
		// wantErr is a substring of Run's (or Load's) error; empty when
		// rows are expected.
		wantErr string
		// wantReason is a substring of the row's reason.
		wantReason string
	}{
		{"baseline", func(map[string]string) {}, "", "Ok"},
		{"malformed test file", func(f map[string]string) { f["kyverno-test.yaml"] = "results: [\n" }, "kyverno-test.yaml", ""},
		{"missing policy file", func(f map[string]string) { delete(f, "policy.yaml") }, "policy.yaml", ""},
		{"malformed policy", func(f map[string]string) { f["policy.yaml"] = "kind: [\n" }, "policy.yaml[0]", ""},
		{"unknown field in the policy", func(f map[string]string) {
			f["policy.yaml"] = strings.Replace(policyYAML, "pattern:", "patern:", 1)
		}, "spec.rules[0].validate.patern", ""},
		{"policy that does not compile", func(f map[string]string) {
			f["policy.yaml"] = strings.Replace(policyYAML, `team: "?*"`, `team: "{{ request.object.( }}"`, 1)
		}, "", "not found"},
		{"malformed resource", func(f map[string]string) { f["resource.yaml"] = "kind: Pod\nmetadata: [\n" }, "resource.yaml[0]", ""},
		{"missing resource", func(f map[string]string) {
			f["resource.yaml"] = strings.Replace(resourceYAML, "name: web", "name: other", 1)
		}, "", "not found"},
		{"rule error", func(f map[string]string) {
			f["policy.yaml"] = strings.Replace(policyYAML, `team: "?*"`, `team: "{{ request.object.nothing }}"`, 1)
		}, "", "Want pass, got error"},
		{"rule fails", func(f map[string]string) {
			f["resource.yaml"] = strings.Replace(resourceYAML, "team: a", "other: a", 1)
		}, "", "Want pass, got fail"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"kyverno-test.yaml": testYAML, "policy.yaml": policyYAML, "resource.yaml": resourceYAML}
			tc.patch(files)
			rows, err := runDir(t, files)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %q (rows %+v)", err, tc.wantErr, rows)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 {
				t.Fatalf("rows %+v", rows)
			}
			r := rows[0]
			if !strings.Contains(r.Reason, tc.wantReason) || r.Passed != (tc.name == "baseline") {
				t.Errorf("row %+v, want reason %q", r, tc.wantReason)
			}
		})
	}
}
