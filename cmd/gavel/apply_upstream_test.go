package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// upstreamFiles add to flagFiles what the tests of upstream's text output
// need: a second mutate policy, and a policy that does not compile.
var upstreamFiles = map[string]string{
	"mutate2.yaml": `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: add-tier
spec:
  rules:
  - name: tier
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            tier: web
`,
	"mutate-skip.yaml": `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: add-nothing
spec:
  rules:
  - name: never
    match:
      any:
      - resources:
          kinds: [Pod]
    preconditions:
      all:
      - key: "{{ request.object.metadata.name }}"
        operator: Equals
        value: nobody
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            never: "true"
`,
	"mutate-error.yaml": `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: add-missing
spec:
  rules:
  - name: missing
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            from: "{{ request.object.spec.nothing.here }}"
`,
	"bad-jmespath.yaml": `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: bad-query
spec:
  rules:
  - name: q
    match:
      any:
      - resources:
          kinds: [ConfigMap]
    validate:
      message: "x"
      deny:
        conditions:
          any:
          - key: "{{ to_upper(request.object.metadata.name }}"
            operator: Equals
            value: X
`,
	"invalid.yaml": `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: broken
spec:
  validationFailureAction: Sometimes
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      pattern:
        metadata:
          name: "?*"
`,
}

// TestApplyUpstreamText checks the default text output, byte for byte, as
// upstream's kyverno apply prints it, and the behaviours of the second
// pass on issue 24: invalid policies skipped and counted as errors, one
// copy per mutate policy with -o and -i, --exceptions-with-resources
// without -e, exit 1 for load errors.
func TestApplyUpstreamText(t *testing.T) {
	files := map[string]string{}
	for k, v := range flagFiles {
		files[k] = v
	}
	for k, v := range upstreamFiles {
		files[k] = v
	}
	dir := writeFiles(t, files)
	p := func(name string) string { return filepath.Join(dir, name) }
	good := "apiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n    owner: platform\n    team: a\n  name: good\n  namespace: shop\nspec:\n  containers:\n  - image: nginx:1.0\n    name: c\n"
	both := strings.Replace(good, "    team: a\n", "    team: a\n    tier: web\n", 1)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string            // the whole of stdout
		stderr []string          // substrings of stderr
		files  map[string]string // whole files
	}{
		{name: "failure block and summary", args: []string{p("enforce.yaml"), "-r", p("good.yaml"), "-r", p("noteam.yaml")}, code: 1,
			stdout: "\nApplying 3 policy rule(s) to 2 resource(s)...\npolicy require-team -> resource shop/Pod/noteam failed:\n1 - team validation error: the team label is required. rule team failed at path /metadata/labels/team/\n\n\npass: 1, fail: 1, warn: 0, error: 0, skip: 0 \n"},
		{name: "audit warning block", args: []string{p("audit.yaml"), "-r", p("latest.yaml"), "--audit-warn"}, code: 0,
			stdout: "\nApplying 3 policy rule(s) to 1 resource(s)...\npolicy disallow-latest -> resource shop/Pod/latest failed as audit warning:\n1 - tag validation error: latest is not allowed. rule tag failed at path /spec/containers/0/image/\n\n\npass: 0, fail: 0, warn: 1, error: 0, skip: 0 \n"},
		{name: "banner with exceptions", args: []string{p("enforce.yaml"), "-r", p("noteam.yaml"), "-e", p("exception.yaml")}, code: 0,
			stdout: "\nApplying 3 policy rule(s) to 1 resource(s) with 1 exception(s)...\n\npass: 0, fail: 0, warn: 0, error: 0, skip: 1 \n"},
		{name: "mutated resources in the text", args: []string{p("mutate.yaml"), "-r", p("good.yaml")}, code: 0,
			stdout: "\nApplying 3 policy rule(s) to 1 resource(s)...\n\npolicy add-owner applied to shop/Pod/good:\n" + good + "\n---\n\n\nMutation:\nMutation has been applied successfully.\n\npass: 1, fail: 0, warn: 0, error: 0, skip: 0 \n"},
		// the note ends with a newline: the failure block starts on its line
		{name: "mutation then failure", args: []string{p("mutate2.yaml"), p("enforce.yaml"), "-r", p("noteam.yaml")}, code: 1,
			stdout: "\nApplying 6 policy rule(s) to 1 resource(s)...\n\npolicy add-tier applied to shop/Pod/noteam:\napiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n    app: x\n    tier: web\n  name: noteam\n  namespace: shop\nspec:\n  containers:\n  - image: nginx:1.0\n    name: c\n\n---\n\n\nMutation:\nMutation has been applied successfully.\npolicy require-team -> resource shop/Pod/noteam failed:\n1 - team validation error: the team label is required. rule team failed at path /metadata/labels/team/\n\n\npass: 1, fail: 1, warn: 0, error: 0, skip: 0 \n"},
		{name: "skipped mutate rule", args: []string{p("mutate-skip.yaml"), "-r", p("good.yaml")}, code: 0,
			stdout: "\nApplying 3 policy rule(s) to 1 resource(s)...\n\nskipped mutate policy add-nothing -> resource shop/Pod/good\n\npass: 0, fail: 0, warn: 0, error: 0, skip: 1 \n"},
		{name: "erroring mutate rule", args: []string{p("mutate-error.yaml"), "-r", p("good.yaml")}, code: 1,
			stdout: "\nApplying 3 policy rule(s) to 1 resource(s)...\n\nerror while applying mutate policy add-missing -> resource shop/Pod/good \nerror:  variable substitution failed: failed to resolve request.object.spec.nothing.here at path /mutate/patchStrategicMerge/metadata/labels/from: JMESPath query failed: Unknown key \"nothing\" in path\n\npass: 0, fail: 0, warn: 0, error: 1, skip: 0 \n"},
		{name: "patched targets", args: []string{p("existing.yaml"), "-r", p("trigger.yaml"), "--target-resource", p("target.yaml")}, code: 0,
			stdout: "\nApplying 1 policy rule(s) to 1 resource(s)...\n\npolicy stamp-config applied to shop/ConfigMap/trigger:\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: trigger\n  namespace: shop\n\n---\npatched targets: \n\napiVersion: v1\ndata:\n  a: b\nkind: ConfigMap\nmetadata:\n  labels:\n    stamped: \"yes\"\n  name: target\n  namespace: shop\n  resourceVersion: \"2\"\n\n---\n\n\n\nMutation:\nMutation has been applied successfully.\n\npass: 1, fail: 0, warn: 0, error: 0, skip: 0 \n"},
		{name: "table: banner and mutations first", args: []string{p("mutate.yaml"), "-r", p("good.yaml"), "-t"}, code: 0,
			stdout: "\nApplying 3 policy rule(s) to 1 resource(s)...\n\npolicy add-owner applied to shop/Pod/good:\n" + good + "\n---\n\n\nMutation:\nMutation has been applied successfully.\n\nID  POLICY     RULE   RESOURCE       RESULT\n1   add-owner  owner  shop/Pod/good  pass\n\npass: 1, fail: 0, warn: 0, error: 0, skip: 0\n"},
		{name: "-o file: a copy per mutate policy", args: []string{p("mutate.yaml"), p("mutate2.yaml"), "-r", p("good.yaml"), "-o", p("two.yaml")}, code: 0,
			stdout: "\nApplying 6 policy rule(s) to 1 resource(s)...\n\n\nMutation:\nMutation has been applied successfully.\n\n\nMutation:\nMutation has been applied successfully.\n\npass: 2, fail: 0, warn: 0, error: 0, skip: 0 \n",
			files:  map[string]string{"two.yaml": good + "\n---\n\n" + both + "\n---\n\n"}},
		{name: "-o folder: the copies appended", args: []string{p("mutate.yaml"), p("mutate2.yaml"), "-r", p("good.yaml"), "-o", p("dir") + "/"}, code: 0,
			files: map[string]string{"dir/good-mutated.yaml": good + "\n---\n\n" + both + "\n---\n\n"}},
		{name: "-i: a copy per mutate policy", args: []string{p("mutate.yaml"), p("mutate2.yaml"), "-r", p("good.yaml"), "-i"}, code: 0,
			stdout: "\n" + good + "\n---\n\n" + both + "\n---\n"},
		{name: "invalid policy skipped, counted as an error", args: []string{p("invalid.yaml"), p("enforce.yaml"), "-r", p("good.yaml")}, code: 1,
			stdout: "\nApplying 4 policy rule(s) to 1 resource(s)...\n" + divider + "\nPolicies Skipped:\n1. broken: spec.validationFailureAction: Unsupported value: \"Sometimes\": supported values: \"Audit\", \"Enforce\"\n" + divider + "\n\npass: 1, fail: 0, warn: 0, error: 1, skip: 0 \n",
			stderr: []string{"policy broken skipped", "validationFailureAction", "policy errors"}},
		// the reason is on stdout, as upstream's list gives it: a JMESPath
		// error is not "required variables are not provided"
		{name: "JMESPath error reported as such", args: []string{p("bad-jmespath.yaml"), "-r", p("good.yaml")}, code: 1,
			stdout: "\nApplying 1 policy rule(s) to 1 resource(s)...\n" + divider + "\nPolicies Skipped:\n1. bad-query: spec.rules[0].validate.deny.conditions.any[0].key: Invalid value: \"{{ to_upper(request.object.metadata.name }}\": rule q: invalid JMESPath expression \"to_upper(request.object.metadata.name\" (offset 37): SyntaxError: Incomplete expression\n" + divider + "\n\npass: 0, fail: 0, warn: 0, error: 1, skip: 0 \n"},
		{name: "invalid policy with a report", args: []string{p("invalid.yaml"), p("enforce.yaml"), "-r", p("good.yaml"), "-p"}, code: 1,
			stderr: []string{"policy broken skipped", "error: 1"}},
		{name: "exceptions-with-resources ignores -e", args: []string{p("enforce.yaml"), "-r", p("noteam.yaml"), "-e", p("exception.yaml"), "--exceptions-with-resources"}, code: 1,
			stderr: []string{"--exception files are not read"}},
		{name: "exceptions-with-resources does not read -e", args: []string{p("enforce.yaml"), "-r", p("noteam.yaml"), "-r", p("exception.yaml"), "-e", p("missing.yaml"), "--exceptions-with-resources"}, code: 0,
			stdout: "\nApplying 3 policy rule(s) to 2 resource(s) with 1 exception(s)...\n\npass: 0, fail: 0, warn: 0, error: 0, skip: 1 \n"},
		{name: "load error exits 1", args: []string{p("missing.yaml"), "-r", p("good.yaml")}, code: 1, stderr: []string{"failed to load policies"}},
		{name: "usage error exits 1", args: []string{p("enforce.yaml"), "-r", p("good.yaml"), "--no-such-flag"}, code: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := applyRun(t, "", tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			if tt.stdout != "" && stdout != tt.stdout {
				t.Errorf("stdout:\n%q\nwant:\n%q", stdout, tt.stdout)
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
				} else if string(b) != want {
					t.Errorf("%s:\n%q\nwant:\n%q", name, b, want)
				}
			}
		})
	}
}
