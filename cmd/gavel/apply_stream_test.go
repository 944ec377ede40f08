package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/loader"
	"github.com/gavelpolicy/gavel/report"
)

func fixedNow() time.Time { return time.Unix(1700000000, 0) }

// seconds drops the report timestamps, the only thing that differs
// between two runs.
var (
	seconds     = regexp.MustCompile(`(?m)^    seconds: \d+\n`)
	jsonSeconds = regexp.MustCompile(`"seconds":\d+`)
)

// noSeconds drops the timestamps of YAML and JSON reports.
func noSeconds(s string) string {
	return jsonSeconds.ReplaceAllString(seconds.ReplaceAllString(s, ""), `"seconds":0`)
}

func applyRun(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(append([]string{"apply"}, args...), strings.NewReader(stdin), &out, &errOut)
	return code, noSeconds(out.String()), errOut.String()
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const streamPolicies = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: team-label
  annotations:
    policies.kyverno.io/category: Best Practices
spec:
  validationFailureAction: Audit
  rules:
  - name: team
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "the team label is required"
      pattern:
        metadata:
          labels:
            team: "?*"
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: no-host-network
spec:
  validationFailureAction: Enforce
  rules:
  - name: host-network
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      podSecurity:
        level: baseline
        version: latest
---
apiVersion: kyverno.io/v1
kind: Policy
metadata:
  name: local
  namespace: shop
spec:
  rules:
  - name: name-prefix
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "names start with web"
      pattern:
        metadata:
          name: "web-*"
`

// pods returns n Pods, every third one with host networking, every other
// one without a team label, in namespaces shop and default.
func pods(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		ns := "default"
		if i%2 == 0 {
			ns = "shop"
		}
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: web-%d\n  namespace: %s\n", i, ns)
		if i%2 == 1 {
			b.WriteString("  labels:\n    team: a\n")
		}
		fmt.Fprintf(&b, "spec:\n  hostNetwork: %t\n  containers:\n  - name: c\n    image: nginx:%d\n", i%3 == 0, i)
	}
	return b.String()
}

// compileFiles compiles the policies under path.
func compileFiles(t *testing.T, path string) *engine.PolicySet {
	t.Helper()
	ps, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(ps.Policies...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// wantReports builds the reports of a run in memory, as the library's
// report.Build and report.WriteYAML (report.WriteJSON with asJSON) make
// them, to compare with apply's streamed output.
func wantReports(t *testing.T, policyDir, resources string, auditWarn, asJSON bool) string {
	t.Helper()
	rs, err := loader.Load(resources)
	if err != nil {
		t.Fatal(err)
	}
	ev := evaluator{set: compileFiles(t, policyDir)}
	var all []engine.PolicyResult
	for _, d := range rs.Resources {
		all = append(all, ev.evaluate(d.Object).policies...)
	}
	opts := report.Options{Clock: fixedNow, AuditWarn: auditWarn, Format: report.OpenReports}
	reports, err := report.Build(all, opts)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	write := report.WriteYAML
	if asJSON {
		write = report.WriteJSON
	}
	if err := write(&b, reports); err != nil {
		t.Fatal(err)
	}
	return noSeconds(b.String())
}

// TestApplyStreamedReports: the reports apply streams (rendered by the
// workers, kept in memory or spilled to a temporary file) are those the
// library builds from all the results at once, whatever the parallelism.
func TestApplyStreamedReports(t *testing.T) {
	dir := writeFiles(t, map[string]string{"policies.yaml": streamPolicies, "pods.yaml": pods(300)})
	policies, resources := filepath.Join(dir, "policies.yaml"), filepath.Join(dir, "pods.yaml")
	for _, run := range []struct{ auditWarn, json bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		auditWarn := run.auditWarn
		want := wantReports(t, policies, resources, auditWarn, run.json)
		for _, tc := range []struct {
			name     string
			memory   int
			parallel string
		}{
			{"in memory", 64 << 20, "2"},
			{"spilled", 1024, "3"},
			{"one worker", 0, "1"},
		} {
			old := reportMemory
			reportMemory = tc.memory
			args := []string{policies, "--resource", resources, "--policy-report", "--parallel", tc.parallel}
			if auditWarn {
				args = append(args, "--audit-warn")
			}
			if run.json {
				args = append(args, "--output-format", "json")
			}
			code, got, stderr := applyRun(t, "", args...)
			reportMemory = old
			if code != exitFailed {
				t.Fatalf("%s: exit %d, want %d (an Enforce rule fails); stderr %s", tc.name, code, exitFailed, stderr)
			}
			if got != want {
				t.Errorf("%s (audit-warn %v, json %v): streamed reports differ:\n%s\n--- want\n%s", tc.name, auditWarn, run.json, got, want)
			}
		}
	}
}

// TestApplyStdin: resources from standard input give what the same file
// gives.
func TestApplyStdin(t *testing.T) {
	text := pods(20)
	dir := writeFiles(t, map[string]string{"policies.yaml": streamPolicies, "pods.yaml": text})
	policies := filepath.Join(dir, "policies.yaml")
	_, fromFile, _ := applyRun(t, "", policies, "--resource", filepath.Join(dir, "pods.yaml"), "--policy-report")
	code, fromStdin, stderr := applyRun(t, text, policies, "--resource", "-", "--policy-report")
	if code != exitFailed || fromStdin != fromFile {
		t.Errorf("exit %d, stderr %s; stdin report:\n%s\n--- file report:\n%s", code, stderr, fromStdin, fromFile)
	}
}

// TestApplyBadResource: with --continue-on-error=false, a document that
// cannot be decoded stops the run with exit 1, naming the file and the
// document, and nothing is printed; by default (upstream's true) the run
// goes on, the document counted as an error (exit 1).
func TestApplyBadResource(t *testing.T) {
	bad := pods(50) + "---\nkind: Pod\nmetadata: [\n" + pods(50)
	dir := writeFiles(t, map[string]string{"policies.yaml": streamPolicies, "pods.yaml": bad})
	code, out, stderr := applyRun(t, "", filepath.Join(dir, "policies.yaml"), "--resource", filepath.Join(dir, "pods.yaml"))
	if code != exitFailed || !strings.Contains(out, "error: 1,") || !strings.Contains(stderr, filepath.Join(dir, "pods.yaml")+"[50]: ") {
		t.Errorf("default: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	for _, args := range [][]string{{"--policy-report"}, {"--policy-report", "--output-format", "json"}, {"--output-format", "json"}, {"--output-format", "junit"}, {}} {
		args = append(args, "--continue-on-error=false")
		code, out, stderr := applyRun(t, "", append([]string{filepath.Join(dir, "policies.yaml"), "--resource", filepath.Join(dir, "pods.yaml")}, args...)...)
		if code != exitUsage || out != "" {
			t.Errorf("%v: exit %d, stdout %q", args, code, out)
		}
		want := "gavel apply: failed to load resources: " + filepath.Join(dir, "pods.yaml") + "[50]: "
		if !strings.HasPrefix(stderr, want) {
			t.Errorf("%v: stderr %q, want it to start with %q", args, stderr, want)
		}
	}
}

// TestApplyExceptionsAmongResources: with --exceptions-with-resources,
// PolicyExceptions in the resource files apply (the first reading finds
// them), to resources before and after them; a malformed one is a load
// error. Without the flag they do not apply, as upstream.
func TestApplyExceptionsAmongResources(t *testing.T) {
	exception := `apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: web-0-team
  namespace: shop
spec:
  exceptions:
  - policyName: team-label
    ruleNames: [team]
  match:
    any:
    - resources:
        kinds: [Pod]
        names: [web-0, web-4]
`
	dir := writeFiles(t, map[string]string{
		"policies.yaml": streamPolicies,
		"pods.yaml":     pods(3) + "---\n" + exception + pods(6)[len(pods(3)):],
		"bad.yaml":      pods(3) + "---\napiVersion: kyverno.io/v2\nkind: PolicyException\nmetadata:\n  name: x\nspec:\n  unknown: 1\n",
	})
	code, out, stderr := applyRun(t, "", filepath.Join(dir, "policies.yaml"), "--resource", filepath.Join(dir, "pods.yaml"), "--output-format", "json", "--detailed-results", "--exceptions-with-resources")
	if code != exitFailed {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	for _, name := range []string{"shop/Pod/web-0", "shop/Pod/web-4"} {
		if !strings.Contains(out, `"resource": "`+name+`",
      "result": "skip"`) {
			t.Errorf("%s: no skip by the exception:\n%s", name, out)
		}
	}
	_, out, _ = applyRun(t, "", filepath.Join(dir, "policies.yaml"), "--resource", filepath.Join(dir, "pods.yaml"), "--output-format", "json", "--detailed-results")
	if strings.Contains(out, `"result": "skip"`) {
		t.Errorf("without --exceptions-with-resources, an exception among the resources applied:\n%s", out)
	}
	code, _, stderr = applyRun(t, "", filepath.Join(dir, "policies.yaml"), "--resource", filepath.Join(dir, "bad.yaml"), "--policy-report", "--exceptions-within-resources")
	if code != exitUsage || !strings.Contains(stderr, "failed to load resources") || !strings.Contains(stderr, "unknown") {
		t.Errorf("malformed exception: exit %d, stderr %s", code, stderr)
	}
}

// TestApplyAllKindsRead: when a policy may read any kind through the
// cluster (a target kind known only at evaluation), every resource is
// decoded once and kept; the reports are the same as without that policy
// for the other policies.
func TestApplyAllKindsRead(t *testing.T) {
	anyTarget := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: touch-any
spec:
  rules:
  - name: touch
    match:
      any:
      - resources:
          kinds: [ConfigMap]
    mutate:
      targets:
      - apiVersion: v1
        kind: "{{ request.object.data.kind }}"
        name: web-1
        namespace: default
      patchStrategicMerge:
        metadata:
          labels:
            touched: "yes"
`
	text := pods(10) + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: default\ndata:\n  kind: Pod\n"
	dir := writeFiles(t, map[string]string{"policies.yaml": streamPolicies, "any.yaml": anyTarget, "pods.yaml": text})
	if _, all := compileFiles(t, filepath.Join(dir, "any.yaml")).ClientKinds(); !all {
		t.Fatal("the policy does not read every kind")
	}
	code, out, stderr := applyRun(t, "", dir, "--resource", filepath.Join(dir, "pods.yaml"), "--output-format", "json", "--detailed-results")
	if code != exitFailed {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	// the target, web-1 (a resource of the run), was found in the cluster
	if !strings.Contains(out, `"policy": "touch-any",
      "rule": "touch",
      "type": "Mutation",
      "resource": "default/ConfigMap/c",
      "result": "pass"`) {
		t.Errorf("output:\n%s", out)
	}
	_, reportAll, _ := applyRun(t, "", dir, "--resource", filepath.Join(dir, "pods.yaml"), "--policy-report")
	_, reportSome, _ := applyRun(t, "", filepath.Join(dir, "policies.yaml"), "--resource", filepath.Join(dir, "pods.yaml"), "--policy-report")
	if !strings.Contains(reportAll, "policy: touch-any") || !strings.Contains(reportAll, "name: web-9") || len(reportAll) <= len(reportSome) {
		t.Errorf("report with every kind read:\n%s", reportAll)
	}
}

// TestApplyTextSpooled: the text output is the same whether its lines stay
// in memory or go to a temporary file, lists every failing rule, and ends
// with the summary.
func TestApplyTextSpooled(t *testing.T) {
	dir := writeFiles(t, map[string]string{"policies.yaml": streamPolicies, "pods.yaml": pods(200)})
	args := []string{filepath.Join(dir, "policies.yaml"), "--resource", filepath.Join(dir, "pods.yaml")}
	var outs []string
	for _, memory := range []int{64 << 20, 100} {
		old := reportMemory
		reportMemory = memory
		code, out, stderr := applyRun(t, "", args...)
		reportMemory = old
		if code != exitFailed {
			t.Fatalf("exit %d; stderr %s", code, stderr)
		}
		outs = append(outs, out)
	}
	if outs[0] != outs[1] {
		t.Fatalf("spooled output differs:\n%s\n--- in memory:\n%s", outs[1], outs[0])
	}
	if !strings.Contains(outs[0], "\npass: ") || !strings.HasSuffix(outs[0], "\n") {
		t.Errorf("no summary at the end:\n%s", outs[0])
	}
	// upstream's blocks: "policy P -> resource R failed:", then "N - RULE MESSAGE"
	fails := strings.Count(outs[0], "\n1 - ")
	var sum struct{ pass, fail, warn, errs, skip int }
	tail := outs[0][strings.LastIndex(outs[0], "\npass: ")+1:]
	if _, err := fmt.Sscanf(tail, "pass: %d, fail: %d, warn: %d, error: %d, skip: %d", &sum.pass, &sum.fail, &sum.warn, &sum.errs, &sum.skip); err != nil {
		t.Fatalf("summary %q: %v", tail, err)
	}
	if fails != sum.fail || sum.fail < 100 {
		t.Errorf("%d failing lines, summary says %d", fails, sum.fail)
	}
	if !strings.HasPrefix(outs[0], "\nApplying 9 policy rule(s) to 200 resource(s)...\npolicy ") {
		t.Errorf("output does not start with upstream's banner and a result block:\n%.200s", outs[0])
	}
}

// TestSpool: a spool moves to a temporary file past its budget, gives back
// every byte in order, and removes its file.
func TestSpool(t *testing.T) {
	s := newSpool(100)
	var want bytes.Buffer
	for i := 0; i < 50; i++ {
		line := fmt.Sprintf("line %d\n", i)
		want.WriteString(line)
		if _, err := s.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if s.file == nil {
		t.Fatal("the spool stayed in memory past its budget")
	}
	name := s.file.Name()
	var got bytes.Buffer
	if _, err := s.WriteTo(&got); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("spool gave %q, want %q", got.String(), want.String())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Errorf("temporary file %s left behind: %v", name, err)
	}
	small := newSpool(1 << 10)
	small.Write([]byte("x"))
	if small.file != nil {
		t.Error("a small spool went to a file")
	}
}

// TestApplyDocumentsStreamed: the json and yaml documents of -o, written
// as the resources are evaluated (entries spooled), are the bytes
// json.MarshalIndent and yaml.Marshal make of the document of all the
// results at once, with evaluation errors,
// --fail-only, no entry at all, and entries spilled to a file.
func TestApplyDocumentsStreamed(t *testing.T) {
	noKind := "---\napiVersion: v1\nmetadata:\n  name: nokind\n"
	dir := writeFiles(t, map[string]string{
		"policies.yaml":  streamPolicies,
		"pods.yaml":      pods(60) + noKind,
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
	})
	policies := filepath.Join(dir, "policies.yaml")
	ev := evaluator{set: compileFiles(t, policies)}
	for _, resources := range []string{"pods.yaml", "configmap.yaml"} {
		path := filepath.Join(dir, resources)
		for _, format := range []string{"json", "yaml"} {
			for _, failOnly := range []bool{false, true} {
				f := applyFlags{format: format, formatSet: true, failOnly: failOnly}
				// the document of all the results at once
				inputs, err := readInputs([]string{path}, nil)
				if err != nil {
					t.Fatal(err)
				}
				var results []resourceResult
				if err := ev.run(inputs.each, 2, nil, func(rr *resourceResult) { results = append(results, *rr) }); err != nil {
					t.Fatal(err)
				}
				doc, _ := applyEntries(results, false)
				if failOnly {
					doc.Results = failing(doc.Results)
				}
				var want bytes.Buffer
				if format == "json" {
					b, err := json.MarshalIndent(doc, "", "  ")
					if err != nil {
						t.Fatal(err)
					}
					want.Write(append(b, '\n'))
				} else {
					b, err := yaml.Marshal(doc)
					if err != nil {
						t.Fatal(err)
					}
					want.Write(b)
				}
				for _, memory := range []int{64 << 20, 256} {
					old := reportMemory
					reportMemory = memory
					args := []string{policies, "--resource", path, "--output-format", format}
					if failOnly {
						args = append(args, "--fail-only")
					}
					_, got, stderr := applyRun(t, "", args...)
					reportMemory = old
					if got != want.String() {
						t.Errorf("%s %s %+v (memory %d): streamed document differs:\n%s\n--- want\n%s", resources, format, f, memory, got, want.String())
					}
					if resources == "pods.yaml" && !strings.Contains(stderr, "no kind in the request") {
						t.Errorf("%s: the evaluation error is not reported: %s", resources, stderr)
					}
				}
			}
		}
	}
}

// TestApplyBadResourceAllKinds: when the scan decodes every document (a
// policy reads any kind), a document that cannot be decoded is still an
// error result by default, and ends the run with --continue-on-error=false.
func TestApplyBadResourceAllKinds(t *testing.T) {
	anyTarget := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: touch-any
spec:
  rules:
  - name: touch
    match:
      any:
      - resources:
          kinds: [ConfigMap]
    mutate:
      targets:
      - apiVersion: v1
        kind: "{{ request.object.data.kind }}"
        name: web-1
        namespace: default
      patchStrategicMerge:
        metadata:
          labels:
            touched: "yes"
`
	bad := pods(5) + "---\nkind: Pod\nmetadata: [\n" + pods(5)
	dir := writeFiles(t, map[string]string{"any.yaml": anyTarget, "pods.yaml": bad})
	if _, all := compileFiles(t, filepath.Join(dir, "any.yaml")).ClientKinds(); !all {
		t.Fatal("the policy does not read every kind")
	}
	code, out, stderr := applyRun(t, "", filepath.Join(dir, "any.yaml"), "--resource", filepath.Join(dir, "pods.yaml"))
	if code != exitFailed || !strings.Contains(out, "error: 1,") || !strings.Contains(stderr, "pods.yaml[5]: ") {
		t.Errorf("default: exit %d\nstdout %s\nstderr %s", code, out, stderr)
	}
	code, out, stderr = applyRun(t, "", filepath.Join(dir, "any.yaml"), "--resource", filepath.Join(dir, "pods.yaml"), "--continue-on-error=false")
	if code != exitUsage || out != "" || !strings.Contains(stderr, "failed to load resources") {
		t.Errorf("--continue-on-error=false: exit %d\nstdout %s\nstderr %s", code, out, stderr)
	}
}
