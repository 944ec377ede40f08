package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
	"github.com/gavelpolicy/gavel/policytest"
	"github.com/gavelpolicy/gavel/remote"
	"github.com/gavelpolicy/gavel/report"
)

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
	// mutated are the documents -o and -i write (see mutatedWriter)
	mutated []mutatedDoc

	resource map[string]any
	policies []engine.PolicyResult
	err      error
}

// runApply is gavel apply: flags, policy sources (git URLs cloned), the
// inputs loaded and compiled, then one output, and the exit status of its
// counts.
func runApply(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, paths, code, ok := parseApplyFlags(args, stdout, stderr)
	if !ok {
		return code
	}
	if f.output == "json" || f.output == "yaml" || f.output == "junit" {
		fmt.Fprintf(stderr, "gavel apply: note: -o/--output is the file for mutated resources, as upstream; the format is --output-format %s\n", f.output)
	}
	perf := newPerformance(f.showPerformance)
	paths, cleanup, err := resolvePolicyPaths(paths, f.gitBranch, f.gitUser, f.gitPassword)
	defer cleanup()
	if err != nil {
		fmt.Fprintln(stderr, "gavel apply: failed to load policies:", err)
		return exitUsage
	}
	ar, code := loadApply(f, paths, stdin, stderr)
	if ar == nil {
		return code
	}
	perf.loaded()
	mutated, err := newMutatedWriter(f, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "gavel apply:", err)
		return exitUsage
	}
	ar.ev.mutated = mutated
	sum, code := writeApply(stdout, stderr, ar, f)
	if err := mutated.close(); err != nil && code != exitUsage {
		fmt.Fprintln(stderr, "gavel apply:", err)
		code = exitUsage
	}
	perf.done(stderr)
	if code != exitOK {
		return code
	}
	return exitStatus(stderr, sum, f)
}

// writeApply evaluates the resources and writes the output the flags ask
// for, returning the counts of the results.
func writeApply(stdout, stderr io.Writer, ar *applyInputs, f applyFlags) (counts, int) {
	ev, feed := &ar.ev, ar.feed
	switch {
	case f.genExceptions:
		return streamExceptions(stdout, stderr, ev, feed, f)
	case f.report:
		return streamReports(stdout, stderr, ev, feed, f)
	case f.stdin:
		// standard output is for the mutated resources
		sum, code := streamText(io.Discard, stderr, ev, feed, f)
		if code == exitOK {
			writeSummary(stderr, map[string]int{"pass": sum.Pass, "fail": sum.Fail, "warn": sum.Warn, "error": sum.Error, "skip": sum.Skip})
		}
		return sum, code
	case f.table:
		return streamTable(stdout, stderr, ev, feed, f)
	case !f.formatSet:
		return streamText(stdout, stderr, ev, feed, f)
	case f.format == "json" || f.format == "yaml":
		return streamDocument(stdout, stderr, ev, feed, f)
	}
	return streamJUnit(stdout, stderr, ev, feed, f)
}

// applyInputs is what a run evaluates: the policies compiled with the
// PolicyExceptions, values and cluster objects, and the feed of the
// resources.
type applyInputs struct {
	ev   evaluator
	feed feedFunc
}

// loadApply reads and compiles the inputs of a run. The resource files
// are listed (and standard input read) while the policies are read and
// compiled; the first failing step, in this order, is reported: policies,
// resources, exceptions, values, user info, targets, CRDs, engine,
// compilation. Resources are then read twice, without keeping them: once
// for their PolicyExceptions and the objects the in-memory cluster serves,
// once to evaluate them. A nil result ends the run with code.
func loadApply(f applyFlags, paths []string, stdin io.Reader, stderr io.Writer) (*applyInputs, int) {
	fail := func(what string, err error) (*applyInputs, int) {
		if what != "" {
			what = "failed to load " + what + ": "
		}
		fmt.Fprintf(stderr, "gavel apply: %s%v\n", what, err)
		return nil, exitUsage
	}
	var inputs *resourceInputs
	var rerr error
	resourcesRead := make(chan struct{})
	go func() {
		defer close(resourcesRead)
		if f.cluster {
			// -r names resources of the cluster
			inputs = &resourceInputs{data: map[int][]byte{}}
			return
		}
		if len(f.jsonPayloads) > 0 {
			inputs, rerr = readInputs(f.jsonPayloads, stdin)
			return
		}
		inputs, rerr = readInputs(f.resources, stdin)
	}()
	var live *liveCluster
	if f.cluster {
		var err error
		if live, err = connect(f); err != nil {
			<-resourcesRead
			fmt.Fprintln(stderr, "gavel apply: failed to connect to the cluster:", err)
			return nil, exitUsage
		}
	} else if flags := f.clusterOnly(); len(flags) > 0 {
		fmt.Fprintf(stderr, "gavel apply: note: %s without --cluster: ignored, as upstream\n", strings.Join(flags, ", "))
	}
	pset, perr := loader.Load(paths...)
	xset, xerr := &loader.Set{}, error(nil)
	if !f.withResources {
		xset, xerr = loader.Load(f.exceptions...)
	} else if len(f.exceptions) > 0 {
		// upstream does not read -e with --exceptions-with-resources
		fmt.Fprintln(stderr, "gavel apply: note: with --exceptions-with-resources the PolicyExceptions are those among the resources; --exception files are not read, as upstream")
	}
	ev := evaluator{continueOnError: f.continueOnError, payloads: len(f.jsonPayloads) > 0}
	side := readSideInputs(f, &ev)
	// exceptions and cluster objects come with the resources: the engine
	// reads them only when evaluating
	excSource := &lateExceptions{}
	cluster := inmem.New()
	opts := applyEngineOptions(f, &ev, excSource, cluster, side.ctxFile)
	opts = append(opts, engine.WithCELLibraries(side.libs))
	if live != nil {
		// the cluster serves the engine's reads, as upstream's client
		opts = append(opts, live.engineOptions()...)
	}
	eng, eerr := engine.New(opts...)
	var set *engine.PolicySet
	var skipped []skippedPolicy
	if perr == nil && eerr == nil {
		set, skipped = compileValid(eng, pset.Policies)
	}
	<-resourcesRead
	switch {
	case perr != nil:
		return fail("policies", perr)
	case rerr != nil:
		return fail("resources", rerr)
	}
	// the cluster keeps only the kinds the policies may read through it
	var kinds []string
	all := false
	if set != nil {
		kinds, all = set.ClientKinds()
	}
	found, err := inputs.scan(kinds, all, f.withResources, f.continueOnError, ev.namespacer)
	if err != nil {
		return fail("resources", err)
	}
	var clusterFeed feedFunc
	if live != nil && set != nil {
		tasks, err := live.listTasks(context.Background(), policyKinds(set), f.namespace, f.clusterWideResources)
		if err != nil {
			return fail("resources", err)
		}
		clusterFeed = live.clusterFeed(tasks, f.batchSize, f.concurrent, f.resources, stderr)
		if f.withResources {
			if found.exceptions, err = live.clusterExceptions(context.Background(), f.namespace); err != nil {
				return fail("exceptions", err)
			}
		}
	}
	classic, cel := applyExceptions(f, xset, pset, found)
	compiled, err := exceptions.Compile(classic, exceptions.CEL(cel...))
	for _, step := range []struct {
		what string
		err  error
	}{{"exceptions", xerr}, {"", err}, {"values", side.verr}, {"user info", side.uerr}, {"target resources", side.terr}, {"CEL inputs", side.cxerr}, {"CRDs", side.cerr}, {"CEL libraries", side.lerr}, {"", eerr}} {
		if step.err != nil {
			return fail(step.what, step.err)
		}
	}
	excSource.set = compiled
	if compiled != nil {
		ev.exceptions = compiled.Len()
	}
	ev.skipped = skipped
	for _, sp := range skipped {
		fmt.Fprintf(stderr, "gavel apply: policy %s skipped (counted as an error, as upstream): %v\n", sp.name, sp.err)
	}
	ev.rules = ruleCount(set, skipped)
	// the objects are only read from now on: the cluster may keep them
	cluster.AddOwned(found.objects...)
	for _, d := range side.tset.Resources {
		cluster.AddOwned(d.Object)
	}
	// parameter objects of CEL rules and the context file's objects are
	// read through the cluster, never evaluated
	cluster.AddOwned(side.params...)
	if side.ctxFile != nil {
		cluster.AddOwned(side.ctxFile.Spec.Resources...)
	}
	ev.set = set
	ar := &applyInputs{ev: ev, feed: inputs.each}
	switch {
	case clusterFeed != nil:
		ar.feed = clusterFeed
	case found.docs != nil:
		// every document was decoded by the scan: no need to read again
		ar.feed = found.each
	}
	return ar, exitOK
}

// sideInputs are what a run reads beside its policies, resources and
// exceptions: the values of -f or --set and the user info (set on the
// evaluator), the target resources, the CEL rules' parameter objects and
// context file, and the CEL libraries made of them. Each error is kept
// for loadApply, which reports the first in its order.
type sideInputs struct {
	tset    *loader.Set
	params  []map[string]any
	ctxFile *loader.Context
	libs    cel.Libraries

	verr, uerr, terr, cxerr, cerr, lerr error
}

// readSideInputs reads a run's side inputs; the resources of files get
// their namespace defaulted against the CRDs, as upstream loads them.
func readSideInputs(f applyFlags, ev *evaluator) sideInputs {
	var in sideInputs
	switch {
	case f.valuesFile != "":
		ev.values, in.verr = policytest.LoadValues(f.valuesFile)
	case len(f.set) > 0:
		ev.values = &policytest.Values{GlobalValues: f.variables()}
	}
	if f.userInfo != "" {
		ev.user, in.uerr = policytest.LoadUserInfo(f.userInfo)
	}
	in.tset, in.terr = loader.Load(f.targets...)
	in.params, in.ctxFile, in.cxerr = loadCELInputs(f)
	var crds []map[string]any
	crds, in.cerr = readCRDs(f.crdPaths)
	if !f.cluster && len(f.jsonPayloads) == 0 {
		// resources of files without a namespace are in "default", as
		// upstream loads them (JSON payloads are not resources)
		ev.namespacer = loader.NewNamespacer(crds...)
		for _, obj := range in.params {
			ev.namespacer.Default(obj)
		}
		if in.tset != nil {
			for _, d := range in.tset.Resources {
				ev.namespacer.Default(d.Object)
			}
		}
	}
	var targetObjs []map[string]any
	if in.tset != nil {
		for _, d := range in.tset.Resources {
			targetObjs = append(targetObjs, d.Object)
		}
	}
	in.libs, in.lerr = applyLibraries(f.cluster, in.ctxFile, crds, targetObjs)
	return in
}

// applyEngineOptions are the options of a run's engine: PolicyExceptions
// and cluster objects known once the resources are read, the values of
// -f or --set, and with --registry the registries with the local docker
// credentials.
func applyEngineOptions(f applyFlags, ev *evaluator, excs *lateExceptions, cluster *inmem.Cluster, ctxFile *loader.Context) []engine.Option {
	opts := []engine.Option{
		engine.WithExceptions(excs),
		engine.WithClient(cluster),
		engine.WithContextValues(ev.values),
		// as upstream's CLI: an entry whose host is not configured is skipped
		engine.WithUnconfiguredEntriesSkipped(),
		// upstream's CLI answers the authorizer of CEL expressions through
		// its client, which off a cluster grants nothing: every check is
		// denied
		engine.WithAuthorizer(inmem.NewAuthorizer()),
		// and validates ImageValidatingPolicies without pinning digests
		// first (its mutating webhook does, not its CLI)
		engine.WithImagePolicyMutation(false),
	}
	switch {
	case f.registry:
		opts = append(opts, engine.WithRegistryClient(remote.NewRegistry(remote.WithKeychain(authn.DefaultKeychain))))
	case ctxFile != nil && len(ctxFile.Spec.Images) > 0:
		// the context file's image data stands for the registries
		opts = append(opts, engine.WithRegistryClient(ctxFile.Registry()))
	}
	return append(opts, imageVerifierOption())
}

// loadCELInputs reads --parameter-resource (the objects paramRef selects)
// and --context-file (upstream's Context: objects and image data).
func loadCELInputs(f applyFlags) ([]map[string]any, *loader.Context, error) {
	var params []map[string]any
	if len(f.parameterResources) > 0 {
		set, err := loader.Load(f.parameterResources...)
		if err != nil {
			return nil, nil, fmt.Errorf("--parameter-resource: %w", err)
		}
		for _, d := range set.Resources {
			params = append(params, d.Object)
		}
	}
	if f.contextFile == "" {
		return params, nil, nil
	}
	c, err := loader.LoadContext(f.contextFile)
	if err != nil {
		return nil, nil, fmt.Errorf("--context-file: %w", err)
	}
	return params, c, nil
}

// applyExceptions are the PolicyExceptions of a run (kyverno.io and
// policies.kyverno.io ones), as upstream takes them: those of -e, and
// those among the resources or the policies with
// --exceptions-with-resources or --exceptions-within-policies.
func applyExceptions(f applyFlags, xset, pset *loader.Set, found scanned) ([]*api.PolicyException, []*api.CELPolicyException) {
	var excs []*api.PolicyException
	var cel []*api.CELPolicyException
	if f.withResources {
		// upstream reads either the resources' PolicyExceptions or the
		// files of -e, not both
		excs = append(excs, found.exceptions...)
		cel = append(cel, found.celExceptions...)
	} else {
		excs = append(excs, xset.Exceptions...)
		cel = append(cel, xset.CELExceptions...)
	}
	if f.withinPolicies {
		excs = append(excs, pset.Exceptions...)
		cel = append(cel, pset.CELExceptions...)
	}
	return excs, cel
}

// evaluator evaluates resources as the upstream CLI does: with values or
// user info, each policy gets its own request (values are per policy and
// resource); without, one request serves the whole set.
type evaluator struct {
	set    *engine.PolicySet
	values *policytest.Values
	user   *policytest.UserInfoFile
	// continueOnError turns a resource document that cannot be decoded
	// into an error result instead of the end of the run
	continueOnError bool
	// mutated receives the mutated and generated resources (-o, -i)
	mutated *mutatedWriter
	// skipped are the policies that do not compile: upstream's CLI skips
	// an invalid policy and counts an error for it
	skipped []skippedPolicy
	// rules and exceptions are the counts of upstream's banner ("Applying
	// N policy rule(s) to M resource(s) with K exception(s)...")
	rules, exceptions int
	// otherDocs counts the documents among the resources that are not
	// evaluated (PolicyExceptions, policies), which the banner counts
	otherDocs int
	// payloads: the inputs are JSON payloads (--json), which the
	// ValidatingPolicies in JSON mode evaluate
	payloads bool
	// namespacer gives the resources of files without a namespace the
	// namespace "default" (nil: they keep theirs, as the cluster's)
	namespacer *loader.Namespacer
}

// skippedPolicy is a policy left out of a run because it does not compile.
type skippedPolicy struct {
	name  string
	rules int
	err   error
}

// newDocument is a run's summary before any resource: an error for each
// skipped policy, as upstream counts them.
func (ev *evaluator) newDocument() applyDocument {
	doc := newApplyDocument()
	doc.Summary["error"] += len(ev.skipped)
	return doc
}

// compileValid compiles the policies as upstream's CLI takes them: a
// policy that does not compile is skipped (and counted as an error by the
// run), the others are evaluated. The whole set is compiled at once (in
// parallel) and, only when that fails, one policy at a time to find the
// invalid ones.
func compileValid(eng *engine.Engine, policies []api.PolicyObject) (*engine.PolicySet, []skippedPolicy) {
	if set, err := eng.Compile(policies...); err == nil {
		return set, nil
	}
	var valid []*engine.Policy
	var skipped []skippedPolicy
	for _, p := range policies {
		cp, err := eng.CompilePolicy(p)
		if err != nil {
			skipped = append(skipped, skippedPolicy{name: p.GetName(), rules: ruleCountOf(p), err: err})
			continue
		}
		valid = append(valid, cp)
	}
	return eng.NewPolicySet(valid...), skipped
}

// ruleCountOf is the number of rules a policy has as written (one for
// the kinds without rules, none for bindings, as upstream counts them).
func ruleCountOf(p api.PolicyObject) int {
	switch p := p.(type) {
	case api.ClassicPolicy:
		return len(p.GetSpec().Rules)
	case *api.ValidatingAdmissionPolicyBinding, *api.MutatingAdmissionPolicyBinding:
		return 0
	}
	return 1
}

// ruleCount is the number of rules of upstream's banner: the rules of the
// compiled policies (autogen rules included) and those of the skipped
// ones as written.
func ruleCount(set *engine.PolicySet, skipped []skippedPolicy) int {
	n := 0
	for _, p := range set.Policies() {
		if isClassic(p) {
			n += len(p.Rules())
		} else {
			n++ // upstream counts one for each policy of the other kinds
		}
	}
	for _, sp := range skipped {
		n += sp.rules
	}
	return n
}

// isClassic reports a ClusterPolicy or Policy.
func isClassic(p *engine.Policy) bool {
	return api.KindOf(p.Source()) == api.KindClusterPolicy || api.KindOf(p.Source()) == api.KindPolicy
}

// evaluatePayload applies the ValidatingPolicies in JSON mode to a JSON
// payload (--json).
func (ev *evaluator) evaluatePayload(obj map[string]any) resourceResult {
	rr := resourceResult{resource: obj}
	resp, err := ev.set.ValidatePayload(context.Background(), obj)
	if err != nil {
		rr.err = err
		return rr
	}
	for _, pr := range resp.Policies {
		if len(pr.Rules) > 0 {
			rr.policies = append(rr.policies, pr)
		}
	}
	return rr
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
			return policytest.NewRequest(p.Source().GetName(), o, ev.values, ev.user)
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
	if hasDeleting(set) {
		// the deleting policies see the resource as loaded, as upstream's
		// apply evaluates them after the others
		c, err := set.Cleanup(ctx, request("cleanup", obj))
		if err != nil {
			rr.err = err
			return rr
		}
		keep(c.Policies)
	}
	rr.resource = m.Resource
	return rr
}

// hasDeleting reports whether a set holds deleting policies (DeletingPolicy,
// cleanup policies).
func hasDeleting(set *engine.PolicySet) bool {
	for _, p := range set.Policies() {
		if p.HasRuleType(engine.Deletion) {
			return true
		}
	}
	return false
}

// writeTextBlocks writes the text output of one resource as upstream's
// kyverno apply does, per policy result: a line for each skipped or
// erroring mutate rule, then, when rules failed, "policy P -> resource
// NS/KIND/NAME failed:" (or "failed as audit warning:" with --audit-warn
// on an Audit policy) and a numbered line per failed rule. With
// --detailed-results (gavel's), every other result follows on a line of
// its own.
func writeTextBlocks(w io.Writer, rr *resourceResult, entries []applyEntry, f applyFlags) {
	if rr.err != nil {
		return
	}
	resPath := upstreamPath(rr.resource)
	for i := range rr.policies {
		pr := &rr.policies[i]
		name := pr.Policy.Source().GetName()
		failed := 0
		for j := range pr.Rules {
			r := &pr.Rules[j]
			if r.Status == engine.StatusFail {
				failed++
			}
			if r.Type != engine.Mutation {
				continue
			}
			switch r.Status {
			case engine.StatusSkip:
				fmt.Fprintln(w, "\nskipped mutate policy", name, "->", "resource", resPath)
			case engine.StatusError:
				fmt.Fprintln(w, "\nerror while applying mutate policy", name, "->", "resource", resPath, "\nerror: ", r.Message)
			}
		}
		if failed == 0 {
			continue
		}
		if f.auditWarn && report.AuditWarns(pr) {
			fmt.Fprintln(w, "policy", name, "->", "resource", resPath, "failed as audit warning:")
		} else {
			fmt.Fprintln(w, "policy", name, "->", "resource", resPath, "failed:")
		}
		n := 0
		for j := range pr.Rules {
			if r := &pr.Rules[j]; r.Status == engine.StatusFail {
				n++
				msg := r.Message
				if msg == "" {
					msg = "validation failed" // upstream's word for a failure without a message
				}
				fmt.Fprintln(w, n, "-", r.Name, msg)
			}
		}
		fmt.Fprintln(w)
	}
	if !f.detailed || f.failOnly {
		return
	}
	k := 0
	for i := range rr.policies {
		for j := range rr.policies[i].Rules {
			if e := entries[k]; rr.policies[i].Rules[j].Status != engine.StatusFail {
				fmt.Fprintf(w, "policy %s -> resource %s: rule %s: %s: %s\n", e.Policy, e.Resource, e.Rule, e.Result, e.Message)
			}
			k++
		}
	}
}

// writeSummary writes the summary line of apply's entries.
func writeSummary(w io.Writer, sum map[string]int) {
	fmt.Fprintf(w, "pass: %d, fail: %d, warn: %d, error: %d, skip: %d\n", sum["pass"], sum["fail"], sum["warn"], sum["error"], sum["skip"])
}

// upstreamPath is how upstream's text output names a resource:
// NAMESPACE/KIND/NAME, the namespace empty for cluster-wide resources;
// "JSON payload" for an object with none of them.
func upstreamPath(obj map[string]any) string {
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	if ns == "" && kind == "" && name == "" {
		return "JSON payload"
	}
	return ns + "/" + kind + "/" + name
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

// blocks reports whether the results deny the resource at admission
// (engine.Response.Blocked), which makes gavel apply exit 1.
func blocks(prs []engine.PolicyResult) bool {
	return (&engine.Response{Policies: prs}).Blocked()
}

// lateExceptions is the exception source of a run: its set is known once
// the resources (which may hold PolicyExceptions) are read, before any
// evaluation.
type lateExceptions struct{ set *exceptions.Set }

// Exceptions implements engine.ExceptionSource.
func (l *lateExceptions) Exceptions(context.Context) (*exceptions.Set, error) { return l.set, nil }
