// Command gitops checks rendered Kubernetes manifests against a folder of
// policies before they reach a cluster, as a step of a gitops or CI
// pipeline:
//
//	helm template shop ./chart > rendered/shop.yaml
//	kustomize build overlays/prod > rendered/prod.yaml
//	go run ./examples/gitops --policies policies/ rendered/
//
// Every resource is evaluated as an admission request would be (CREATE,
// mutations first: engine.PolicySet.Scan), with autogen rules for Pod
// controllers.
// Namespaces and ConfigMaps among the manifests serve namespaceSelector
// and configMap context lookups. PolicyExceptions may sit beside the
// policies or be given with --exceptions.
//
// It prints a table of the failing results (every result with --all) and a
// summary, and exits 1 when a policy would deny the request
// (engine.Response.Blocked: an Enforce policy's rule fails, or errors
// under failurePolicy Fail), 2
// when the manifests or policies cannot be loaded, 0 otherwise (Audit
// failures are reported but do not fail the pipeline).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
)

// Exit codes.
const (
	exitOK        = 0
	exitViolation = 1
	exitLoad      = 2
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// row is one rule result on one resource.
type row struct {
	resource, policy, rule, action string
	status                         engine.Status
	message                        string
	enforced                       bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gitops", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var policies, excs stringList
	fs.Var(&policies, "policies", "policy file or folder (repeatable)")
	fs.Var(&excs, "exceptions", "PolicyException file or folder (repeatable)")
	all := fs.Bool("all", false, "print every result, not only failures, warnings and errors")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gitops --policies DIR [--exceptions DIR] [--all] MANIFESTS...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitLoad
	}
	if len(policies) == 0 || fs.NArg() == 0 {
		fs.Usage()
		return exitLoad
	}
	pset, err := loader.Load(policies...)
	if err != nil {
		fmt.Fprintln(stderr, "gitops: policies:", err)
		return exitLoad
	}
	xset, err := loader.Load(excs...)
	if err != nil {
		fmt.Fprintln(stderr, "gitops: exceptions:", err)
		return exitLoad
	}
	mset, err := loader.Load(fs.Args()...)
	if err != nil {
		fmt.Fprintln(stderr, "gitops: manifests:", err)
		return exitLoad
	}
	xs, err := exceptions.Compile(append(pset.Exceptions, xset.Exceptions...))
	if err != nil {
		fmt.Fprintln(stderr, "gitops: exceptions:", err)
		return exitLoad
	}
	var objs []map[string]any
	for _, d := range mset.Resources {
		objs = append(objs, d.Object)
	}
	cluster := inmem.New(objs...)
	eng, err := engine.New(
		engine.WithExceptions(xs),
		engine.WithConfigMapResolver(cluster),
		engine.WithNamespaceLabeler(cluster),
		engine.WithAPIClient(cluster),
	)
	if err != nil {
		fmt.Fprintln(stderr, "gitops:", err)
		return exitLoad
	}
	set, err := eng.Compile(pset.Policies...)
	if err != nil {
		fmt.Fprintln(stderr, "gitops:", err)
		return exitLoad
	}

	var rows []row
	for _, obj := range objs {
		rs, err := check(ctx, set, obj)
		if err != nil {
			fmt.Fprintf(stderr, "gitops: %s: %v\n", name(obj), err)
			return exitLoad
		}
		rows = append(rows, rs...)
	}
	return report(stdout, rows, len(objs), *all)
}

// check evaluates one resource as an admission request would be
// (engine.PolicySet.Scan: mutations first, then validate and generate
// rules on the mutated resource). A row is enforced when its policy would
// deny the request (engine.PolicyResult.Blocks) and the rule failed or
// errored.
func check(ctx context.Context, set *engine.PolicySet, obj map[string]any) ([]row, error) {
	resp, err := set.Scan(ctx, &engine.Request{Operation: api.Create, Object: obj})
	if err != nil {
		return nil, err
	}
	var rows []row
	for p, r := range resp.Rules() {
		rw := row{
			resource: name(obj),
			policy:   p.Policy.Key(),
			rule:     r.Name,
			status:   r.Status,
			message:  strings.Join(strings.Fields(r.Message), " "),
			enforced: p.Blocks() && (r.Status == engine.StatusFail || r.Status == engine.StatusError),
		}
		if r.Type == engine.Validation || r.Type == engine.ImageVerify {
			rw.action = string(p.FailureAction)
		} else {
			rw.action = string(r.Type)
		}
		rows = append(rows, rw)
	}
	return rows, nil
}

// report prints the table and the summary and returns the exit code.
func report(w io.Writer, rows []row, resources int, all bool) int {
	counts := map[engine.Status]int{}
	violations := 0
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	printed := 0
	for _, r := range rows {
		counts[r.status]++
		if r.enforced {
			violations++
		}
		if !all && (r.status == engine.StatusPass || r.status == engine.StatusSkip) {
			continue
		}
		if printed == 0 {
			fmt.Fprintln(tw, "RESOURCE\tPOLICY\tRULE\tACTION\tRESULT\tMESSAGE")
		}
		printed++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.resource, r.policy, r.rule, r.action, r.status, r.message)
	}
	tw.Flush()
	if printed > 0 {
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%d resources checked: %d pass, %d fail, %d warn, %d error, %d skip\n",
		resources, counts[engine.StatusPass], counts[engine.StatusFail], counts[engine.StatusWarn], counts[engine.StatusError], counts[engine.StatusSkip])
	if violations > 0 {
		fmt.Fprintf(w, "FAILED: %d Enforce violations\n", violations)
		return exitViolation
	}
	fmt.Fprintln(w, "OK: no Enforce violations")
	return exitOK
}

// name is "Kind/namespace/name" or "Kind/name".
func name(obj map[string]any) string {
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	n, _ := md["name"].(string)
	if ns, _ := md["namespace"].(string); ns != "" {
		return kind + "/" + ns + "/" + n
	}
	return kind + "/" + n
}
