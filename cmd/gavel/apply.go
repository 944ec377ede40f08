package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
	"github.com/gavelpolicy/gavel/policytest"
	"github.com/gavelpolicy/gavel/report"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, strings.Split(v, ",")...); return nil }

type applyFlags struct {
	resources  stringList
	exceptions stringList
	valuesFile string
	userInfo   string
	auditWarn  bool
	report     bool
	reportFmt  string
	output     string
	parallel   int
	detailed   bool
	failOnly   bool
}

// resourceResult holds the evaluation of one resource. For YAML reports
// only its rendered report entries are kept (rendered, blocked).
type resourceResult struct {
	rendered *report.Rendered
	blocked  bool
	// entries and cases are the entries of the resource and the JUnit
	// test cases (streamJUnit) or document entries (streamDocument)
	// rendered from them
	entries []applyEntry
	cases   []renderedCase

	resource map[string]any
	policies []engine.PolicyResult
	err      error
}

func runApply(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f applyFlags
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&f.resources, "resource", "resource file or folder (repeatable, comma-separated)")
	fs.Var(&f.exceptions, "exceptions", "PolicyException file or folder (repeatable)")
	fs.StringVar(&f.valuesFile, "values-file", "", "values file (kind Values)")
	fs.StringVar(&f.userInfo, "userinfo", "", "user info file (kind UserInfo)")
	fs.BoolVar(&f.auditWarn, "audit-warn", false, "report failures of Audit policies as warnings")
	fs.BoolVar(&f.report, "policy-report", false, "print policy reports")
	fs.StringVar(&f.output, "o", "", "output format: json, yaml or junit for results; yaml (default) or json for --policy-report")
	fs.BoolVar(&f.failOnly, "fail-only", false, "print only failing and erroring results")
	fs.StringVar(&f.reportFmt, "report-format", "openreports", "API of the policy reports: openreports (openreports.io/v1alpha1, as the upstream CLI) or wgpolicy (wgpolicyk8s.io/v1alpha2)")
	fs.IntVar(&f.parallel, "parallel", runtime.NumCPU(), "resources evaluated in parallel")
	fs.BoolVar(&f.detailed, "detailed-results", false, "print every rule result")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gavel apply POLICY_PATH... --resource RESOURCE_PATH... [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(reorder(args, fs)); err != nil {
		return exitUsage
	}
	if fs.NArg() == 0 || len(f.resources) == 0 {
		fs.Usage()
		return exitUsage
	}
	if f.output != "" && f.output != "yaml" && f.output != "json" && (f.report || f.output != "junit") {
		fmt.Fprintf(stderr, "gavel apply: unsupported output format %q (json, yaml or junit; yaml or json with --policy-report)\n", f.output)
		return exitUsage
	}
	if f.reportFmt != "openreports" && f.reportFmt != "wgpolicy" {
		fmt.Fprintf(stderr, "gavel apply: unsupported report format %q (openreports or wgpolicy)\n", f.reportFmt)
		return exitUsage
	}
	// The resource files are listed (and standard input read) while the
	// policies are read and compiled; the first failing step, in this
	// order, is reported: policies, resources, exceptions, values, user
	// info, engine, compilation. Resources are then read twice, without
	// keeping them: once for their PolicyExceptions and the objects the
	// in-memory cluster serves, once to evaluate them (a resource that
	// cannot be decoded stops the run there, before any output).
	var inputs *resourceInputs
	var rerr error
	resourcesRead := make(chan struct{})
	go func() {
		defer close(resourcesRead)
		inputs, rerr = readInputs(f.resources, stdin)
	}()
	pset, perr := loader.Load(fs.Args()...)
	xset, xerr := loader.Load(f.exceptions...)
	var ev evaluator
	var verr, uerr error
	if f.valuesFile != "" {
		ev.values, verr = policytest.LoadValues(f.valuesFile)
	}
	if f.userInfo != "" {
		ev.user, uerr = policytest.LoadUserInfo(f.userInfo)
	}
	// exceptions and cluster objects come with the resources: the engine
	// reads them only when evaluating
	excSource := &lateExceptions{}
	cluster := inmem.NewOwned()
	eng, eerr := engine.New(
		engine.WithExceptions(excSource),
		engine.WithClient(cluster),
		engine.WithContextValues(ev.values),
		imageVerifierOption(), // nil unless built with -tags verifyimages
	)
	var set *engine.PolicySet
	var cerr error
	if perr == nil && eerr == nil {
		set, cerr = eng.Compile(pset.Policies...)
	}
	<-resourcesRead
	if perr != nil {
		fmt.Fprintln(stderr, "gavel apply: failed to load policies:", perr)
		return exitUsage
	}
	if rerr != nil {
		fmt.Fprintln(stderr, "gavel apply: failed to load resources:", rerr)
		return exitUsage
	}
	// the cluster keeps only the kinds the policies may read through it
	var kinds []string
	all := false
	if set != nil {
		kinds, all = set.ClientKinds()
	}
	found, serr := inputs.scan(kinds, all)
	if serr != nil {
		fmt.Fprintln(stderr, "gavel apply: failed to load resources:", serr)
		return exitUsage
	}
	if xerr != nil {
		fmt.Fprintln(stderr, "gavel apply: failed to load exceptions:", xerr)
		return exitUsage
	}
	excs, err := exceptions.Compile(append(xset.Exceptions, found.exceptions...))
	if err != nil {
		fmt.Fprintln(stderr, "gavel apply:", err)
		return exitUsage
	}
	if verr != nil {
		fmt.Fprintln(stderr, "gavel apply: failed to load values:", verr)
		return exitUsage
	}
	if uerr != nil {
		fmt.Fprintln(stderr, "gavel apply: failed to load user info:", uerr)
		return exitUsage
	}
	for _, e := range []error{eerr, cerr} {
		if e != nil {
			fmt.Fprintln(stderr, "gavel apply:", e)
			return exitUsage
		}
	}
	excSource.set = excs
	// the objects are only read from now on: the cluster may keep them
	cluster.AddOwned(found.objects...)
	ev.set = set
	feed := inputs.each
	if found.docs != nil {
		// every document was decoded by the scan: no need to read again
		feed = found.each
	}
	switch {
	case f.report:
		return streamReports(stdout, stderr, &ev, feed, f)
	case !f.report && f.output == "":
		return streamText(stdout, stderr, &ev, feed, f)
	case !f.report && (f.output == "json" || f.output == "yaml"):
		return streamDocument(stdout, stderr, &ev, feed, f)
	}
	return streamJUnit(stdout, stderr, &ev, feed, f)
}

// evaluator evaluates resources as the upstream CLI does: with values or
// user info, each policy gets its own request (values are per policy and
// resource); without, one request serves the whole set.
type evaluator struct {
	set    *engine.PolicySet
	values *policytest.Values
	user   *policytest.UserInfoFile
}

func (ev *evaluator) evaluate(obj map[string]any) resourceResult {
	if ev.values == nil && ev.user == nil {
		return evaluateOne(ev.set, obj, func(string, map[string]any) *engine.Request {
			return nil
		})
	}
	var all resourceResult
	all.resource = obj
	for _, p := range ev.set.Policies() {
		one := ev.set.Engine().NewPolicySet(p)
		rr := evaluateOne(one, all.resource, func(_ string, o map[string]any) *engine.Request {
			return policytest.NewRequest(p.Name(), o, ev.values, ev.user)
		})
		if rr.err != nil {
			return rr
		}
		all.policies = append(all.policies, rr.policies...)
		all.resource = rr.resource
	}
	return all
}

// evaluateOne mutates, validates and generates; newRequest builds the
// request for a stage's object, or nil for a plain CREATE.
func evaluateOne(set *engine.PolicySet, obj map[string]any, newRequest func(stage string, obj map[string]any) *engine.Request) resourceResult {
	ctx := context.Background()
	rr := resourceResult{resource: obj}
	request := func(stage string, o map[string]any) *engine.Request {
		if r := newRequest(stage, o); r != nil {
			return r
		}
		return &engine.Request{Operation: api.Create, Object: o}
	}
	// policy results without rule results are not kept: nothing prints
	// them, and a run holds many
	keep := func(prs []engine.PolicyResult) {
		n := 0
		for i := range prs {
			if len(prs[i].Rules) > 0 {
				n++
			}
		}
		rr.policies = slices.Grow(rr.policies, n)
		for i := range prs {
			if len(prs[i].Rules) > 0 {
				rr.policies = append(rr.policies, prs[i])
			}
		}
	}
	req := request("mutate", obj)
	m, err := set.Mutate(ctx, req)
	if err != nil {
		rr.err = err
		return rr
	}
	keep(m.Policies)
	v, err := set.Validate(ctx, request("validate", m.Resource))
	if err != nil {
		rr.err = err
		return rr
	}
	keep(v.Policies)
	g, err := set.Generate(ctx, request("generate", m.Resource))
	if err != nil {
		rr.err = err
		return rr
	}
	keep(g.Policies)
	rr.resource = m.Resource
	return rr
}

// writeTextLines prints the lines of the text output: failing and
// erroring entries, or every entry with --detailed-results.
func writeTextLines(w io.Writer, entries []applyEntry, f applyFlags) {
	for _, e := range entries {
		if e.Result == "fail" || e.Result == "error" || (f.detailed && !f.failOnly) {
			fmt.Fprintf(w, "policy %s -> resource %s: rule %s: %s: %s\n", e.Policy, e.Resource, e.Rule, e.Result, e.Message)
		}
	}
}

// writeSummary writes the summary line of apply's entries.
func writeSummary(w io.Writer, sum map[string]int) {
	fmt.Fprintf(w, "pass: %d, fail: %d, warn: %d, error: %d, skip: %d\n", sum["pass"], sum["fail"], sum["warn"], sum["error"], sum["skip"])
}

func resourceName(obj map[string]any) string {
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	if ns != "" {
		return ns + "/" + kind + "/" + name
	}
	return kind + "/" + name
}

// blocks reports whether an Enforce validate rule failed in the results.
func blocks(prs []engine.PolicyResult) bool {
	for i := range prs {
		pr := &prs[i]
		if !pr.FailureAction.IsEnforce() {
			continue
		}
		for j := range pr.Rules {
			if r := &pr.Rules[j]; r.Status == engine.StatusFail && r.Type == engine.Validation {
				return true
			}
		}
	}
	return false
}

// lateExceptions is the exception source of a run: its set is known once
// the resources (which may hold PolicyExceptions) are read, before any
// evaluation.
type lateExceptions struct{ set *exceptions.Set }

// Exceptions implements engine.ExceptionSource.
func (l *lateExceptions) Exceptions(context.Context) (*exceptions.Set, error) { return l.set, nil }
