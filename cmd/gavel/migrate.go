package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
	"github.com/gavelpolicy/gavel/migrate"
	"github.com/gavelpolicy/gavel/policytest"
)

const migrateUsage = `Usage: gavel migrate POLICY_PATH... [-o DIR] [--verify --resource PATH... | --test DIR...]

Converts ClusterPolicies and Policies into the CEL policy types
(ValidatingPolicy, MutatingPolicy, GeneratingPolicy, ImageValidatingPolicy;
several, named <name>-vpol, -mpol, ... when one policy has rules of several
types), PolicyExceptions into policies.kyverno.io PolicyExceptions and
cleanup policies into DeletingPolicies. Prints one line per policy and rule:
converted, or why not (the construct and its field path).

With -o, writes DIR/<name>.yaml for each input policy: its conversions,
with comments where a construct was rewritten.

With --verify, evaluates every policy and its conversion on the same
resources (--resource files and folders, or the resources, values and mocks
of the kyverno-test.yaml files under --test) and prints, per policy, equal
or the resources whose results differ.

Exit status 1 when a rule could not be converted, or a conversion differs.

Flags:
`

type migrateFlags struct {
	out       string
	verify    bool
	resources stringList
	tests     stringList
}

// newMigrateFlags is the flag set of migrate.
func newMigrateFlags(f *migrateFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.StringVar(&f.out, "o", "", "write the conversions into this folder")
	fs.StringVar(&f.out, "output", "", "same as -o")
	fs.BoolVar(&f.verify, "verify", false, "compare each policy with its conversion on the resources")
	fs.Var(&f.resources, "resource", "resource files or folders to verify on (repeat or separate with commas)")
	fs.Var(&f.tests, "test", "folders of kyverno-test.yaml files to verify on (repeat or separate with commas)")
	return fs
}

func runMigrate(args []string, stdout, stderr io.Writer) int {
	var f migrateFlags
	fs := newMigrateFlags(&f)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, migrateUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(reorder(args, fs)); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() == 0 && len(f.tests) == 0 {
		fmt.Fprintln(stderr, "gavel migrate: at least one policy path is required")
		fs.Usage()
		return exitUsage
	}
	if f.verify && len(f.resources) == 0 && len(f.tests) == 0 {
		fmt.Fprintln(stderr, "gavel migrate: --verify needs --resource or --test")
		return exitUsage
	}
	if !f.verify && (len(f.resources) > 0 || len(f.tests) > 0) {
		f.verify = true
	}
	convs, err := convertPaths(fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, "gavel migrate:", err)
		return exitUsage
	}
	status := exitOK
	if printConversions(stdout, convs) {
		status = exitFailed
	}
	if f.out != "" {
		if err := writeConversions(f.out, convs); err != nil {
			fmt.Fprintln(stderr, "gavel migrate:", err)
			return exitFailed
		}
	}
	if f.verify {
		differ, err := verifyMigration(context.Background(), stdout, convs, f)
		if err != nil {
			fmt.Fprintln(stderr, "gavel migrate:", err)
			return exitFailed
		}
		if differ {
			status = exitFailed
		}
	}
	return status
}

// convertPaths converts every policy, exception and cleanup policy of the
// files and folders: policies first, so that exceptions find them.
func convertPaths(paths []string) ([]*migrate.Conversion, error) {
	files, err := loader.Files(paths...)
	if err != nil {
		return nil, err
	}
	var docs, exceptions []api.Document
	for _, name := range files {
		fh, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		ds, err := api.ReadDocuments(fh, name)
		fh.Close()
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			switch {
			case d.Kind() == api.KindPolicyException && strings.HasPrefix(d.APIVersion(), api.GroupKyverno+"/"):
				exceptions = append(exceptions, d)
			case strings.HasPrefix(d.APIVersion(), api.GroupKyverno+"/") &&
				(d.Kind() == api.KindClusterPolicy || d.Kind() == api.KindPolicy || d.Kind() == "CleanupPolicy" || d.Kind() == "ClusterCleanupPolicy"):
				docs = append(docs, d)
			}
		}
	}
	var convs []*migrate.Conversion
	for _, d := range docs {
		c, err := migrate.Convert(d)
		if err != nil {
			return nil, err
		}
		convs = append(convs, c)
	}
	policies := append([]*migrate.Conversion(nil), convs...)
	for _, d := range exceptions {
		c, err := migrate.Convert(d, migrate.WithPolicies(policies...))
		if err != nil {
			return nil, err
		}
		convs = append(convs, c)
	}
	return convs, nil
}

// printConversions prints one line per policy and rule; it reports
// whether a rule was not converted.
func printConversions(w io.Writer, convs []*migrate.Conversion) bool {
	failed := false
	for _, c := range convs {
		var outs []string
		for _, o := range c.Outputs {
			outs = append(outs, kindOf(o)+" "+o.Object.GetName())
		}
		state := "converted"
		if !c.Converted() {
			state, failed = "not fully converted", true
		}
		line := fmt.Sprintf("%s %s: %s", c.Kind, key(c.Namespace, c.Name), state)
		if len(outs) > 0 {
			line += " -> " + strings.Join(outs, ", ")
		}
		fmt.Fprintln(w, line)
		for _, r := range c.Rules {
			if r.Converted() {
				fmt.Fprintf(w, "  %s %s: converted -> %s\n", r.Type, r.Rule, r.Policy)
				continue
			}
			for _, p := range r.Problems {
				fmt.Fprintf(w, "  %s %s: not converted: %s\n", r.Type, r.Rule, p)
			}
		}
	}
	return failed
}

func key(ns, name string) string {
	if ns != "" {
		return ns + "/" + name
	}
	return name
}

// kindOf is an output's kind.
func kindOf(o *migrate.Output) string {
	if p, ok := o.Object.(api.PolicyObject); ok {
		return api.KindOf(p)
	}
	return api.KindPolicyException
}

// writeConversions writes DIR/<name>.yaml per converted document (the
// namespace first when two documents share a name).
func writeConversions(dir string, convs []*migrate.Conversion) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	count := map[string]int{}
	for _, c := range convs {
		count[c.Name]++
	}
	written := map[string]bool{}
	for _, c := range convs {
		if len(c.Outputs) == 0 {
			continue
		}
		name := c.Name
		if count[name] > 1 && c.Namespace != "" {
			name = c.Namespace + "-" + name
		}
		if written[name] {
			name += "-" + strings.ToLower(c.Kind)
		}
		written[name] = true
		var b bytes.Buffer
		if err := c.WriteYAML(&b); err != nil {
			return fmt.Errorf("%s %s: %w", c.Kind, c.Name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// verifyMigration compares the policies with their conversions on the
// resources and on the tests' environments; it reports whether one
// differs.
func verifyMigration(ctx context.Context, w io.Writer, convs []*migrate.Conversion, f migrateFlags) (bool, error) {
	var reports []*migrate.Verification
	if len(f.resources) > 0 {
		set, err := loader.Load(f.resources...)
		if err != nil {
			return false, err
		}
		var objs []map[string]any
		for _, d := range set.Resources {
			if d.Kind() == "" {
				continue
			}
			objs = append(objs, d.Object)
		}
		cluster := inmem.New(objs...)
		v, err := migrate.Verify(ctx, convs, objs, migrate.WithEngineOptions(engine.WithClient(cluster),
			engine.WithConfigMapResolver(cluster), engine.WithAPIClient(cluster)))
		if err != nil {
			return false, err
		}
		reports = append(reports, v)
	}
	for _, dir := range f.tests {
		vs, err := verifyTests(ctx, dir, convs)
		if err != nil {
			return false, err
		}
		reports = append(reports, vs...)
	}
	return printVerifications(w, reports), nil
}

// verifyTests verifies, for each test under dir, the conversions of the
// test's policies on its resources with its values and mocks; policies
// the test names but convs lacks are converted.
func verifyTests(ctx context.Context, dir string, convs []*migrate.Conversion) ([]*migrate.Verification, error) {
	files, err := policytest.Discover(policytest.DefaultFileName, dir)
	if err != nil {
		return nil, err
	}
	byKey := map[string]*migrate.Conversion{}
	for _, c := range convs {
		byKey[c.Kind+"/"+key(c.Namespace, c.Name)] = c
	}
	var out []*migrate.Verification
	for _, file := range files {
		tests, err := policytest.LoadAll(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		for _, t := range tests {
			env, err := t.Environment()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			var these []*migrate.Conversion
			for _, p := range env.Policies {
				cp, ok := p.(api.ClassicPolicy)
				if !ok {
					continue
				}
				c := byKey[api.KindOf(cp)+"/"+key(cp.GetNamespace(), cp.GetName())]
				if c == nil {
					c = migrate.ConvertPolicy(cp)
				}
				these = append(these, c)
			}
			for _, x := range env.Exceptions {
				these = append(these, migrate.ConvertException(x, these...))
			}
			// the test's values stand for context entries on both sides
			v, err := migrate.Verify(ctx, these, env.Resources, migrate.WithEngineOptions(env.EngineOptions...),
				migrate.WithRequests(env.Request), migrate.WithContextValues(env.RuleValues))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			for i := range v.Policies {
				v.Policies[i].Policy += " (" + file + ")"
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// printVerifications prints per policy: equal, its differences, or what
// was not verified; it reports whether one differs.
func printVerifications(w io.Writer, reports []*migrate.Verification) bool {
	differ := false
	for _, v := range reports {
		for _, p := range v.Policies {
			switch {
			case len(p.Differences) > 0:
				differ = true
				fmt.Fprintf(w, "verify %s: %d difference(s)\n", p.Policy, len(p.Differences))
				ds := append([]migrate.Difference(nil), p.Differences...)
				sort.SliceStable(ds, func(i, j int) bool { return ds[i].Resource < ds[j].Resource })
				for _, d := range ds {
					fmt.Fprintf(w, "  %s\n", d)
				}
			case len(p.Compared) > 0:
				fmt.Fprintf(w, "verify %s: equal (%d evaluations of %s)\n", p.Policy, p.Evaluations, strings.Join(p.Compared, ", "))
			default:
				fmt.Fprintf(w, "verify %s: not verified\n", p.Policy)
			}
			for _, u := range p.Unverified {
				fmt.Fprintf(w, "  not verified: %s\n", u)
			}
			for _, u := range p.NotCompared {
				fmt.Fprintf(w, "  not compared: %s\n", u)
			}
		}
	}
	return differ
}
