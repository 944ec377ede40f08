package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"golang.org/x/sync/errgroup"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/patterns"
	"github.com/gavelpolicy/gavel/policytest"
	"github.com/gavelpolicy/gavel/remote"
)

// testFilter is a --test-case-selector: the wildcards a test result's
// policy, rule and one of its resources must match, as upstream's filter
// (a result that names no policy, rule or resource matches that part).
type testFilter struct {
	policy, rule, resource string
}

// parseTestFilter parses "policy=P,rule=R,resource=NAME" (any subset, in
// any order, spaces allowed).
func parseTestFilter(in string) (testFilter, error) {
	f := testFilter{policy: "*", rule: "*", resource: "*"}
	if strings.TrimSpace(in) == "" {
		return f, nil
	}
	for _, part := range strings.Split(in, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok || strings.Contains(v, "=") {
			return f, fmt.Errorf("invalid test-case-selector argument (%s): parameter must be in the form <key>=<value>", part)
		}
		switch v = strings.TrimSpace(v); strings.TrimSpace(k) {
		case "policy":
			f.policy = v
		case "rule":
			f.rule = v
		case "resource":
			f.resource = v
		default:
			return f, fmt.Errorf("invalid test-case-selector (%s): parameter can only be policy, rule or resource", part)
		}
	}
	return f, nil
}

// keep returns the results the filter selects.
func (f testFilter) keep(results []policytest.Result) []policytest.Result {
	if f == (testFilter{"*", "*", "*"}) || f == (testFilter{}) {
		return results
	}
	var out []policytest.Result
	for _, r := range results {
		if r.Policy != "" && !patterns.Wildcard(f.policy, r.Policy) {
			continue
		}
		if r.Rule != "" && !patterns.Wildcard(f.rule, r.Rule) {
			continue
		}
		names := r.Resources
		if r.Resource != "" {
			names = append(names[:len(names):len(names)], r.Resource)
		}
		matched := len(names) == 0
		for _, n := range names {
			matched = matched || patterns.Wildcard(f.resource, n)
		}
		if matched {
			out = append(out, r)
		}
	}
	return out
}

// Output formats of gavel test.
const (
	formatText  = "text"
	formatTable = "table"
	formatJSON  = "json"
	formatYAML  = "yaml"
	formatJUnit = "junit"
	// formatMarkdown is upstream's -o markdown: tables for CI summaries
	formatMarkdown = "markdown"
)

// testFormats lists the formats -o accepts, the default first.
var testFormats = []string{formatText, formatTable, formatJSON, formatYAML, formatJUnit, formatMarkdown}

// testOptions are the flags of gavel test.
type testOptions struct {
	strict   bool
	fileName string
	parallel int
	failOnly bool
	detailed bool
	output   string
	noColor  bool
	// selector keeps the test results a --test-case-selector names
	selector     string
	filter       testFilter
	requireTests bool
	gitBranch    string
	registry     bool
	kubeconfig   string
	// verifier verifies signatures (verifyImages, validate.manifests), one
	// for the run, as the upstream CLI's test command verifies them
	verifier engine.Option
	// network answers the CEL libraries' calls that upstream's test
	// command makes on the network
	network celNetwork
}

const testUsage = `Usage: gavel test PATH... [flags]

Runs every kyverno-test.yaml found under the paths (recursively) and checks
each expected result. The default output prints one line per failing entry,
"PASS|FAIL TEST: policy=P rule=R resource=KIND[/NAMESPACE]/NAME: REASON",
and always ends with the line "N passed, N failed".

Output formats (-o): text (default), table (aligned columns per test file),
markdown (a Markdown table per test file), json, yaml, junit (JUnit XML for
CI systems). --fail-only defaults to true for text, table and markdown and
to false for json, yaml and junit, which always carry
the rule messages. Colour is used only when standard output is a terminal
(never with --no-color or NO_COLOR set). Progress is shown on standard error
when it is a terminal and at least 10 test files run.

Exit codes, as upstream: 0 every entry passed, 1 an entry failed (policies
or resources a test names that cannot be loaded count as failed entries), a
usage error, a path that cannot be read, or a test file that cannot be
decoded.

Flags:
`

// newTestFlags declares the flags of gavel test.
func newTestFlags(o *testOptions) *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.BoolVar(&o.strict, "strict", false, "count a row whose rule did not apply as passed only when skip was expected")
	fs.StringVar(&o.fileName, "file-name", policytest.DefaultFileName, "test file name to look for")
	fs.StringVar(&o.fileName, "f", policytest.DefaultFileName, "shorthand for --file-name")
	fs.IntVar(&o.parallel, "parallel", runtime.NumCPU(), "tests evaluated in parallel")
	fs.BoolVar(&o.failOnly, "fail-only", true, "print only failing entries (false for json, yaml and junit unless given)")
	fs.BoolVar(&o.detailed, "detailed-results", false, "print the rule message of each printed entry")
	fs.StringVar(&o.output, "output-format", formatText, "output format: text, table, json, yaml, junit or markdown")
	fs.StringVar(&o.output, "o", formatText, "same as --output-format")
	fs.StringVar(&o.output, "output", formatText, "same as --output-format")
	fs.BoolVar(&o.noColor, "no-color", false, "never colour the output")
	fs.BoolVar(&o.noColor, "remove-color", false, "same as --no-color (the upstream CLI's name)")
	fs.StringVar(&o.selector, "test-case-selector", "policy=*,rule=*,resource=*", "run only the test results that match: policy=P,rule=R,resource=NAME, each with * and ? wildcards")
	fs.StringVar(&o.selector, "t", "policy=*,rule=*,resource=*", "shorthand for --test-case-selector")
	fs.BoolVar(&o.requireTests, "require-tests", false, "fail (exit 1) when no test file is found")
	fs.StringVar(&o.gitBranch, "git-branch", "", "branch of a git URL path (https://HOST/OWNER/REPO/PATH); without it the URL's path after the repository is the branch")
	fs.StringVar(&o.gitBranch, "b", "", "shorthand for --git-branch")
	fs.BoolVar(&o.registry, "registry", false, "read image data for imageRegistry context entries from the registries, with the local docker credentials")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "accepted and ignored, as upstream's test never reads a cluster")
	addKlogFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), testUsage)
		printFlags(fs.Output(), fs)
	}
	return fs
}

// testFile is the outcome of one test file.
type testFile struct {
	Path string
	// Name is the test's metadata.name (or name); empty when the file could
	// not be read.
	Name     string
	Rows     []policytest.Row
	Duration time.Duration
	// Err is set when the file could not be loaded or run as a whole; Rows
	// then hold the failing entries that stand for it.
	Err error
	// Unreadable is set when the test file itself could not be read or
	// decoded (a load error).
	Unreadable bool
}

func runTest(args []string, stdout, stderr io.Writer) int {
	var o testOptions
	fs := newTestFlags(&o)
	if code, ok := parseFlags(fs, "test", args, stdout, stderr); !ok {
		return code
	}
	failOnlySet := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "fail-only" {
			failOnlySet = true
		}
	})
	if !validFormat(o.output) {
		fmt.Fprintf(stderr, "gavel test: unknown output format %q (text, table, json, yaml, junit or markdown)\n", o.output)
		return exitUsage
	}
	if !failOnlySet && o.output != formatText && o.output != formatTable && o.output != formatMarkdown {
		o.failOnly = false
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "gavel test: at least one PATH is required")
		fmt.Fprintln(stderr, `Run "gavel test -h" for the flags.`)
		return exitUsage
	}
	var err error
	o.verifier = imageVerifierOption()
	if o.network, err = newCELNetwork(); err != nil {
		fmt.Fprintln(stderr, "gavel test:", err)
		return exitUsage
	}
	if o.filter, err = parseTestFilter(o.selector); err != nil {
		fmt.Fprintln(stderr, "gavel test:", err)
		return exitUsage
	}
	paths, cleanup, err := resolvePolicyPaths(fs.Args(), o.gitBranch, "", "")
	defer cleanup()
	if err != nil {
		fmt.Fprintln(stderr, "gavel test:", err)
		return exitUsage
	}
	files, err := policytest.Discover(o.fileName, paths...)
	if err != nil {
		fmt.Fprintln(stderr, "gavel test:", err)
		return exitUsage
	}
	if len(files) == 0 {
		fmt.Fprintf(stderr, "gavel test: no %s found under %v\n", o.fileName, fs.Args())
		if o.requireTests {
			return exitFailed
		}
	}
	prog := newProgress(stderr, len(files))
	start := time.Now()
	results := runTestFiles(context.Background(), files, o, prog.done)
	prog.finish()

	out := testOutput{files: results, failOnly: o.failOnly, detailed: o.detailed, elapsed: time.Since(start)}
	out.colour = !o.noColor && colourEnabled(stdout)
	if err := out.write(o.output, stdout); err != nil {
		fmt.Fprintln(stderr, "gavel test:", err)
		return exitUsage
	}
	passed, failed := out.counts()
	if o.output != formatText && o.output != formatTable && o.output != formatMarkdown {
		// machine formats keep stdout to the document
		fmt.Fprintf(stderr, "%d passed, %d failed\n", passed, failed)
	}
	for _, f := range results {
		if f.Unreadable {
			return exitUsage
		}
	}
	if failed > 0 {
		return exitFailed
	}
	return exitOK
}

func validFormat(f string) bool {
	for _, x := range testFormats {
		if f == x {
			return true
		}
	}
	return false
}

// runTestFiles loads and runs the test files, parallel at a time, keeping
// their order; done is called after each file.
func runTestFiles(ctx context.Context, files []string, o testOptions, done func(path string)) []testFile {
	parallel := o.parallel
	if parallel < 1 {
		parallel = 1
	}
	results := make([]testFile, len(files))
	var g errgroup.Group
	g.SetLimit(parallel)
	for i, f := range files {
		g.Go(func() error {
			start := time.Now()
			results[i] = runTestFile(ctx, f, o)
			results[i].Duration = time.Since(start)
			done(f)
			return nil
		})
	}
	_ = g.Wait() // the outcomes are kept by file
	return results
}

// runTestFile runs the tests of a file (several when it holds several
// documents, as upstream reads them).
func runTestFile(ctx context.Context, path string, o testOptions) testFile {
	tf := testFile{Path: path}
	tests, err := policytest.LoadAll(path)
	if err != nil {
		tf.Err, tf.Unreadable = err, true
		tf.Rows = []policytest.Row{{Test: path, Reason: err.Error()}}
		return tf
	}
	var names []string
	for _, t := range tests {
		if n := t.TestName(); n != "" {
			names = append(names, n)
		}
		one := runTest1(ctx, t, o)
		tf.Rows = append(tf.Rows, one.Rows...)
		if tf.Err == nil {
			tf.Err = one.Err
		}
	}
	tf.Name = strings.Join(names, ", ")
	return tf
}

// runTest1 runs one test of a file.
func runTest1(ctx context.Context, t *policytest.Test, o testOptions) testFile {
	path := t.Path
	tf := testFile{Path: path, Name: t.TestName()}
	if t.Results = o.filter.keep(t.Results); len(t.Results) == 0 {
		return tf
	}
	popts := policytest.Options{Strict: o.strict, HTTP: o.network.http, ImageData: o.network.images}
	if o.verifier != nil {
		popts.EngineOptions = append(popts.EngineOptions, o.verifier)
	}
	if o.registry {
		popts.EngineOptions = append(popts.EngineOptions, engine.WithRegistryClient(remote.NewRegistry(remote.WithKeychain(authn.DefaultKeychain))))
	}
	rows, err := policytest.Run(ctx, t, popts)
	if err != nil {
		tf.Err = err
		if len(rows) == 0 {
			rows = []policytest.Row{{Test: path, Reason: err.Error()}}
		}
	}
	tf.Rows = rows
	return tf
}

// reorder moves flags after positional arguments to the front so that
// "gavel test PATH --strict" works like upstream's CLI.
func reorder(args []string, fs *flag.FlagSet) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			flags = append(flags, a)
			name := a
			for len(name) > 0 && name[0] == '-' {
				name = name[1:]
			}
			if j := indexByte(name, '='); j >= 0 {
				continue
			}
			if f := fs.Lookup(name); f != nil {
				if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
					continue
				}
				if i+1 < len(args) {
					flags = append(flags, args[i+1])
					i++
				}
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}
