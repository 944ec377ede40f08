package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

const createUsage = `Usage: gavel create test|values|user-info|exception [flags]

Writes a file of the upstream CLI's formats, as kyverno create does, to
standard output or to the file of -o/--output:

  test        a kyverno-test.yaml (kind Test): policies, resources, values
              and the expected results (--pass, --fail, --skip
              POLICY,RULE,RESOURCE,NAMESPACE,KIND[,PATCHED_RESOURCE])
  values      a values file (kind Values): --global NAME=VALUE,
              --rule POLICY,RULE,NAME=VALUE..., --resource
              POLICY,RESOURCE,NAME=VALUE..., --ns-selector NS,LABEL=VALUE...
  user-info   a user info file (kind UserInfo): --username, --role,
              --cluster-role, --group
  exception   a PolicyException: --name, --namespace, --background,
              --rule POLICY,RULE..., --any and --all
              kind=K,name=N,namespace=NS,operation=OP...

Run "gavel create COMMAND -h" for the flags of one.
`

// multi is a repeatable flag whose values are kept whole (a value may
// hold commas), as upstream's string arrays.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func runCreate(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, createUsage)
		return exitUsage
	}
	var fs *flag.FlagSet
	var render func(b *strings.Builder)
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, createUsage)
		return exitOK
	case "test":
		fs, render = createTestFlags()
	case "values":
		fs, render = createValuesFlags()
	case "user-info":
		fs, render = createUserInfoFlags()
	case "exception":
		fs, render = createExceptionFlags()
	default:
		msg := fmt.Sprintf("gavel create: unknown file kind %q (test, values, user-info or exception)", args[0])
		if s := suggest(args[0], []string{"test", "values", "user-info", "exception"}); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		fmt.Fprintln(stderr, msg)
		return exitUsage
	}
	var output string
	fs.StringVar(&output, "output", "", "file to write (standard output when not given)")
	fs.StringVar(&output, "o", "", "same as --output")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: gavel create %s [flags]\n\nFlags:\n", args[0])
		printFlags(fs.Output(), fs)
	}
	if code, ok := parseFlags(fs, "create "+args[0], args[1:], stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gavel create %s: unexpected argument %q\n", args[0], fs.Arg(0))
		return exitUsage
	}
	var text strings.Builder
	render(&text)
	w := stdout
	if output != "" {
		f, err := os.Create(output)
		if err != nil {
			fmt.Fprintf(stderr, "gavel create %s: %v\n", args[0], err)
			return exitUsage
		}
		defer f.Close()
		w = f
	}
	if _, err := io.WriteString(w, text.String()); err != nil {
		fmt.Fprintf(stderr, "gavel create %s: %v\n", args[0], err)
		return exitUsage
	}
	return exitOK
}

// keyValue splits NAME=VALUE; ok is false unless both are given.
func keyValue(s string) (k, v string, ok bool) {
	parts := strings.Split(s, "=")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// writeList writes each item after prefix.
func writeList(b *strings.Builder, prefix string, items []string) {
	for _, it := range items {
		b.WriteString(prefix + it)
	}
}

// writeValues writes each item as KEY: VALUE after prefix.
func writeValues(b *strings.Builder, prefix string, items []kv) {
	for _, it := range items {
		b.WriteString(prefix + it.Key + ": " + it.Value)
	}
}

// kv is one NAME=VALUE item of a file, in a fixed order.
type kv struct{ Key, Value string }

// sortedValues returns the NAME=VALUE items of a list, sorted by name (as
// upstream's templates range over maps).
func sortedValues(items []string) []kv {
	m := map[string]string{}
	for _, it := range items {
		if k, v, ok := keyValue(it); ok {
			m[k] = v
		}
	}
	out := make([]kv, 0, len(m))
	for k, v := range m {
		out = append(out, kv{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func createTestFlags() (*flag.FlagSet, func(*strings.Builder)) {
	fs := flag.NewFlagSet("create test", flag.ContinueOnError)
	var name, values string
	var policies, resources stringList
	var pass, fail, skip multi
	fs.StringVar(&name, "name", "test-name", "test name")
	fs.StringVar(&name, "n", "test-name", "same as --name")
	fs.Var(&policies, "policy", "policy files (repeatable, comma-separated)")
	fs.Var(&policies, "p", "same as --policy")
	fs.Var(&resources, "resource", "resource files (repeatable, comma-separated)")
	fs.Var(&resources, "r", "same as --resource")
	fs.StringVar(&values, "values", "", "values file")
	fs.StringVar(&values, "f", "", "same as --values")
	fs.Var(&pass, "pass", "an expected pass: POLICY,RULE,RESOURCE,NAMESPACE,KIND[,PATCHED_RESOURCE] (repeatable)")
	fs.Var(&fail, "fail", "an expected fail (as --pass)")
	fs.Var(&skip, "skip", "an expected skip (as --pass)")
	type result struct {
		Policy, Rule, Resource, Namespace, Kind, PatchedResource, Result string
	}
	return fs, func(b *strings.Builder) {
		var results []result
		for _, set := range []struct {
			items  multi
			result string
		}{{pass, "pass"}, {fail, "fail"}, {skip, "skip"}} {
			for _, it := range set.items {
				p := strings.Split(it, ",")
				if len(p) != 5 && len(p) != 6 {
					continue // as upstream: ignored
				}
				r := result{Policy: p[0], Rule: p[1], Resource: p[2], Namespace: p[3], Kind: p[4], Result: set.result}
				if len(p) == 6 {
					r.PatchedResource = p[5]
				}
				results = append(results, r)
			}
		}
		b.WriteString("apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: " + name + "\npolicies:")
		writeList(b, "\n  - ", policies)
		b.WriteString("\nresources:")
		writeList(b, "\n  - ", resources)
		if values != "" {
			b.WriteString("\nvariables: " + values)
		}
		b.WriteString("\nresults:")
		for _, r := range results {
			b.WriteString("\n  - policy: " + r.Policy + "\n    rule: " + r.Rule + "\n    resources:\n      - " + r.Resource)
			if r.Namespace != "" {
				b.WriteString("\n    namespace: " + r.Namespace)
			}
			b.WriteString("\n    kind: " + r.Kind)
			if r.PatchedResource != "" {
				b.WriteString("\n    patchedResources: " + r.PatchedResource)
			}
			b.WriteString("\n    result: " + r.Result)
		}
		b.WriteString("\n")
	}
}

func createValuesFlags() (*flag.FlagSet, func(*strings.Builder)) {
	fs := flag.NewFlagSet("create values", flag.ContinueOnError)
	var global stringList
	var nsSelectors, rules, resources multi
	fs.Var(&global, "global", "a global value NAME=VALUE (repeatable, comma-separated)")
	fs.Var(&global, "g", "same as --global")
	fs.Var(&nsSelectors, "ns-selector", "a namespace and its labels: NAMESPACE,LABEL=VALUE... (repeatable)")
	fs.Var(&nsSelectors, "n", "same as --ns-selector")
	fs.Var(&rules, "rule", "values of a rule: POLICY,RULE,NAME=VALUE... (repeatable)")
	fs.Var(&resources, "resource", "values of a resource: POLICY,RESOURCE,NAME=VALUE... (repeatable)")
	type named struct {
		Name   string
		Values []kv
	}
	type policy struct {
		Name             string
		Rules, Resources []named
	}
	type selector struct {
		Name   string
		Labels []kv
	}
	return fs, func(b *strings.Builder) {
		var policies []policy
		var selectors []selector
		for _, s := range nsSelectors {
			p := strings.Split(s, ",")
			if len(p) >= 2 {
				selectors = append(selectors, selector{p[0], sortedValues(p[1:])})
			}
		}
		for _, r := range rules {
			if p := strings.Split(r, ","); len(p) >= 2 {
				policies = append(policies, policy{Name: p[0], Rules: []named{{p[1], sortedValues(p[2:])}}})
			}
		}
		for _, r := range resources {
			if p := strings.Split(r, ","); len(p) >= 2 {
				policies = append(policies, policy{Name: p[0], Resources: []named{{p[1], sortedValues(p[2:])}}})
			}
		}
		b.WriteString("apiVersion: cli.kyverno.io/v1alpha1\nkind: Values\nmetadata:\n  name: values\n# list of policy values\npolicies:")
		for _, p := range policies {
			b.WriteString("\n  - name: " + p.Name)
			for _, part := range []struct {
				key   string
				items []named
			}{{"rules", p.Rules}, {"resources", p.Resources}} {
				if len(part.items) == 0 {
					continue
				}
				b.WriteString("\n    " + part.key + ":")
				for _, n := range part.items {
					b.WriteString("\n      - name: " + n.Name + "\n        values:")
					writeValues(b, "\n          ", n.Values)
				}
			}
		}
		b.WriteString("\n\n# list of global values\nglobalValues:")
		writeValues(b, "\n  ", sortedValues(global))
		b.WriteString("\n\n# list of namespace selectors\nnamespaceSelector:")
		for _, sel := range selectors {
			b.WriteString("\n  - name: " + sel.Name + "\n    labels:")
			writeValues(b, "\n      ", sel.Labels)
		}
		b.WriteString("\n")
	}
}

func createUserInfoFlags() (*flag.FlagSet, func(*strings.Builder)) {
	fs := flag.NewFlagSet("create user-info", flag.ContinueOnError)
	var username string
	var roles, clusterRoles, groups stringList
	fs.StringVar(&username, "username", "", "user name")
	fs.StringVar(&username, "u", "", "same as --username")
	fs.Var(&roles, "role", "roles (repeatable, comma-separated)")
	fs.Var(&roles, "r", "same as --role")
	fs.Var(&clusterRoles, "cluster-role", "cluster roles (repeatable, comma-separated)")
	fs.Var(&clusterRoles, "c", "same as --cluster-role")
	fs.Var(&groups, "group", "groups (repeatable, comma-separated)")
	fs.Var(&groups, "g", "same as --group")
	return fs, func(b *strings.Builder) {
		b.WriteString("apiVersion: cli.kyverno.io/v1alpha1\nkind: UserInfo\nmetadata:\n  name: user-info\n# list of roles\nroles:")
		writeList(b, "\n  - ", roles)
		b.WriteString("\n\n# list of cluster roles\nclusterRoles:")
		writeList(b, "\n  - ", clusterRoles)
		b.WriteString("\n\nuserInfo:\n  # user name\n  username: " + username + "\n\n  # list of groups\n  groups:")
		writeList(b, "\n    - ", groups)
		b.WriteString("\n")
	}
}

func createExceptionFlags() (*flag.FlagSet, func(*strings.Builder)) {
	fs := flag.NewFlagSet("create exception", flag.ContinueOnError)
	var name, namespace string
	var background bool
	var rules, anyOf, allOf multi
	fs.StringVar(&name, "name", "", "PolicyException name")
	fs.StringVar(&name, "n", "", "same as --name")
	fs.StringVar(&namespace, "namespace", "", "PolicyException namespace (default \"default\")")
	fs.BoolVar(&background, "background", true, "false when the exception must not apply to background scans")
	fs.BoolVar(&background, "b", true, "same as --background")
	fs.Var(&rules, "rule", "a policy and the rules it exempts: POLICY,RULE... (repeatable)")
	fs.Var(&rules, "r", "same as --rule")
	fs.Var(&anyOf, "any", "a resource filter of match.any: kind=K,name=N,namespace=NS,operation=OP... (repeatable)")
	fs.Var(&allOf, "all", "a resource filter of match.all (as --any)")
	type filter struct{ Kinds, Names, Namespaces, Operations []string }
	type exception struct {
		PolicyName string
		RuleNames  []string
	}
	parse := func(items multi) []filter {
		var out []filter
		for _, it := range items {
			var f filter
			ok := true
			for _, part := range strings.Split(it, ",") {
				k, v, found := strings.Cut(part, "=")
				if !found || strings.Contains(v, "=") {
					ok = false // as upstream: the filter is ignored
					break
				}
				switch k {
				case "kind":
					f.Kinds = append(f.Kinds, v)
				case "name":
					f.Names = append(f.Names, v)
				case "namespace":
					f.Namespaces = append(f.Namespaces, v)
				case "operation":
					f.Operations = append(f.Operations, v)
				}
			}
			if ok {
				out = append(out, f)
			}
		}
		return out
	}
	return fs, func(b *strings.Builder) {
		var excs []exception
		for _, r := range rules {
			if p := strings.Split(r, ","); len(p) >= 2 {
				excs = append(excs, exception{p[0], p[1:]})
			}
		}
		if namespace == "" {
			namespace = "default"
		}
		b.WriteString("apiVersion: kyverno.io/v2beta1\nkind: PolicyException\nmetadata:\n  name: " + name + "\n  namespace: " + namespace)
		b.WriteString("\nspec:\n  background: " + strconv.FormatBool(background) + "\n  match:")
		for _, block := range []struct {
			key     string
			filters []filter
		}{{"all", parse(allOf)}, {"any", parse(anyOf)}} { // sorted, as upstream's map
			if len(block.filters) == 0 {
				continue
			}
			b.WriteString("\n    " + block.key + ":")
			for _, f := range block.filters {
				b.WriteString("\n      - resources:")
				for _, l := range []struct {
					key    string
					values []string
				}{{"kinds", f.Kinds}, {"names", f.Names}, {"namespaces", f.Namespaces}, {"operations", f.Operations}} {
					if len(l.values) > 0 {
						b.WriteString("\n          " + l.key + ":")
						writeList(b, "\n            - ", l.values)
					}
				}
			}
		}
		if len(excs) > 0 {
			b.WriteString("\n  exceptions:")
			for _, e := range excs {
				b.WriteString("\n    - policyName: " + e.PolicyName + "\n      ruleNames:")
				writeList(b, "\n        - ", e.RuleNames)
			}
		}
		b.WriteString("\n")
	}
}
