package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestUpstreamCommandLines runs command lines of the upstream CLI's
// documentation (../shared/reference/kyverno-docs/cli-usage.mdx) with
// "kyverno" replaced by "gavel", on the documentation's files
// (testdata/upstream-docs, copied from it), and checks the results and
// exit codes the documentation shows or states.
func TestUpstreamCommandLines(t *testing.T) {
	t.Chdir("testdata/upstream-docs")
	tests := []struct {
		line string
		code int
		// out are substrings of stdout, err of stderr
		out, err []string
	}{
		// "Apply a policy to a resource using the --set or -s flag": the
		// documentation shows pass: 1
		{line: "kyverno apply add_network_policy.yaml --resource required_default_network_policy.yaml -s request.object.metadata.name=devtest",
			out: []string{"pass: 1, fail: 0, warn: 0, error: 0, skip: 0"}},
		// the same with --values-file / -f
		{line: "kyverno apply add_network_policy.yaml --resource required_default_network_policy.yaml -f network-value.yaml",
			out: []string{"pass: 1, fail: 0, warn: 0, error: 0, skip: 0"}},
		// global values: "The Pod test-global-dev passes the validation,
		// and test-global-prod fails" (an Enforce failure: exit 1); the
		// Pods, without a namespace, are in "default" as upstream loads them
		{line: "kyverno apply add_dev_pod.yaml --resource dev_prod_pod.yaml -f global-value.yaml", code: 1,
			out: []string{"policy cm-globalval-example -> resource default/Pod/test-global-prod failed:\n1 - validate-mode The value prod for val1 is not equal to 'dev'.\n\n", "pass: 1, fail: 1"}},
		// the namespace selector of the values file selects the Pod, whose
		// name ends in -nginx
		{line: "kyverno apply enforce-pod-name.yaml --resource nginx.yaml -f namespace-value.yaml",
			out: []string{"pass: 1, fail: 0"}},
		// "Applying Policy Exceptions": the documentation's whole output
		{line: "kyverno apply max-containers.yaml --resource deployment.yaml --exception exception.yaml",
			out: []string{"\nApplying 3 policy rule(s) to 1 resource(s) with 1 exception(s)...\n\npass: 0, fail: 0, warn: 0, error: 0, skip: 1 \n"}},
		// without the exception the Deployment's autogen rule fails
		{line: "kyverno apply max-containers.yaml --resource deployment.yaml", code: 1,
			out: []string{"fail: 1"}},
		// "Generating Policy Reports", case 1: one pass, one fail (an Audit
		// failure: exit 1)
		{line: "kyverno apply policy.yaml -r resource1.yaml -r resource2.yaml --policy-report", code: 1,
			out: []string{"kind: ClusterReport", "policy: require-pod-requests-limits", "name: nginx1", "name: nginx2", "result: pass", "result: fail",
				"summary:\n  error: 0\n  fail: 1\n  pass: 1\n  skip: 0\n  warn: 0\n"}},
		// --audit-warn: "This will also cause a non-zero exit code if no
		// enforcing policies failed" only with --warn-exit-code
		{line: "kyverno apply disallow-latest-tag.yaml --resource=echo-test.yaml --audit-warn --warn-exit-code 3", code: 3,
			out: []string{"pass: 1, fail: 0, warn: 1"}},
		{line: "kyverno apply disallow-latest-tag.yaml --resource=echo-test.yaml --audit-warn", code: 0},
		{line: "kyverno apply disallow-latest-tag.yaml --resource=echo-test.yaml", code: 1},
		// --warn-no-pass: "exit with the warning code if no objects were
		// found that satisfy a policy"
		{line: "kyverno apply disallow-latest-tag.yaml --resource=empty.yaml --warn-exit-code 3 --warn-no-pass", code: 3},
		// kyverno test ., and the test case selector
		{line: "kyverno test test", out: []string{"2 passed, 0 failed"}},
		{line: "kyverno test test --test-case-selector \"policy=disallow-latest-tag, rule=require-image-tag, resource=myapp-pod\" --fail-only=false",
			out: []string{"1 passed, 0 failed", "rule=require-image-tag"}},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			args := splitCommandLine(strings.TrimPrefix(tt.line, "kyverno "))
			var out, errOut bytes.Buffer
			code := run(args, strings.NewReader(""), &out, &errOut)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out.String(), errOut.String())
			}
			for _, s := range tt.out {
				if !strings.Contains(out.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, out.String())
				}
			}
			for _, s := range tt.err {
				if !strings.Contains(errOut.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, errOut.String())
				}
			}
		})
	}
}

// splitCommandLine splits a shell command line on spaces outside double
// quotes.
func splitCommandLine(s string) []string {
	var args []string
	var cur strings.Builder
	quoted, started := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, started = !quoted, true
		case r == ' ' && !quoted:
			if started {
				args = append(args, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteRune(r)
			started = true
		}
	}
	if started {
		args = append(args, cur.String())
	}
	return args
}
