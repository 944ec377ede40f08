package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/report"
)

// streamTable evaluates the resources and prints every result in a table
// (-t/--table), as the upstream CLI does: ID, POLICY, RULE, RESOURCE,
// RESULT, and REASON (the rule's message) with --detailed-results. The
// rows are spooled (see spool) and aligned at the end; the summary
// follows the table.
func streamTable(stdout, stderr io.Writer, ev *evaluator, feed feedFunc, f applyFlags) (counts, int) {
	out := newSpool(reportMemory)
	defer out.Close()
	doc := ev.newDocument()
	rows := bufio.NewWriterSize(out, 32<<10)
	colour := !f.removeColor && colourEnabled(stdout)
	id, resources := 0, 0
	err := ev.run(feed, f.parallel, nil, func(rr *resourceResult) {
		resources++
		entries, _ := doc.add(rr, f.auditWarn)
		if f.failOnly {
			entries = failing(entries)
		}
		for _, e := range entries {
			id++
			fmt.Fprintf(rows, "%d\t%s\t%s\t%s\t%s", id, e.Policy, e.Rule, e.Resource, paintResult(colour, e.Result))
			if f.detailed {
				fmt.Fprintf(rows, "\t%s", strings.ReplaceAll(e.Message, "\n", " "))
			}
			rows.WriteString("\n")
		}
	})
	if err != nil {
		fmt.Fprintln(stderr, "gavel apply: failed to load resources:", err)
		return counts{}, exitUsage
	}
	for _, e := range doc.Errors {
		fmt.Fprintln(stderr, "gavel apply:", e)
	}
	if err := rows.Flush(); err != nil {
		fmt.Fprintln(stderr, "gavel apply:", err)
		return counts{}, exitUsage
	}
	bw := bufio.NewWriter(stdout)
	// upstream prints its banner before the table too
	writeBanner(bw, ev, resources+ev.otherDocs)
	if n, err := ev.mutated.writeText(bw); err != nil {
		fmt.Fprintln(stderr, "gavel apply:", err)
		return counts{}, exitUsage
	} else if n > 0 {
		// the mutation notes end without a newline
		bw.WriteString("\n")
	}
	writeSkipped(bw, ev.skipped)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	header := "ID\tPOLICY\tRULE\tRESOURCE\tRESULT"
	if f.detailed {
		header += "\tREASON"
	}
	fmt.Fprintln(tw, header)
	if _, err := out.WriteTo(tw); err != nil {
		fmt.Fprintln(stderr, "gavel apply:", err)
		return counts{}, exitUsage
	}
	tw.Flush()
	bw.WriteString("\n")
	writeSummary(bw, doc.Summary)
	if err := bw.Flush(); err != nil {
		fmt.Fprintln(stderr, "gavel apply:", err)
		return counts{}, exitUsage
	}
	return countsOf(doc.Summary), exitOK
}

// paintResult colours a result for a terminal; the codes are of equal
// length so that the columns stay aligned.
func paintResult(colour bool, result string) string {
	if !colour {
		return result
	}
	code := ansiGreen
	switch result {
	case "fail", "error":
		code = ansiRed
	case "warn", "skip":
		code = ansiBold
	}
	return code + result + ansiReset
}

// streamExceptions evaluates the resources and prints a PolicyException
// for each violation (--generate-exceptions), as the upstream CLI does:
// for every failing result of a ClusterPolicy's validate rule, one
// kyverno.io/v2beta1 PolicyException named POLICY-RULE-NAMESPACE-NAME that
// exempts the resource (and, for an autogen rule, the Pods of its
// controller) from the rule, labelled with cleanup.kyverno.io/ttl unless
// --generated-exception-ttl is 0; Pod Security failures list their
// controls and images (tags and digests replaced by *). YAML documents
// (JSON with --output-format json), each after "---"; the summary goes to
// stderr.
func streamExceptions(stdout, stderr io.Writer, ev *evaluator, feed feedFunc, f applyFlags) (counts, int) {
	out := newSpool(reportMemory)
	defer out.Close()
	doc := ev.newDocument()
	newFinish := func() func(*resourceResult) {
		return func(rr *resourceResult) {
			if rr.err != nil {
				return
			}
			rr.entries, _ = resourceEntries(rr, f.auditWarn)
			for _, pr := range rr.policies {
				if pr.Policy.Source().GetNamespace() != "" {
					continue
				}
				for _, r := range pr.Rules {
					if r.Type != engine.Validation && r.Type != engine.ImageVerify {
						continue
					}
					if report.EntryResult(&pr, &r, f.auditWarn) != "fail" {
						continue
					}
					b, err := renderException(pr.Policy.Source().GetName(), r, rr.resource, f.exceptionTTL, f.format)
					if err != nil {
						rr.err = err
						return
					}
					rr.cases = append(rr.cases, renderedCase{text: b})
				}
			}
			rr.policies, rr.resource = nil, nil
		}
	}
	bw := bufio.NewWriterSize(out, 32<<10)
	err := ev.run(feed, f.parallel, newFinish, func(rr *resourceResult) {
		if !doc.take(rr) {
			return
		}
		for _, c := range rr.cases {
			bw.Write(c.text)
		}
	})
	if err != nil {
		fmt.Fprintln(stderr, "gavel apply: failed to load resources:", err)
		return counts{}, exitUsage
	}
	for _, e := range doc.Errors {
		fmt.Fprintln(stderr, "gavel apply:", e)
	}
	if err := bw.Flush(); err != nil {
		fmt.Fprintln(stderr, "gavel apply:", err)
		return counts{}, exitUsage
	}
	if _, err := out.WriteTo(stdout); err != nil {
		fmt.Fprintln(stderr, "gavel apply:", err)
		return counts{}, exitUsage
	}
	writeSummary(stderr, doc.Summary)
	return countsOf(doc.Summary), exitOK
}

// tagOrDigest is what a generated exception replaces by * in an image.
var tagOrDigest = regexp.MustCompile(`:.*|@.*`)

// renderException renders the PolicyException of one failing rule on a
// resource, after its "---" separator.
func renderException(policy string, r engine.RuleResult, obj map[string]any, ttl time.Duration, format string) ([]byte, error) {
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	kinds, names, rules := []any{kind}, []any{name}, []any{r.Name}
	if strings.HasPrefix(r.Name, "autogen-") {
		if kind == "CronJob" {
			kinds = append(kinds, "Job", "Pod")
			rules = append(rules, strings.ReplaceAll(r.Name, "autogen-cronjob-", "autogen-"), strings.TrimPrefix(r.Name, "autogen-cronjob-"))
		} else {
			kinds = append(kinds, "Pod")
			rules = append(rules, strings.TrimPrefix(r.Name, "autogen-"))
		}
		names = append(names, name+"-*")
	}
	meta := map[string]any{"name": strings.Join([]string{policy, r.Name, ns, name}, "-"), "creationTimestamp": nil}
	if ttl > 0 {
		meta["labels"] = map[string]any{"cleanup.kyverno.io/ttl": ttl.String()}
	}
	spec := map[string]any{
		"match": map[string]any{"all": []any{map[string]any{"resources": map[string]any{
			"kinds": kinds, "names": names, "namespaces": []any{ns},
		}}}},
		"exceptions": []any{map[string]any{"policyName": policy, "ruleNames": rules}},
	}
	if len(r.PodSecurityChecks) > 0 {
		var pss []any
		for _, c := range r.PodSecurityChecks {
			control := map[string]any{"controlName": c.Name}
			if c.Images != nil {
				images := make([]any, len(c.Images))
				for i, im := range c.Images {
					images[i] = tagOrDigest.ReplaceAllString(im, "*")
				}
				control["images"] = images
			}
			pss = append(pss, control)
		}
		spec["podSecurity"] = pss
	}
	exc := map[string]any{"apiVersion": "kyverno.io/v2beta1", "kind": "PolicyException", "metadata": meta, "spec": spec}
	var b []byte
	var err error
	if format == "json" {
		b, err = json.Marshal(exc)
	} else {
		b, err = yaml.Marshal(exc)
	}
	if err != nil {
		return nil, err
	}
	return append([]byte("---\n"), append(b, '\n')...), nil
}
