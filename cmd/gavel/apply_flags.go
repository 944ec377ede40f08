package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, strings.Split(v, ",")...); return nil }

// applyFlags are the flags of gavel apply: those of the upstream CLI's
// kyverno apply, with its names, short forms and defaults, and gavel's own
// (--parallel, --report-format, --fail-only).
type applyFlags struct {
	resources       stringList
	targets         stringList
	exceptions      stringList
	valuesFile      string
	set             stringList
	userInfo        string
	auditWarn       bool
	report          bool
	reportFmt       string
	format          string // --output-format
	formatSet       bool   // --output-format was given
	output          string // -o/--output: mutated and generated resources
	stdin           bool
	table           bool
	removeColor     bool
	parallel        int
	detailed        bool
	failOnly        bool
	warnExitCode    int
	warnNoPass      bool
	continueOnFail  bool
	continueOnError bool
	withResources   bool // --exceptions-with-resources, --exceptions-within-resources
	withinPolicies  bool
	genExceptions   bool
	exceptionTTL    time.Duration
	registry        bool
	crdPaths        stringList
	showPerformance bool
	gitBranch       string
	gitUser         string
	gitPassword     string
	// CEL rules' parameter objects and upstream's context file
	parameterResources stringList
	contextFile        string

	// a live cluster (apply_cluster.go)
	cluster              bool
	kubeconfig           string
	kubeContext          string
	namespace            string
	batchSize            int
	clusterWideResources bool
	concurrent           int
	jsonPayloads         stringList
	envoyPayloads        stringList
	httpPayloads         stringList
}

const applyUsage = `Usage: gavel apply POLICY_PATH... --resource RESOURCE_PATH... [flags]
       gavel apply POLICY_PATH... --cluster [--namespace NS] [--resource NAME...] [flags]

Applies policies to resources, as the upstream CLI's kyverno apply does and
with its flags: a policy path may be a file, a folder, "-" (standard input)
or a git URL (https://HOST/OWNER/REPO[/BRANCH]/PATH, or /PATH with
--git-branch). Prints upstream's text (the banner, the mutated resources,
a block per policy and resource with failed rules, the summary line);
policies that do not compile are skipped and counted as errors, as
upstream. --table prints every result in a table, --policy-report the
policy reports (--output-format yaml or json), --generate-exceptions a
PolicyException per violation. gavel's own outputs: --output-format
json|yaml without --policy-report prints a results document,
--output-format junit JUnit XML.

With --cluster the resources are read from the cluster of the kubeconfig
(--kubeconfig, else $KUBECONFIG, else ~/.kube/config, else the in-cluster
service account; --context): those of the kinds the policies match, in
every namespace or in --namespace, cluster-scoped ones only with
--cluster-wide-resources, --batch-size per API call, --concurrent kinds at
once; --resource then names resources. The policies are those given.

Exit codes, as upstream: 1 when a result fails (Audit failures too, unless
--audit-warn makes them warnings) or errors; the --warn-exit-code code when
there are warnings only, or no pass at all with --warn-no-pass; 0 otherwise;
1 too, as upstream, for usage errors and inputs that cannot be loaded.

Flags (a short form, -r, is the same flag as its long form):
`

// klogFlags are the logging flags the upstream CLI inherits from klog.
// gavel accepts and ignores them: it does not log through klog.
var klogFlags = []struct {
	name string
	bool bool
}{
	{"add_dir_header", true}, {"alsologtostderr", true}, {"alsologtostderrthreshold", false},
	{"legacy_stderr_threshold_behavior", true}, {"log_backtrace_at", false}, {"log_dir", false},
	{"log_file", false}, {"log_file_max_size", false}, {"logtostderr", true}, {"one_output", true},
	{"skip_headers", true}, {"skip_log_headers", true}, {"stderrthreshold", false}, {"v", false},
	{"vmodule", false},
}

// ignored is the value of a flag accepted and ignored.
type ignored struct{ bool bool }

func (ignored) String() string     { return "" }
func (ignored) Set(string) error   { return nil }
func (i ignored) IsBoolFlag() bool { return i.bool }
func addKlogFlags(fs *flag.FlagSet) {
	for _, k := range klogFlags {
		fs.Var(ignored{k.bool}, k.name, klogUsage)
	}
}

// newApplyFlags declares the flags of gavel apply.
func newApplyFlags(f *applyFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	list := func(v *stringList, long, short, usage string) {
		fs.Var(v, long, usage)
		if short != "" {
			fs.Var(v, short, "same as --"+long)
		}
	}
	str := func(v *string, long, short, def, usage string) {
		fs.StringVar(v, long, def, usage)
		if short != "" {
			fs.StringVar(v, short, def, "same as --"+long)
		}
	}
	boolean := func(v *bool, long, short string, def bool, usage string) {
		fs.BoolVar(v, long, def, usage)
		if short != "" {
			fs.BoolVar(v, short, def, "same as --"+long)
		}
	}
	list(&f.resources, "resource", "r", "path to resource files (repeatable, comma-separated; - for standard input)")
	list(&f.resources, "resources", "", "same as --resource")
	list(&f.targets, "target-resource", "", "files of target resources of mutate-existing rules")
	list(&f.targets, "target-resources", "", "folders of target resources of mutate-existing rules")
	list(&f.exceptions, "exception", "e", "PolicyException files or folders")
	list(&f.exceptions, "exceptions", "", "same as --exception")
	boolean(&f.withResources, "exceptions-with-resources", "", false, "read PolicyExceptions from the resource paths")
	boolean(&f.withResources, "exceptions-within-resources", "", false, "same as --exceptions-with-resources")
	boolean(&f.withinPolicies, "exceptions-within-policies", "", false, "read PolicyExceptions from the policy paths")
	str(&f.valuesFile, "values-file", "f", "", "values file (kind Values)")
	list(&f.set, "set", "s", "variables as NAME=VALUE (repeatable, comma-separated)")
	str(&f.userInfo, "userinfo", "u", "", "admission info: roles, cluster roles and subjects (kind UserInfo)")
	boolean(&f.report, "policy-report", "p", false, "print policy reports")
	str(&f.format, "output-format", "", "yaml", "format of --policy-report and --generate-exceptions: yaml or json; without them (gavel): json or yaml print a results document, junit JUnit XML")
	str(&f.output, "output", "o", "", "file, or folder (an existing one or a path ending in /), to write the mutated and generated resources to")
	boolean(&f.stdin, "stdin", "i", false, "print only the mutated resources on standard output (to pipe to kubectl); the summary goes to standard error")
	boolean(&f.table, "table", "t", false, "print every result in a table")
	boolean(&f.removeColor, "remove-color", "", false, "never colour the output")
	boolean(&f.detailed, "detailed-results", "", false, "print every rule result (with --table: the messages too)")
	boolean(&f.auditWarn, "audit-warn", "", false, "report failures of Audit policies as warnings")
	fs.IntVar(&f.warnExitCode, "warn-exit-code", 0, "exit code when there are warnings and no failure or error")
	boolean(&f.warnNoPass, "warn-no-pass", "", false, "exit with --warn-exit-code when no result passed")
	boolean(&f.continueOnFail, "continue-on-fail", "", false, "go on to the next resource when one cannot be evaluated (gavel always does; its error is counted)")
	boolean(&f.continueOnError, "continue-on-error", "", true, "go on past resource documents that cannot be decoded, counted as errors; false stops the run before any output")
	boolean(&f.genExceptions, "generate-exceptions", "", false, "print a PolicyException for each violation")
	fs.DurationVar(&f.exceptionTTL, "generated-exception-ttl", 720*time.Hour, "cleanup.kyverno.io/ttl label of generated PolicyExceptions (0: none)")
	boolean(&f.registry, "registry", "", false, "read image data for imageRegistry context entries from the registries, with the local docker credentials")
	list(&f.crdPaths, "crd-path", "", "CustomResourceDefinition files or folders (checked; gavel needs no schema for custom kinds)")
	list(&f.crdPaths, "crd-paths", "", "same as --crd-path")
	boolean(&f.showPerformance, "show-performance", "", false, "print the time spent loading and evaluating on standard error")
	str(&f.gitBranch, "git-branch", "b", "", "branch of a git URL policy path")
	str(&f.gitUser, "username", "", "", "user name for a git URL policy path")
	str(&f.gitPassword, "password", "", "", "password or token for a git URL policy path")
	boolean(&f.failOnly, "fail-only", "", false, "print only failing and erroring results (gavel)")
	str(&f.reportFmt, "report-format", "", "openreports", "API of the policy reports (gavel): openreports (openreports.io/v1alpha1, as the upstream CLI) or wgpolicy (wgpolicyk8s.io/v1alpha2)")
	fs.IntVar(&f.parallel, "parallel", runtime.NumCPU(), "resources evaluated in parallel (gavel)")

	// a live cluster, as upstream (see apply_cluster.go)
	boolean(&f.cluster, "cluster", "c", false, "read the resources from the cluster of the current kubeconfig context: those of the kinds the policies match; -r then names resources")
	str(&f.kubeconfig, "kubeconfig", "", "", "kubeconfig file of --cluster (default: $KUBECONFIG, ~/.kube/config, or the in-cluster service account)")
	str(&f.kubeContext, "context", "", "", "kubeconfig context of --cluster")
	str(&f.namespace, "namespace", "n", "", "with --cluster: read only the namespaced resources of this namespace")
	fs.IntVar(&f.batchSize, "batch-size", 100, "with --cluster: resources read per API call (100 to 20000)")
	boolean(&f.clusterWideResources, "cluster-wide-resources", "", false, "with --cluster: read the cluster-scoped resources only (with --namespace: and the namespace's)")
	fs.IntVar(&f.concurrent, "concurrent", 1, "with --cluster: kinds read at once (1 to 32)")
	list(&f.parameterResources, "parameter-resource", "", "files of the parameter objects CEL rules select with paramKind and paramRef (read through the cluster, not evaluated)")
	str(&f.contextFile, "context-file", "", "", "context file (kind Context): objects read through the cluster, and image data for imageRegistry entries without --registry")
	list(&f.jsonPayloads, "json", "", "JSON payload files: the ValidatingPolicies in JSON evaluation mode are applied to them (instead of --resource)")
	list(&f.envoyPayloads, "envoy-payload", "", "Envoy check requests (not supported: authorization policies)")
	list(&f.httpPayloads, "http-payload", "", "HTTP check requests (not supported: authorization policies)")
	addKlogFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), applyUsage)
		printFlags(fs.Output(), fs)
	}
	return fs
}

// parseApplyFlags parses the arguments of gavel apply and checks them as
// upstream does; ok is false when the run must end with code.
func parseApplyFlags(args []string, stdout, stderr io.Writer) (f applyFlags, paths []string, code int, ok bool) {
	fs := newApplyFlags(&f)
	if code, ok := parseFlags(fs, "apply", args, stdout, stderr); !ok {
		return f, nil, code, false
	}
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "output-format" {
			f.formatSet = true
		}
	})
	if err := f.check(fs.Args()); err != nil {
		fmt.Fprintf(stderr, "gavel apply: %v\nRun \"gavel apply -h\" for the flags.\n", err)
		return f, nil, exitUsage, false
	}
	return f, fs.Args(), exitOK, true
}

// check checks the flags as upstream's checkArguments does, and the
// formats gavel knows.
func (f *applyFlags) check(paths []string) error {
	if err := f.needsHost(); err != nil {
		return err
	}
	switch {
	case len(paths) == 0:
		return errors.New("require policy")
	case f.valuesFile != "" && len(f.set) > 0:
		return errors.New("pass the values either using set flag or values_file flag")
	case paths[0] == "-" && len(f.resources) > 0 && f.resources[0] == "-":
		return errors.New("a stdin pipe can be used for either policies or resources, not both")
	case len(f.resources) != 0 && len(f.jsonPayloads) != 0:
		return errors.New("both resource and json files can not be used together, use one or the other")
	case len(f.resources) == 0 && len(f.jsonPayloads) == 0 && !f.cluster:
		return errors.New("resource file(s) or cluster required")
	}
	if f.cluster {
		// upstream's resource loader checks them before reading
		switch {
		case f.batchSize < minBatchSize:
			return fmt.Errorf("--batch-size: batch size cannot be less than %d", minBatchSize)
		case f.batchSize > maxBatchSize:
			return fmt.Errorf("--batch-size: batch size cannot exceed %d", maxBatchSize)
		case f.concurrent < 1:
			return errors.New("--concurrent: concurrency must be at least 1")
		case f.concurrent > maxConcurrent:
			return fmt.Errorf("--concurrent: concurrency cannot exceed %d", maxConcurrent)
		}
	}
	for _, kv := range f.set {
		if !strings.Contains(kv, "=") {
			return fmt.Errorf("--set %q: want NAME=VALUE", kv)
		}
	}
	switch f.format {
	case "yaml", "json":
	case "junit":
		if f.report || f.genExceptions {
			return errors.New("--output-format junit does not apply to --policy-report or --generate-exceptions (yaml or json)")
		}
	default:
		return fmt.Errorf("unsupported output format %q (yaml or json; junit without --policy-report)", f.format)
	}
	if f.reportFmt != "openreports" && f.reportFmt != "wgpolicy" {
		return fmt.Errorf("unsupported report format %q (openreports or wgpolicy)", f.reportFmt)
	}
	return nil
}

// needsHost reports the flags gavel accepts but cannot act on:
// authorization payloads are not part of the policy language gavel
// speaks.
func (f *applyFlags) needsHost() error {
	var none []string
	for _, p := range []struct {
		name string
		v    stringList
	}{{"--envoy-payload", f.envoyPayloads}, {"--http-payload", f.httpPayloads}} {
		if len(p.v) > 0 {
			none = append(none, p.name)
		}
	}
	if len(none) > 0 {
		return fmt.Errorf("%s: authorization payloads are not supported (gavel evaluates Kubernetes resources and JSON payloads)", strings.Join(none, ", "))
	}
	return nil
}

// clusterOnly lists the flags of a live cluster given without --cluster,
// which upstream ignores.
func (f *applyFlags) clusterOnly() []string {
	if f.cluster {
		return nil
	}
	var out []string
	for _, c := range []struct {
		name string
		set  bool
	}{{"--kubeconfig", f.kubeconfig != ""}, {"--context", f.kubeContext != ""}, {"--namespace", f.namespace != ""}, {"--cluster-wide-resources", f.clusterWideResources}} {
		if c.set {
			out = append(out, c.name)
		}
	}
	return out
}

// textOutput reports whether the run prints upstream's text around its
// results (the banner, the mutations): the default output and the table,
// not the reports, exceptions, -i or the --output-format documents.
func (f *applyFlags) textOutput() bool {
	return !f.genExceptions && !f.report && !f.stdin && (f.table || !f.formatSet)
}

// variables returns the --set variables as global values.
func (f *applyFlags) variables() map[string]any {
	if len(f.set) == 0 {
		return nil
	}
	out := map[string]any{}
	for _, kv := range f.set {
		k, v, _ := strings.Cut(kv, "=")
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out
}
