package policytest

import (
	"fmt"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// rows compares the responses with the expected results as upstream's test
// command does. A result's resources name triggers (the resources the
// policies were applied to) or mutate-existing targets (the resources a
// rule patched); "namespace/name" tells apart resources of the same name,
// and a result that names no resource checks every trigger of the policy
// and every target of the rule. The kind, when given, must match.
func (e *env) rows(byOp map[api.AdmissionOperation][]response, opts Options) []Row {
	var rows []Row
	for _, tr := range e.t.Results {
		op, _ := resultOperation(tr)
		responses := byOp[op]
		names := resultResources(tr)
		if len(names) == 0 {
			names = allResources(tr, responses)
		}
		for _, name := range names {
			found := e.triggerRows(tr, name, responses, opts)
			found = append(found, e.targetRows(tr, name, responses, opts)...)
			if len(found) == 0 {
				found = append(found, e.row(tr, name, Row{Reason: "not found"}))
			}
			rows = append(rows, found...)
		}
	}
	return rows
}

// row returns a row of result tr on resource name, completed from r.
func (e *env) row(tr Result, name string, r Row) Row {
	r.Test, r.Policy, r.Rule, r.Kind, r.Namespace, r.Resource, r.Expected = e.t.Path, tr.Policy, tr.Rule, tr.Kind, tr.Namespace, name, expected(tr)
	return r
}

// resourceRef is the namespace and name a result's resource entry names
// ("" namespace: any, unless the deprecated namespace field gives one).
func resourceRef(tr Result, name string) (ns, n string) {
	if ns, n, ok := strings.Cut(name, "/"); ok {
		return ns, n
	}
	return tr.Namespace, name
}

// selectedBy reports whether a result's resource entry selects the
// response's resource: a JSON payload by its file name, as upstream.
func (r *response) selectedBy(tr Result, name string) bool {
	if r.payload != "" {
		return name == r.payload
	}
	return selects(tr, name, r.resource)
}

// selects reports whether a result's resource entry selects obj.
func selects(tr Result, name string, obj map[string]any) bool {
	ns, n := resourceRef(tr, name)
	if n != nameOf(obj) || (tr.Kind != "" && tr.Kind != kindOf(obj)) {
		return false
	}
	return ns == "" || ns == namespaceOf(obj)
}

// ruleNamed reports whether a rule result is the result's rule or one of
// the rules autogen derived from it.
func ruleNamed(tr Result, rr engine.RuleResult) bool {
	return rr.Name == tr.Rule || rr.Name == "autogen-"+tr.Rule || rr.Name == "autogen-cronjob-"+tr.Rule
}

// triggerRows are the rows of the triggers name selects: one per result of
// the rule, or an "excluded" row after a response of the policy without
// the rule, written as upstream's test output writes it: only while the
// resource has no row yet (at most one per resource, none after a
// response that had the rule). In strict mode an excluded row fails only
// when no response of its resource had the rule.
func (e *env) triggerRows(tr Result, name string, responses []response, opts Options) []Row {
	var found []Row
	exp := expected(tr)
	hasRows := map[int]bool{} // resources with a row, by index
	applied := map[int]bool{} // resources with a row of the rule
	excluded := map[int]int{} // row of found → resource index
	for _, resp := range responses {
		if !policyMatches(tr.Policy, resp.policy) || !resp.selectedBy(tr, name) {
			continue
		}
		n := len(found)
		for _, rr := range resp.rules {
			if !ruleless(resp.policy) && !ruleNamed(tr, rr) {
				continue
			}
			if tr.GeneratedResource == "" || len(rr.GeneratedResources) < 2 {
				found = append(found, e.check(tr, name, exp, resp, rr, opts))
				continue
			}
			// each generated resource is checked, as upstream's runner
			// gives each its row
			for _, g := range rr.GeneratedResources {
				one := rr
				one.GeneratedResources = []map[string]any{g}
				found = append(found, e.check(tr, name, exp, resp, one, opts))
			}
		}
		if len(found) > n {
			applied[resp.index] = true
		} else if !hasRows[resp.index] {
			excluded[len(found)] = resp.index
			found = append(found, e.row(tr, name, Row{Got: "excluded", Reason: "excluded", Passed: true}))
		}
		hasRows[resp.index] = true
		setKind(found[n:], resp.resource)
	}
	if opts.Strict && exp != "skip" {
		for i, res := range excluded {
			if !applied[res] {
				found[i].Passed = false
				found[i].Reason = fmt.Sprintf("excluded: the rule did not apply, want %s", exp)
			}
		}
	}
	return found
}

// setKind names the kind of the resource in rows of a result that gives
// none.
func setKind(rows []Row, obj map[string]any) {
	for i := range rows {
		if rows[i].Kind == "" {
			rows[i].Kind = kindOf(obj)
		}
	}
}

// targetRows are the rows of the mutate-existing targets name selects:
// one per rule result that patched such a target, its patchedResources
// compared with the patched target.
func (e *env) targetRows(tr Result, name string, responses []response, opts Options) []Row {
	var found []Row
	for _, resp := range responses {
		if !policyMatches(tr.Policy, resp.policy) {
			continue
		}
		for _, rr := range resp.rules {
			if !ruleless(resp.policy) && !ruleNamed(tr, rr) {
				continue
			}
			for _, t := range rr.PatchedTargets {
				if !selects(tr, name, t) {
					continue
				}
				target := resp
				target.resource, target.patched = t, t
				found = append(found, e.check(tr, name, expected(tr), target, rr, opts))
				setKind(found[len(found)-1:], t)
			}
		}
	}
	return found
}

// allResources names, for a result that lists no resources, every trigger
// the policy was applied to and every target its rule patched, as
// "namespace/name" ("name" for a cluster-scoped resource).
func allResources(tr Result, responses []response) []string {
	var out []string
	seen := map[string]bool{}
	add := func(obj map[string]any) {
		if tr.Kind != "" && tr.Kind != kindOf(obj) {
			return
		}
		ref := nameOf(obj)
		if ns := namespaceOf(obj); ns != "" {
			ref = ns + "/" + ref
		}
		if !seen[ref] {
			seen[ref] = true
			out = append(out, ref)
		}
	}
	for _, resp := range responses {
		if !policyMatches(tr.Policy, resp.policy) {
			continue
		}
		if resp.payload != "" {
			if !seen[resp.payload] {
				seen[resp.payload] = true
				out = append(out, resp.payload)
			}
			continue
		}
		add(resp.resource)
		for _, rr := range resp.rules {
			if ruleless(resp.policy) || ruleNamed(tr, rr) {
				for _, t := range rr.PatchedTargets {
					add(t)
				}
			}
		}
	}
	return out
}
