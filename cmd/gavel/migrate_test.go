package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMigrate(t *testing.T) {
	dir := filepath.Join("testdata", "migrate")
	out := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		code     int
		contains []string
	}{
		{name: "converted and verified", args: []string{"migrate", filepath.Join(dir, "policy.yaml"), "-o", out,
			"--verify", "--resource", filepath.Join(dir, "resources.yaml")}, code: exitOK,
			contains: []string{
				"ClusterPolicy require-labels: converted -> ValidatingPolicy require-labels",
				"  validate pods-need-team: converted -> require-labels",
				"verify ClusterPolicy require-labels: equal (5 evaluations of require-labels)",
			}},
		{name: "a test folder", args: []string{"migrate", filepath.Join(dir, "policy.yaml"), "--test", filepath.Join(dir, "test")}, code: exitOK,
			contains: []string{"verify ClusterPolicy require-labels (" + filepath.Join(dir, "test", "kyverno-test.yaml") + "): equal (5 evaluations"}},
		{name: "not convertible", args: []string{"migrate", filepath.Join(dir, "not-convertible.yaml")}, code: exitFailed,
			contains: []string{
				"ClusterPolicy protect-node-taints: not fully converted -> ValidatingPolicy protect-node-taints",
				"  validate protect-taints: not converted: spec.rules[0]: roles and clusterRoles: at spec.rules[0].exclude.any[0]:",
				"  validate label-format: converted -> protect-node-taints",
			}},
		{name: "usage", args: []string{"migrate"}, code: exitUsage},
		{name: "verify without resources", args: []string{"migrate", filepath.Join(dir, "policy.yaml"), "--verify"}, code: exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runGavel(tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, stdout, stderr)
			}
			for _, c := range tt.contains {
				if !strings.Contains(stdout, c) {
					t.Errorf("output lacks %q:\n%s", c, stdout)
				}
			}
		})
	}
	written, err := os.ReadFile(filepath.Join(out, "require-labels.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# converted from ClusterPolicy require-labels by gavel migrate", "kind: ValidatingPolicy", "# rule pods-need-team, where it applies"} {
		if !strings.Contains(string(written), want) {
			t.Errorf("require-labels.yaml lacks %q:\n%s", want, written)
		}
	}
}
