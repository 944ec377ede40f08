package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// flagFiles are the inputs of the flag tests: an Enforce and an Audit
// policy, a mutate policy, a mutate-existing policy, a policy that reads
// a variable, one that errors (a service call gavel apply cannot make),
// Pods that pass, fail the Audit policy, fail the Enforce policy, and a
// ConfigMap no policy matches.
var flagFiles = map[string]string{
	"enforce.yaml": `apiVersion: kyverno.io/v1
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
`,
	"audit.yaml": `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: disallow-latest
spec:
  validationFailureAction: Audit
  rules:
  - name: tag
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: latest is not allowed
      pattern:
        spec:
          containers:
          - image: "!*:latest"
`,
	"mutate.yaml": `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: add-owner
spec:
  rules:
  - name: owner
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            owner: platform
`,
	"existing.yaml": `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: stamp-config
spec:
  rules:
  - name: stamp
    match:
      any:
      - resources:
          kinds: [ConfigMap]
          names: [trigger]
    mutate:
      targets:
      - apiVersion: v1
        kind: ConfigMap
        name: target
        namespace: "{{ request.object.metadata.namespace }}"
      patchStrategicMerge:
        metadata:
          labels:
            stamped: "yes"
`,
	"mode.yaml": `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: mode
spec:
  validationFailureAction: Enforce
  rules:
  - name: mode
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "mode {{ request.mode }} is not dev"
      deny:
        conditions:
          any:
          - key: "{{ request.mode }}"
            operator: NotEquals
            value: dev
`,
	"erroring.yaml": `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: ask-service
spec:
  validationFailureAction: Audit
  rules:
  - name: ask
    match:
      any:
      - resources:
          kinds: [Pod]
    context:
    - name: answer
      apiCall:
        service:
          url: https://policy.example/answer
    validate:
      message: denied
      deny:
        conditions:
          any:
          - key: "{{ answer }}"
            operator: Equals
            value: "no"
`,
	"user-policy.yaml": `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: no-mallory
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: user
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "{{ request.userInfo.username }} may not"
      deny:
        conditions:
          any:
          - key: "{{ request.userInfo.username }}"
            operator: Equals
            value: mallory
`,
	"user.yaml": `apiVersion: cli.kyverno.io/v1alpha1
kind: UserInfo
metadata:
  name: user-info
userInfo:
  username: mallory
`,
	"generate.yaml": `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: default-quota
spec:
  rules:
  - name: quota
    match:
      any:
      - resources:
          kinds: [Namespace]
    generate:
      apiVersion: v1
      kind: ResourceQuota
      name: default
      namespace: "{{ request.object.metadata.name }}"
      data:
        spec:
          hard:
            pods: "10"
`,
	"ns.yaml":      "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n",
	"good.yaml":    pod("good", "team: a", "nginx:1.0"),
	"latest.yaml":  pod("latest", "team: a", "nginx:latest"),
	"noteam.yaml":  pod("noteam", "app: x", "nginx:1.0"),
	"cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: shop\n",
	"trigger.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: trigger\n  namespace: shop\n",
	"target.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: target\n  namespace: shop\ndata:\n  a: b\n",
	"exception.yaml": `apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: noteam
  namespace: shop
spec:
  exceptions:
  - policyName: require-team
    ruleNames: [team]
  match:
    any:
    - resources:
        kinds: [Pod]
        names: [noteam]
`,
	"crd.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true}]
`,
	"values.yaml": `apiVersion: cli.kyverno.io/v1alpha1
kind: Values
metadata:
  name: values
globalValues:
  request.mode: dev
`,
}

// anyCode is a test's exit status when the test does not check it.
const anyCode = -1

func pod(name, label, image string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: shop\n  labels:\n    " + label + "\nspec:\n  containers:\n  - name: c\n    image: " + image + "\n"
}

// TestApplyFlags runs gavel apply with each upstream flag and checks what
// the flag changes: the exit status, the output, the files written.
func TestApplyFlags(t *testing.T) {
	dir := writeFiles(t, flagFiles)
	p := func(name string) string { return filepath.Join(dir, name) }
	// a policy folder with a PolicyException in it
	withExc := filepath.Join(dir, "with-exception")
	if err := os.Mkdir(withExc, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"enforce.yaml", "exception.yaml"} {
		b, _ := os.ReadFile(p(name))
		os.WriteFile(filepath.Join(withExc, name), b, 0o644)
	}
	tests := []struct {
		name    string
		args    []string
		stdin   string
		code    int
		stdout  []string // substrings of stdout
		stderr  []string // substrings of stderr
		without []string // substrings stdout must not have
		files   map[string]string
	}{
		// exit status (issue 18.5)
		{name: "pass", args: []string{p("enforce.yaml"), p("audit.yaml"), "-r", p("good.yaml")}, code: 0, stdout: []string{"pass: 2, fail: 0"}},
		{name: "enforce failure", args: []string{p("enforce.yaml"), "-r", p("noteam.yaml")}, code: 1, stdout: []string{"fail: 1"}, stderr: []string{"policy violations"}},
		{name: "audit failure fails", args: []string{p("audit.yaml"), "-r", p("latest.yaml")}, code: 1, stdout: []string{"fail: 1"}},
		{name: "audit-warn", args: []string{p("audit.yaml"), "-r", p("latest.yaml"), "--audit-warn"}, code: 0, stdout: []string{"fail: 0, warn: 1"}},
		{name: "warn-exit-code", args: []string{p("audit.yaml"), "-r", p("latest.yaml"), "--audit-warn", "--warn-exit-code", "3"}, code: 3, stderr: []string{"warnExitCode is 3"}},
		{name: "warn-exit-code without warnings", args: []string{p("audit.yaml"), "-r", p("good.yaml"), "--warn-exit-code", "3"}, code: 0},
		{name: "warn-exit-code with failures", args: []string{p("enforce.yaml"), p("audit.yaml"), "-r", p("noteam.yaml"), "-r", p("latest.yaml"), "--audit-warn", "--warn-exit-code", "3"}, code: 1},
		{name: "warn-no-pass", args: []string{p("audit.yaml"), "-r", p("cm.yaml"), "--warn-no-pass", "--warn-exit-code", "3"}, code: 3, stderr: []string{"no objects satisfied"}},
		{name: "warn-no-pass with a pass", args: []string{p("audit.yaml"), "-r", p("good.yaml"), "--warn-no-pass", "--warn-exit-code", "3"}, code: 0},
		{name: "error result fails", args: []string{p("erroring.yaml"), "-r", p("good.yaml")}, code: 1, stdout: []string{"error: 1"}, stderr: []string{"policy errors"}},

		// inputs
		{name: "resources alias", args: []string{p("enforce.yaml"), "--resources", p("good.yaml") + "," + p("noteam.yaml")}, code: 1, stdout: []string{"pass: 1, fail: 1"}},
		{name: "stdin resources", args: []string{p("enforce.yaml"), "--resource", "-"}, stdin: flagFiles["good.yaml"], code: 0, stdout: []string{"pass: 1"}},
		{name: "set", args: []string{p("mode.yaml"), "-r", p("good.yaml"), "-s", "request.mode=dev"}, code: 0, stdout: []string{"pass: 1, fail: 0"}},
		{name: "set other value", args: []string{p("mode.yaml"), "-r", p("good.yaml"), "--set", "request.mode=prod"}, code: 1, stdout: []string{"mode prod is not dev"}},
		{name: "values-file short", args: []string{p("mode.yaml"), "-r", p("good.yaml"), "-f", p("values.yaml")}, code: 0, stdout: []string{"pass: 1"}},
		{name: "set and values-file", args: []string{p("mode.yaml"), "-r", p("good.yaml"), "-f", p("values.yaml"), "-s", "a=b"}, code: 1, stderr: []string{"either using set flag or values_file flag"}},
		{name: "userinfo", args: []string{p("user-policy.yaml"), "-r", p("good.yaml"), "-u", p("user.yaml")}, code: 1, stdout: []string{"mallory may not"}},
		{name: "exception", args: []string{p("enforce.yaml"), "-r", p("noteam.yaml"), "-e", p("exception.yaml")}, code: 0, stdout: []string{"skip: 1"}},
		{name: "exceptions alias", args: []string{p("enforce.yaml"), "-r", p("noteam.yaml"), "--exceptions", p("exception.yaml")}, code: 0, stdout: []string{"skip: 1"}},
		{name: "exceptions-within-policies", args: []string{withExc, "-r", p("noteam.yaml"), "--exceptions-within-policies"}, code: 0, stdout: []string{"skip: 1"}},
		{name: "exception among policies ignored", args: []string{withExc, "-r", p("noteam.yaml")}, code: 1, stdout: []string{"fail: 1"}},
		{name: "exceptions-with-resources", args: []string{p("enforce.yaml"), "-r", p("noteam.yaml"), "-r", p("exception.yaml"), "--exceptions-with-resources"}, code: 0, stdout: []string{"skip: 1"}},
		{name: "exception among resources ignored", args: []string{p("enforce.yaml"), "-r", p("noteam.yaml"), "-r", p("exception.yaml")}, code: 1},
		{name: "crd-path", args: []string{p("enforce.yaml"), "-r", p("good.yaml"), "--crd-path", p("crd.yaml")}, code: 0},
		{name: "crd-path not a CRD", args: []string{p("enforce.yaml"), "-r", p("good.yaml"), "--crd-paths", p("cm.yaml")}, code: 1, stderr: []string{"not a CustomResourceDefinition"}},

		// outputs
		{name: "table", args: []string{p("enforce.yaml"), "-r", p("good.yaml"), "-r", p("noteam.yaml"), "-t"}, code: 1, stdout: []string{"ID  POLICY", "1   require-team  team  shop/Pod/good    pass", "2   require-team  team  shop/Pod/noteam  fail"}, without: []string{"REASON"}},
		{name: "table detailed", args: []string{p("enforce.yaml"), "-r", p("noteam.yaml"), "--table", "--detailed-results", "--remove-color"}, code: 1, stdout: []string{"REASON", "the team label is required"}, without: []string{"\033["}},
		{name: "policy-report", args: []string{p("enforce.yaml"), "-r", p("noteam.yaml"), "-p"}, code: 1, stdout: []string{"kind: ClusterReport", "result: fail"}},
		{name: "policy-report json", args: []string{p("enforce.yaml"), "-r", p("noteam.yaml"), "--policy-report", "--output-format", "json"}, code: 1, stdout: []string{`"kind":"ClusterReport"`}},
		{name: "report-format wgpolicy", args: []string{p("enforce.yaml"), "-r", p("good.yaml"), "-p", "--report-format", "wgpolicy"}, code: 0, stdout: []string{"apiVersion: wgpolicyk8s.io/v1alpha2"}},
		{name: "output-format json document", args: []string{p("enforce.yaml"), "-r", p("noteam.yaml"), "--output-format", "json"}, code: 1, stdout: []string{`"blocked": true`}},
		{name: "output-format junit", args: []string{p("enforce.yaml"), "-r", p("noteam.yaml"), "--output-format", "junit"}, code: 1, stdout: []string{"<testsuites"}},
		{name: "output-format junit with report", args: []string{p("enforce.yaml"), "-r", p("noteam.yaml"), "-p", "--output-format", "junit"}, code: 1},
		{name: "output-format unknown", args: []string{p("enforce.yaml"), "-r", p("noteam.yaml"), "--output-format", "xml"}, code: 1, stderr: []string{"unsupported output format"}},
		{name: "detailed-results", args: []string{p("enforce.yaml"), "-r", p("good.yaml"), "--detailed-results"}, code: 0, stdout: []string{"rule team: pass"}},
		{name: "fail-only", args: []string{p("enforce.yaml"), "-r", p("good.yaml"), "-r", p("noteam.yaml"), "--detailed-results", "--fail-only"}, code: 1, without: []string{"rule team: pass"}},
		{name: "generate-exceptions", args: []string{p("enforce.yaml"), p("audit.yaml"), "-r", p("noteam.yaml"), "-r", p("good.yaml"), "--generate-exceptions"}, code: 1,
			stdout:  []string{"---\napiVersion: kyverno.io/v2beta1\nkind: PolicyException\nmetadata:\n  creationTimestamp: null\n  labels:\n    cleanup.kyverno.io/ttl: 720h0m0s\n  name: require-team-team-shop-noteam\nspec:\n  exceptions:\n  - policyName: require-team\n    ruleNames:\n    - team\n  match:\n    all:\n    - resources:\n        kinds:\n        - Pod\n        names:\n        - noteam\n        namespaces:\n        - shop\n\n"},
			without: []string{"good"}},
		{name: "generated-exception-ttl", args: []string{p("enforce.yaml"), "-r", p("noteam.yaml"), "--generate-exceptions", "--generated-exception-ttl", "0", "--output-format", "json"}, code: 1,
			stdout: []string{`{"apiVersion":"kyverno.io/v2beta1","kind":"PolicyException","metadata":{"creationTimestamp":null,"name":"require-team-team-shop-noteam"}`}, without: []string{"ttl"}},
		{name: "generate-exceptions audit-warn", args: []string{p("audit.yaml"), "-r", p("latest.yaml"), "--generate-exceptions", "--audit-warn"}, code: 0, without: []string{"PolicyException"}},
		{name: "show-performance", args: []string{p("enforce.yaml"), "-r", p("good.yaml"), "--show-performance"}, code: 0, stderr: []string{"performance: loading "}},
		{name: "parallel", args: []string{p("enforce.yaml"), "-r", p("good.yaml"), "-r", p("noteam.yaml"), "--parallel", "1"}, code: 1, stdout: []string{"pass: 1, fail: 1"}},
		{name: "stdin flag", args: []string{p("mutate.yaml"), "-r", p("good.yaml"), "-i"}, code: 0, stdout: []string{"\napiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n    owner: platform\n"}, stderr: []string{"pass: 1"}, without: []string{"pass: 1"}},
		{name: "output file", args: []string{p("mutate.yaml"), "-r", p("good.yaml"), "-r", p("noteam.yaml"), "-o", p("out/mutated.yaml")}, code: 0,
			files: map[string]string{"out/mutated.yaml": "owner: platform"}},
		{name: "output folder", args: []string{p("mutate.yaml"), "-r", p("good.yaml"), "--output", p("outdir") + "/"}, code: 0,
			files: map[string]string{"outdir/good-mutated.yaml": "owner: platform"}},
		{name: "output folder, generated", args: []string{p("generate.yaml"), "-r", p("ns.yaml"), "-o", p("gen") + "/"}, code: 0,
			files: map[string]string{"gen/default-quota-generated.yaml": "kind: ResourceQuota\nmetadata:\n"}},
		{name: "output file, generated", args: []string{p("generate.yaml"), "-r", p("ns.yaml"), "-o", p("gen.yaml")}, code: 0,
			files: map[string]string{"gen.yaml": "  name: default\n  namespace: team-a\nspec:\n  hard:\n    pods: \"10\"\n\n---\n\n"}},
		{name: "target-resource", args: []string{p("existing.yaml"), "-r", p("trigger.yaml"), "--target-resource", p("target.yaml"), "-o", p("targets.yaml")}, code: 0,
			files: map[string]string{"targets.yaml": "  labels:\n    stamped: \"yes\"\n  name: target\n"}},
		{name: "target-resources folder", args: []string{p("existing.yaml"), "-r", p("trigger.yaml"), "--target-resources", p("target.yaml"), "--detailed-results"}, code: 0, stdout: []string{"rule stamp: pass"}},
		{name: "no target", args: []string{p("existing.yaml"), "-r", p("trigger.yaml"), "--detailed-results"}, code: anyCode, without: []string{"rule stamp: pass"}},

		// accepted for compatibility
		{name: "continue-on-fail", args: []string{p("enforce.yaml"), "-r", p("good.yaml"), "--continue-on-fail"}, code: 0},
		{name: "klog flags", args: []string{p("enforce.yaml"), "-r", p("good.yaml"), "-v", "3", "--logtostderr", "--log_dir", "/tmp"}, code: 0},
		{name: "registry without image entries", args: []string{p("enforce.yaml"), "-r", p("good.yaml"), "--registry"}, code: 0},

		// live-cluster flags (apply_cluster_test.go runs them on a cluster)
		{name: "cluster, no kubeconfig", args: []string{p("enforce.yaml"), "-c", "--kubeconfig", p("missing-kubeconfig")}, code: 1, stderr: []string{"failed to connect to the cluster"}},
		{name: "cluster flags without cluster", args: []string{p("enforce.yaml"), "-r", p("good.yaml"), "--kubeconfig", "k", "--context", "c", "-n", "default"}, code: 0, stderr: []string{"--kubeconfig, --context, --namespace without --cluster: ignored"}},
		{name: "batch-size too small", args: []string{p("enforce.yaml"), "-c", "--batch-size", "10"}, code: 1, stderr: []string{"batch size cannot be less than 100"}},
		{name: "concurrent too large", args: []string{p("enforce.yaml"), "-c", "--concurrent", "33"}, code: 1, stderr: []string{"concurrency cannot exceed 32"}},

		// need pieces gavel does not have
		{name: "envoy payload", args: []string{p("enforce.yaml"), "--envoy-payload", "p.json", "-r", p("good.yaml")}, code: 1, stderr: []string{"not supported"}},
		{name: "json payload and resources", args: []string{p("enforce.yaml"), "--json", "p.json", "-r", p("good.yaml")}, code: 1, stderr: []string{"both resource and json files can not be used together"}},
		{name: "no resource", args: []string{p("enforce.yaml")}, code: 1, stderr: []string{"resource file(s) or cluster required"}},
		{name: "no policy", args: []string{"-r", p("good.yaml")}, code: 1, stderr: []string{"require policy"}},
		{name: "stdin twice", args: []string{"-", "-r", "-"}, code: 1, stderr: []string{"either policies or resources"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := applyRun(t, tt.stdin, tt.args...)
			if tt.code != anyCode && code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range tt.without {
				if strings.Contains(stdout, s) {
					t.Errorf("stdout has %q:\n%s", s, stdout)
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			for name, want := range tt.files {
				b, err := os.ReadFile(p(name))
				if err != nil {
					t.Errorf("%s: %v", name, err)
				} else if !strings.Contains(string(b), want) {
					t.Errorf("%s lacks %q:\n%s", name, want, b)
				}
			}
		})
	}
}
