package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestApplyOutputs(t *testing.T) {
	args := []string{"apply", "../../examples/policies", "--resource", "../../examples/resources"}
	var out, errOut bytes.Buffer
	if code := run(append(args, "--output-format", "json"), nil, &out, &errOut); code != exitFailed {
		t.Fatalf("exit %d, want %d (an Enforce rule fails); stderr %s", code, exitFailed, errOut.String())
	}
	var doc applyDocument
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("json output: %v\n%s", err, out.String())
	}
	if doc.Summary["pass"] != 9 || doc.Summary["fail"] != 3 || !doc.Blocked {
		t.Errorf("summary %v blocked %v", doc.Summary, doc.Blocked)
	}
	out.Reset()
	if code := run(append(args, "--output-format", "junit", "--fail-only"), nil, &out, &errOut); code != exitFailed {
		t.Fatalf("junit exit %d", code)
	}
	if !strings.Contains(out.String(), `<testsuites name="gavel apply" tests="3" failures="3"`) {
		t.Errorf("junit output:\n%s", out.String())
	}
	out.Reset()
	if code := run(append(args, "--output-format", "junit", "--policy-report"), nil, &out, &errOut); code != exitUsage {
		t.Errorf("junit with --policy-report: exit %d, want %d", code, exitUsage)
	}
	out.Reset()
	if code := run(append(args, "--audit-warn"), nil, &out, &errOut); code != exitFailed {
		t.Errorf("audit-warn exit %d", code)
	}
	if !strings.Contains(out.String(), "pass: 9, fail: 2, warn: 1, error: 0, skip: 0") {
		t.Errorf("audit-warn summary:\n%s", out.String())
	}
}

// The in-memory cluster keeps only the kinds the policies read through it
// (ClientKinds): a clone source among the resources is still found, and
// the report stays the same whether or not the other objects are kept.
func TestApplyClusterKeepsClientKinds(t *testing.T) {
	dir := t.TempDir()
	policy := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: copy-settings
spec:
  rules:
  - name: clone
    match:
      any:
      - resources:
          kinds: [Namespace]
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: settings
      namespace: "{{ request.object.metadata.name }}"
      clone:
        namespace: default
        name: settings
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: team-label
spec:
  validationFailureAction: Audit
  rules:
  - name: team
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
	resources := `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: default
data:
  level: high
---
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
spec:
  containers:
  - name: web
    image: nginx
`
	write := func(name, text string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pf, rf := write("policy.yaml", policy), write("resources.yaml", resources)
	var out, errOut bytes.Buffer
	// an Audit failure fails the run, as upstream
	if code := run([]string{"apply", pf, "--resource", rf, "--output-format", "json", "--detailed-results"}, nil, &out, &errOut); code != exitFailed {
		t.Fatalf("exit %d; stderr %s", code, errOut.String())
	}
	var doc applyDocument
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range doc.Results {
		if e.Policy == "copy-settings" {
			found = true
			if e.Result != "pass" {
				t.Errorf("clone rule: %s %q (the source ConfigMap must be in the cluster)", e.Result, e.Message)
			}
		}
	}
	if !found || doc.Summary["fail"] != 1 {
		t.Errorf("results %+v summary %v", doc.Results, doc.Summary)
	}
	out.Reset()
	if code := run([]string{"apply", pf, "--resource", rf, "--policy-report"}, nil, &out, &errOut); code != exitFailed {
		t.Fatalf("report exit %d; stderr %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "name: web") || !strings.Contains(out.String(), "result: fail") {
		t.Errorf("report:\n%s", out.String())
	}
}
