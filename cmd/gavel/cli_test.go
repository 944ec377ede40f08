package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/policytest"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files")

// gavel runs the CLI in-process.
func runGavel(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// junitTime matches the time attributes of JUnit output, which vary.
var junitTime = regexp.MustCompile(`time="[0-9.]+"`)

func checkTestGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestTestOutputs(t *testing.T) {
	suite := filepath.Join("testdata", "suite")
	good := filepath.Join(suite, "good")
	tests := []struct {
		name   string
		args   []string
		code   int
		golden string
	}{
		{"text", []string{suite}, exitUsage, "text.txt"},
		{"text good", []string{good}, exitOK, "text-good.txt"},
		{"text all detailed", []string{suite, "--fail-only=false", "--detailed-results"}, exitUsage, "text-all-detailed.txt"},
		{"table", []string{"-o", "table", suite}, exitUsage, "table.txt"},
		{"table all detailed", []string{suite, "--output", "table", "--fail-only=false", "--detailed-results"}, exitUsage, "table-all-detailed.txt"},
		{"table good fail-only", []string{"-o", "table", good}, exitOK, "table-good.txt"},
		{"json", []string{"-o", "json", suite}, exitUsage, "suite.json"},
		{"json fail-only", []string{"-o", "json", "--fail-only", suite}, exitUsage, "suite-fail-only.json"},
		{"yaml", []string{"--output-format=yaml", suite}, exitUsage, "suite.yaml"},
		{"junit", []string{"-o", "junit", suite}, exitUsage, "suite.xml"},
		{"junit bad only", []string{"-o", "junit", filepath.Join(suite, "bad")}, exitFailed, "bad.xml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runGavel(append([]string{"test"}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			if strings.Contains(stdout, "\033[") {
				t.Errorf("colour codes written to a non-terminal")
			}
			checkTestGolden(t, tt.golden, junitTime.ReplaceAllString(stdout, `time="0.000"`))
		})
	}
}

// TestSummaryLine checks that the default, table and markdown outputs end with
// exactly "N passed, N failed", and that the machine formats put it on
// stderr instead.
func TestSummaryLine(t *testing.T) {
	suite := filepath.Join("testdata", "suite")
	for _, format := range testFormats {
		for _, extra := range [][]string{nil, {"--fail-only=false"}, {"--detailed-results"}} {
			args := append([]string{"test", "-o", format, suite}, extra...)
			_, stdout, stderr := runGavel(args...)
			out := stdout
			if format != formatText && format != formatTable && format != formatMarkdown {
				out = stderr
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if last := lines[len(lines)-1]; last != "3 passed, 3 failed" {
				t.Errorf("%q: last line %q", args, last)
			}
		}
	}
}

// TestMachineFormatsParse decodes the json, yaml and junit outputs.
func TestMachineFormatsParse(t *testing.T) {
	suite := filepath.Join("testdata", "suite")
	_, out, _ := runGavel("test", "-o", "json", suite)
	var doc testReport
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("json: %v", err)
	}
	if doc.Summary != (testSummary{Tests: 3, Passed: 3, Failed: 3}) {
		t.Errorf("json summary = %+v", doc.Summary)
	}
	_, out, _ = runGavel("test", "-o", "yaml", suite)
	var ydoc testReport
	if err := yaml.Unmarshal([]byte(out), &ydoc); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	if ydoc.Summary != doc.Summary || len(ydoc.Tests) != 3 || ydoc.Tests[0].Results[1].Reason != "Want pass, got fail" {
		t.Errorf("yaml = %+v", ydoc)
	}
	_, out, _ = runGavel("test", "-o", "junit", suite)
	var x junitSuites
	if err := xml.Unmarshal([]byte(out), &x); err != nil {
		t.Fatalf("junit: %v", err)
	}
	if x.Tests != 6 || x.Failures != 2 || x.Errors != 1 || len(x.Suites) != 3 {
		t.Errorf("junit totals: tests=%d failures=%d errors=%d suites=%d", x.Tests, x.Failures, x.Errors, len(x.Suites))
	}
}

// TestStrict keeps --strict as it was: an entry whose rule did not apply
// passes only when skip was expected.
func TestStrict(t *testing.T) {
	dir := filepath.Join("testdata", "strict")
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"test", dir, "--fail-only=false"}, exitOK,
			"PASS testdata/strict/kyverno-test.yaml: policy=require-team-outside-system rule=check-team resource=Pod/system: excluded\n" +
				"PASS testdata/strict/kyverno-test.yaml: policy=require-team-outside-system rule=check-team resource=Pod/system: excluded\n" +
				"2 passed, 0 failed\n"},
		{[]string{"test", "--strict", "--fail-only=false", dir}, exitFailed,
			"FAIL testdata/strict/kyverno-test.yaml: policy=require-team-outside-system rule=check-team resource=Pod/system: excluded: the rule did not apply, want pass\n" +
				"PASS testdata/strict/kyverno-test.yaml: policy=require-team-outside-system rule=check-team resource=Pod/system: excluded\n" +
				"1 passed, 1 failed\n"},
	}
	for _, tt := range tests {
		code, stdout, stderr := runGavel(tt.args...)
		if code != tt.code || stdout != tt.want {
			t.Errorf("%q: exit %d (want %d)\n%s\nwant\n%s\nstderr: %s", tt.args, code, tt.code, stdout, tt.want, stderr)
		}
	}
}

func TestTestUsageErrors(t *testing.T) {
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"test"}, "gavel test: at least one PATH is required\n"},
		{[]string{"test", "--fial-only", "x"}, "gavel test: unknown flag --fial-only (did you mean --fail-only?)\nRun \"gavel test -h\" for the flags.\n"},
		{[]string{"test", "-x", "x"}, "gavel test: unknown flag -x\nRun \"gavel test -h\" for the flags.\n"},
		{[]string{"test", "--detail", "x"}, "gavel test: unknown flag --detail (did you mean --detailed-results?)\n"},
		{[]string{"test", "--parallel", "many", "x"}, "gavel test: invalid value \"many\" for flag -parallel"},
		{[]string{"test", "-o", "xml", "testdata/suite"}, "gavel test: unknown output format \"xml\" (text, table, json, yaml, junit or markdown)\n"},
		{[]string{"test", "testdata/no-such-folder"}, "gavel test: stat testdata/no-such-folder: no such file or directory\n"},
	}
	for _, tt := range tests {
		code, stdout, stderr := runGavel(tt.args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d", tt.args, code, exitUsage)
		}
		if !strings.HasPrefix(stderr, tt.stderr) {
			t.Errorf("%q: stderr\n%q\nwant prefix\n%q", tt.args, stderr, tt.stderr)
		}
		if stdout != "" {
			t.Errorf("%q: stdout %q", tt.args, stdout)
		}
	}
}

func TestNoTests(t *testing.T) {
	code, stdout, stderr := runGavel("test", t.TempDir())
	if code != exitOK || stdout != "0 passed, 0 failed\n" || !strings.Contains(stderr, "no kyverno-test.yaml found") {
		t.Errorf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
}

func TestHelp(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"Exit codes:", "0  clean", "1  failures", "a usage\n     error", "gavel completion bash|zsh|fish", "NO_COLOR"}},
		{[]string{"help"}, []string{"Usage:"}},
		{[]string{"test", "-h"}, []string{"Usage: gavel test PATH...", "--fail-only", "-o, --output-format string", "junit", "Exit codes, as upstream: 0",
			"-t, --test-case-selector string", "--require-tests", "-b, --git-branch string", "--registry", "--remove-color", "-f, --file-name string", "--detailed-results", "--kubeconfig"}},
		{[]string{"create", "-h"}, []string{"gavel create test|values|user-info|exception"}},
		{[]string{"help", "test"}, []string{"Usage: gavel test PATH..."}},
		{[]string{"help", "apply"}, []string{"Usage: gavel apply", "-r, --resource strings"}},
		{[]string{"help", "jp"}, []string{"gavel jp query", "-i string"}},
		{[]string{"help", "completion"}, []string{"gavel completion bash|zsh|fish"}},
		{[]string{"help", "version"}, []string{"Usage: gavel version"}},
	}
	for _, tt := range tests {
		code, stdout, stderr := runGavel(tt.args...)
		if code != exitOK {
			t.Errorf("%q: exit %d; stderr %s", tt.args, code, stderr)
		}
		for _, w := range tt.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%q: stdout lacks %q:\n%s", tt.args, w, stdout)
			}
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"tset"}, "gavel: unknown command \"tset\" (did you mean \"test\"?)\nRun \"gavel --help\" for usage.\n"},
		{[]string{"aply"}, "gavel: unknown command \"aply\" (did you mean \"apply\"?)\n"},
		{[]string{"frobnicate"}, "gavel: unknown command \"frobnicate\"\nRun \"gavel --help\" for usage.\n"},
		{[]string{"--strict"}, "gavel: unknown flag --strict: flags follow the command\n"},
		{[]string{"help", "nope"}, "gavel: unknown command \"nope\""},
		{[]string{"completion"}, "gavel completion: name one shell"},
		{[]string{"completion", "bsh"}, "gavel completion: unsupported shell \"bsh\" (bash, zsh or fish); did you mean \"bash\"?\n"},
		{[]string{"version", "extra"}, "gavel version: unexpected argument \"extra\"\n"},
	}
	for _, tt := range tests {
		code, _, stderr := runGavel(tt.args...)
		if code != exitUsage || !strings.HasPrefix(stderr, tt.stderr) {
			t.Errorf("%q: exit %d stderr\n%q\nwant prefix\n%q", tt.args, code, stderr, tt.stderr)
		}
	}
	if code, _, stderr := runGavel(); code != exitUsage || !strings.Contains(stderr, "Usage:") {
		t.Errorf("no arguments: exit %d, stderr %q", code, stderr)
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		code, stdout, _ := runGavel(arg)
		if code != exitOK {
			t.Fatalf("exit %d", code)
		}
		v := currentVersion()
		want := fmt.Sprintf("gavel %s\n", v.Version)
		if !strings.HasPrefix(stdout, want) || !strings.Contains(stdout, "go: go1.") {
			t.Errorf("%s: %q", arg, stdout)
		}
		if v.Module != "" && !strings.Contains(stdout, "module: "+v.Module+"\n") {
			t.Errorf("%s: no module line: %q", arg, stdout)
		}
	}
}

func TestCompletion(t *testing.T) {
	shells := []struct {
		name  string
		check []string // command that checks the syntax of the script in $1
		want  []string
	}{
		{"bash", []string{"bash", "-n"}, []string{"complete -o default -o bashdefault -F _gavel gavel", "--resource", "--fail-only", `"text table json yaml junit markdown"`}},
		{"zsh", []string{"zsh", "-n"}, []string{"#compdef gavel", "'--fail-only[", "(text table json yaml junit markdown)", "compdef _gavel gavel"}},
		{"fish", []string{"fish", "--no-execute"}, []string{"complete -c gavel -n '__fish_use_subcommand' -a test", "-l resource -r -F", "-a 'text table json yaml junit markdown'"}},
	}
	for _, sh := range shells {
		t.Run(sh.name, func(t *testing.T) {
			code, stdout, stderr := runGavel("completion", sh.name)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, w := range sh.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("script lacks %q", w)
				}
			}
			if _, err := exec.LookPath(sh.check[0]); err != nil {
				t.Skipf("%s not installed: syntax not checked", sh.check[0])
			}
			script := filepath.Join(t.TempDir(), "gavel."+sh.name)
			if err := os.WriteFile(script, []byte(stdout), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(sh.check[0], append(sh.check[1:], script)...).CombinedOutput(); err != nil {
				t.Errorf("%s rejects the script: %v\n%s", sh.name, err, out)
			}
		})
	}
}

// TestBashCompletionWorks drives the bash function as bash's completion
// does.
func TestBashCompletionWorks(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	_, script, _ := runGavel("completion", "bash")
	file := filepath.Join(t.TempDir(), "gavel.bash")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		words string
		want  string
	}{
		{`gavel te`, "test"},
		{`gavel test --fail`, "--fail-only"},
		{`gavel test -o j`, "json junit"},
		{`gavel apply --reso`, "--resource --resources"},
		{`gavel apply --warn-e`, "--warn-exit-code"},
		{`gavel completion z`, "zsh"},
		{`gavel jp q`, "query"},
	}
	for _, tt := range tests {
		prog := fmt.Sprintf(`source %q; COMP_WORDS=(%s); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _gavel; echo "${COMPREPLY[*]}"`, file, tt.words)
		out, err := exec.Command("bash", "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tt.words, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != tt.want {
			t.Errorf("%s: completions %q, want %q", tt.words, got, tt.want)
		}
	}
}

func TestColour(t *testing.T) {
	files := []testFile{{Path: "t.yaml", Name: "t", Rows: []policytest.Row{
		{Test: "t.yaml", Policy: "p", Rule: "r", Kind: "Pod", Resource: "a", Passed: true, Reason: "Ok"},
		{Test: "t.yaml", Policy: "p", Rule: "r", Kind: "Pod", Resource: "b", Reason: "Want pass, got fail"},
	}}}
	o := testOutput{files: files, colour: true}
	var b bytes.Buffer
	if err := o.writeText(&b); err != nil {
		t.Fatal(err)
	}
	want := "\033[32mPASS\033[0m t.yaml: policy=p rule=r resource=Pod/a: Ok\n" +
		"\033[31mFAIL\033[0m t.yaml: policy=p rule=r resource=Pod/b: Want pass, got fail\n" +
		"1 passed, 1 failed\n"
	if b.String() != want {
		t.Errorf("coloured text:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	if err := o.writeTable(&b); err != nil {
		t.Fatal(err)
	}
	// coloured cells keep the columns aligned once the escapes are gone
	plain := regexp.MustCompile("\033\\[[0-9;]*m").ReplaceAllString(b.String(), "")
	lines := strings.Split(plain, "\n")
	col := strings.Index(lines[1], "POLICY")
	for _, l := range lines[2:4] {
		if strings.Index(l, "p  ") != col {
			t.Errorf("misaligned coloured table:\n%s", plain)
		}
	}
	if plain == b.String() {
		t.Error("table not coloured")
	}
	if colourEnabled(&b) {
		t.Error("a buffer is not a terminal")
	}
	t.Setenv("NO_COLOR", "1")
	if colourEnabled(os.Stdout) {
		t.Error("NO_COLOR ignored")
	}
}

func TestProgressOnlyOnTerminal(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, 100)
	for i := 0; i < 100; i++ {
		p.done("x")
	}
	p.finish()
	if b.Len() != 0 {
		t.Errorf("progress written to a non-terminal: %q", b.String())
	}
	// a terminal that is not there is not a terminal
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("a regular file is not a terminal")
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"apply", "test", "jp", "version", "completion", "help"}
	tests := []struct{ in, want string }{
		{"tset", "test"},
		{"tests", "test"},
		{"versoin", "version"},
		{"comp", "completion"},
		{"jq", "jp"},
		{"kubectl", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.in, names); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWriteErrors(t *testing.T) {
	o := testOutput{files: []testFile{{Path: "t.yaml", Rows: []policytest.Row{{Passed: true}}}}}
	for _, format := range testFormats {
		if err := o.write(format, failingWriter{}); err == nil {
			t.Errorf("%s: write error not reported", format)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// BenchmarkTestOutput renders a conformance-sized run (2,000 entries).
func BenchmarkTestOutput(b *testing.B) {
	var files []testFile
	for i := 0; i < 200; i++ {
		f := testFile{Path: fmt.Sprintf("tests/%03d/kyverno-test.yaml", i), Name: fmt.Sprintf("t%d", i)}
		for j := 0; j < 10; j++ {
			f.Rows = append(f.Rows, policytest.Row{Test: f.Path, Policy: "policy", Rule: "rule", Kind: "Pod", Namespace: "ns", Resource: fmt.Sprintf("pod-%d", j),
				Expected: "pass", Got: "pass", Passed: j != 0, Reason: "Ok", Message: "validation rule 'rule' passed."})
		}
		files = append(files, f)
	}
	for _, format := range testFormats {
		b.Run(format, func(b *testing.B) {
			o := testOutput{files: files, detailed: true}
			for b.Loop() {
				if err := o.write(format, discardWriter{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// upstreamApplyFlags are the flags of the upstream CLI's kyverno apply
// (cli-kyverno_apply.md), with their short forms.
var upstreamApplyFlags = []string{
	"--audit-warn", "--batch-size int", "-c, --cluster", "--cluster-wide-resources", "--concurrent int",
	"--context string", "--context-file string", "--continue-on-error", "--continue-on-fail", "--crd-path strings",
	"--detailed-results", "--envoy-payload strings", "-e, --exception strings", "--exceptions strings",
	"--exceptions-with-resources", "--exceptions-within-policies", "--exceptions-within-resources",
	"--generate-exceptions", "--generated-exception-ttl duration", "-b, --git-branch string", "--http-payload strings",
	"--json strings", "--kubeconfig string", "-n, --namespace string", "-o, --output string", "--output-format string",
	"--parameter-resource strings", "--password string", "-p, --policy-report", "--registry", "--remove-color",
	"-r, --resource strings", "--resources strings", "-s, --set strings", "--show-performance", "-i, --stdin",
	"-t, --table", "--target-resource strings", "--target-resources strings", "-u, --userinfo string",
	"--username string", "-f, --values-file string", "--warn-exit-code int", "--warn-no-pass",
}

// TestApplyHelpListsUpstreamFlags: gavel apply --help lists every flag of
// the upstream CLI's kyverno apply, with its short form and type, and
// klog's flags as accepted and ignored.
func TestApplyHelpListsUpstreamFlags(t *testing.T) {
	code, stdout, _ := runGavel("apply", "--help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, f := range upstreamApplyFlags {
		if !strings.Contains(stdout, f+"\n") {
			t.Errorf("apply --help lacks %q", f)
		}
	}
	for _, f := range klogFlags {
		if !strings.Contains(stdout, flagName(f.name)) {
			t.Errorf("apply --help lacks klog's %s", f.name)
		}
	}
}
