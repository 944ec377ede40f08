package mutate

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/internal/testshared"
)

// This file runs the mutate rules of policies from the upstream policy
// library against the resources of their Kyverno CLI tests
// (kyverno-test.yaml) and compares the patched resource with the expected
// one, the way the CLI does (empty values tidied away, list order
// significant), and the per-rule pass/skip outcome.
//
// The CLI patches a resource with all the rules of the policy in order, so the
// harness does too. It only uses what this package can decide alone: rules
// matched by kind, no autogen, no context. Rules with preconditions are
// applied when the test expects them to pass and left out when it expects a
// skip. Patches with variables, and foreach loops, are only used through the
// hand-written substitutions of the overrides table below.
//
// testdata/realworld holds a copy of some of those tests; with the shared
// conformance corpus (GAVEL_SHARED), the whole corpus is run too.

// override builds the concrete patches of a rule for one resource, in the
// order the engine applies them (foreach loops over strategic merge patches
// run in reverse order).
type override func(t *testing.T, resource map[string]any, rule map[string]any) []any

var overrides = map[string]override{
	"insert-pod-antiaffinity/insert-pod-antiaffinity": func(t *testing.T, r map[string]any, rule map[string]any) []any {
		app, _ := lookup(r, "spec", "template", "metadata", "labels", "app").(string)
		return []any{substitute(mutation(rule)["patchStrategicMerge"], map[string]string{
			"{{request.object.spec.template.metadata.labels.app}}": app,
		})}
	},
	"add-default-resources/add-default-requests":                       foreachContainers("ephemeralContainers", "initContainers", "containers"),
	"add-certificates-volume/add-ssl-certs":                            foreachContainers("containers"),
	"add-apparmor-annotations/apparmor-runtime-default":                foreachContainers("ephemeralContainers", "initContainers", "containers"),
	"replace-image-registry/replace-image-registry-pod-containers":     replaceRegistry("containers"),
	"replace-image-registry/replace-image-registry-pod-initcontainers": replaceRegistry("initContainers"),
}

// foreachContainers emulates a foreach over the listed container lists with a
// strategic merge patch using {{element.name}}.
func foreachContainers(lists ...string) override {
	return func(t *testing.T, r map[string]any, rule map[string]any) []any {
		fe := mutation(rule)["foreach"].([]any)[0].(map[string]any)
		var patches []any
		for _, el := range elements(r, lists...) {
			name, _ := el["name"].(string)
			patches = append(patches, substitute(fe["patchStrategicMerge"], map[string]string{
				"{{element.name}}":   name,
				"{{ element.name }}": name,
			}))
		}
		return reversed(patches)
	}
}

var registryRE = regexp.MustCompile(`^(localhost/|(?:[a-z0-9]+\.)+[a-z0-9]+/)?(.*)$`)

func replaceRegistry(list string) override {
	return func(t *testing.T, r map[string]any, rule map[string]any) []any {
		var patches []any
		for _, el := range elements(r, list) {
			name, _ := el["name"].(string)
			image, _ := el["image"].(string)
			patches = append(patches, map[string]any{"spec": map[string]any{list: []any{map[string]any{
				"name":  name,
				"image": registryRE.ReplaceAllString(image, "myregistry.corp.com/$2"),
			}}}})
		}
		return reversed(patches)
	}
}

func elements(r map[string]any, lists ...string) []map[string]any {
	var out []map[string]any
	for _, l := range lists {
		items, _ := lookup(r, "spec", l).([]any)
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

func reversed(l []any) []any {
	for i, j := 0, len(l)-1; i < j; i, j = i+1, j-1 {
		l[i], l[j] = l[j], l[i]
	}
	return l
}

func lookup(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// substitute replaces template texts in all strings (keys included).
func substitute(v any, vars map[string]string) any {
	rep := func(s string) string {
		for k, val := range vars {
			s = strings.ReplaceAll(s, k, val)
		}
		return s
	}
	switch t := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, e := range t {
			m[rep(k)] = substitute(e, vars)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = substitute(e, vars)
		}
		return l
	case string:
		return rep(t)
	}
	return v
}

func mutation(rule map[string]any) map[string]any {
	m, _ := rule["mutate"].(map[string]any)
	return m
}

func TestRealWorld(t *testing.T) {
	dirs, err := filepath.Glob("testdata/realworld/*/.kyverno-test")
	if err != nil {
		t.Fatal(err)
	}
	var report bytes.Buffer
	policies := 0
	for _, dir := range dirs {
		name := filepath.Base(filepath.Dir(dir))
		t.Run(name, func(t *testing.T) {
			lines := runKyvernoTest(t, dir)
			if len(lines) == 0 {
				t.Fatalf("no mutate result checked in %s", dir)
			}
			policies++
			for _, l := range lines {
				fmt.Fprintf(&report, "%s %s\n", name, l)
			}
		})
	}
	if policies < 15 {
		t.Fatalf("want at least 15 real-world policies, got %d", policies)
	}
	t.Logf("%d real-world policies checked", policies)
	checkGolden(t, "testdata/realworld.golden", report.Bytes())
}

func TestRealWorldSharedCorpus(t *testing.T) {
	// the whole upstream corpus: with GAVEL_SHARED
	sharedCorpus := filepath.Join(testshared.Dir(t, "conformance"), "kyverno-policies")
	var dirs []string
	err := filepath.WalkDir(sharedCorpus, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == ".kyverno-test" {
			dirs = append(dirs, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	checked, policies := 0, 0
	for _, dir := range dirs {
		name := strings.TrimPrefix(filepath.Dir(dir), sharedCorpus+"/")
		t.Run(name, func(t *testing.T) {
			lines := runKyvernoTest(t, dir)
			n := len(lines)
			for _, l := range lines {
				t.Log(l)
			}
			checked += n
			if n > 0 {
				policies++
			}
		})
	}
	t.Logf("shared corpus: %d policies with mutate rules checked, %d resources", policies, checked)
}

type cliTest struct {
	Policies  []string `json:"policies"`
	Resources []string `json:"resources"`
	Results   []struct {
		Policy           string   `json:"policy"`
		Rule             string   `json:"rule"`
		Kind             string   `json:"kind"`
		Resources        []string `json:"resources"`
		Resource         string   `json:"resource"`
		Result           string   `json:"result"`
		Status           string   `json:"status"`
		PatchedResources string   `json:"patchedResources"`
		PatchedResource  string   `json:"patchedResource"`
	} `json:"results"`
}

// expectation gathers, for one resource, the expected patched resource and
// the expected outcome of each rule.
type expectation struct {
	kind, name, namespace string
	patched               string
	outcomes              map[string]string // rule -> pass/skip/...
}

// runKyvernoTest checks every eligible resource of one CLI test and returns
// one report line per resource.
func runKyvernoTest(t *testing.T, dir string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "kyverno-test.yaml"))
	if err != nil {
		t.Skip(err)
	}
	var ct cliTest
	if err := yaml.Unmarshal(raw, &ct); err != nil {
		t.Skipf("bad test file: %v", err)
	}
	var policyDocs []map[string]any
	for _, p := range ct.Policies {
		policyDocs = append(policyDocs, readDocs(t, filepath.Join(dir, p))...)
	}
	var resources []map[string]any
	for _, r := range ct.Resources {
		resources = append(resources, readDocs(t, filepath.Join(dir, r))...)
	}
	exps := map[string]*expectation{}
	var order []string
	for _, res := range ct.Results {
		patched := res.PatchedResources
		if patched == "" {
			patched = res.PatchedResource
		}
		outcome := res.Result
		if outcome == "" {
			outcome = res.Status
		}
		names := res.Resources
		if res.Resource != "" {
			names = append(names, res.Resource)
		}
		for _, n := range names {
			ns, name := "", n
			if i := strings.Index(n, "/"); i >= 0 {
				ns, name = n[:i], n[i+1:]
			}
			key := res.Policy + "|" + res.Kind + "|" + ns + "|" + name
			e := exps[key]
			if e == nil {
				e = &expectation{kind: res.Kind, name: name, namespace: ns, outcomes: map[string]string{}}
				exps[key] = e
				order = append(order, key)
			}
			if patched != "" {
				e.patched = patched
			}
			e.outcomes[res.Rule] = outcome
		}
	}
	var lines []string
	for _, key := range order {
		e := exps[key]
		policyName := strings.SplitN(key, "|", 2)[0]
		policy := findPolicy(policyDocs, policyName)
		if policy == nil {
			continue
		}
		resource := findResource(resources, e.kind, e.name, e.namespace)
		if resource == nil {
			continue
		}
		expected := resource
		if e.patched != "" {
			expected = findResource(readDocs(t, filepath.Join(dir, e.patched)), e.kind, e.name, "")
		} else if !allSkip(e.outcomes) {
			continue
		}
		if expected == nil {
			continue
		}
		line, ok := checkResource(t, policyName, policy, resource, expected, e)
		if ok {
			lines = append(lines, line)
		}
	}
	return lines
}

func allSkip(outcomes map[string]string) bool {
	for _, o := range outcomes {
		if o != "skip" {
			return false
		}
	}
	return true
}

// checkResource applies the mutate rules of the policy to the resource and
// compares with the expectation. It returns false when the case is not
// eligible.
func checkResource(t *testing.T, policyName string, policy, resource, expected map[string]any, e *expectation) (string, bool) {
	t.Helper()
	rules, _ := lookup(policy, "spec", "rules").([]any)
	type step struct {
		rule    string
		patches []any
		json    bool
		check   bool
	}
	var steps []step
	for _, ri := range rules {
		rule, _ := ri.(map[string]any)
		m := mutation(rule)
		if m == nil {
			continue
		}
		name, _ := rule["name"].(string)
		outcome, listed := e.outcomes[name]
		if !matchesKind(rule, e.kind) {
			if listed {
				return "", false // matched through autogen or something else
			}
			continue
		}
		if rule["context"] != nil || m["targets"] != nil {
			return "", false
		}
		if rule["preconditions"] != nil {
			if !listed {
				return "", false // the rule's effect on this resource is unknown
			}
			if outcome != "pass" {
				continue // assume the preconditions did not hold
			}
		}
		if listed && outcome != "pass" && outcome != "skip" {
			return "", false
		}
		key := policyName + "/" + name
		var s step
		s.rule = name
		s.check = listed
		switch {
		case overrides[key] != nil:
			s.patches = overrides[key](t, resource, rule)
		case m["foreach"] != nil:
			return "", false
		case m["patchStrategicMerge"] != nil:
			s.patches = []any{m["patchStrategicMerge"]}
		case m["patchesJson6902"] != nil:
			s.patches = []any{m["patchesJson6902"]}
			s.json = true
		default:
			return "", false
		}
		for _, p := range s.patches {
			if b, _ := yaml.Marshal(p); bytes.Contains(b, []byte("{{")) {
				return "", false
			}
		}
		steps = append(steps, s)
	}
	if len(steps) == 0 {
		return "", false
	}
	current := withNamespace(resource, expected)
	var outcomes []string
	for _, s := range steps {
		changed := false
		for _, p := range s.patches {
			var patcher Patcher
			var err error
			if s.json {
				patcher, err = CompileJSONPatch(p)
			} else {
				patcher, err = CompileStrategicMerge(p)
			}
			if err != nil {
				t.Fatalf("rule %s: compile: %v", s.rule, err)
			}
			r, err := patcher.Mutate(current)
			if err != nil {
				t.Fatalf("rule %s: apply: %v", s.rule, err)
			}
			if !r.Skipped {
				changed = true
			}
			current = r.Object
		}
		got := "skip"
		if changed {
			got = "pass"
		}
		if !s.check {
			continue
		}
		if want := e.outcomes[s.rule]; got != want {
			t.Errorf("%s/%s rule %s: got %s, want %s", e.kind, e.name, s.rule, got, want)
		}
		outcomes = append(outcomes, s.rule+"="+got)
	}
	if !equalTidy(tidy(current), tidy(expected)) {
		g, _ := yaml.Marshal(current)
		w, _ := yaml.Marshal(expected)
		t.Errorf("%s/%s: patched resource differs\n--- got\n%s--- want\n%s", e.kind, e.name, g, w)
	}
	return fmt.Sprintf("%s/%s %s", e.kind, e.name, strings.Join(outcomes, " ")), true
}

// withNamespace gives the resource the namespace of the expected resource
// when it has none, as the CLI defaults it.
func withNamespace(resource, expected map[string]any) map[string]any {
	ns, _ := lookup(expected, "metadata", "namespace").(string)
	if ns == "" || lookup(resource, "metadata", "namespace") != nil {
		return resource
	}
	out := map[string]any{}
	for k, v := range resource {
		out[k] = v
	}
	md := map[string]any{}
	if m, ok := resource["metadata"].(map[string]any); ok {
		for k, v := range m {
			md[k] = v
		}
	}
	md["namespace"] = ns
	out["metadata"] = md
	return out
}

func matchesKind(rule map[string]any, kind string) bool {
	match, _ := rule["match"].(map[string]any)
	if match == nil {
		return false
	}
	var blocks []any
	for _, k := range []string{"any", "all"} {
		if l, ok := match[k].([]any); ok {
			blocks = append(blocks, l...)
		}
	}
	if r, ok := match["resources"]; ok {
		blocks = append(blocks, map[string]any{"resources": r})
	}
	for _, b := range blocks {
		kinds, _ := lookup(b, "resources", "kinds").([]any)
		for _, k := range kinds {
			if k == kind {
				return true
			}
		}
	}
	return false
}

func findPolicy(docs []map[string]any, name string) map[string]any {
	for _, d := range docs {
		if n, _ := lookup(d, "metadata", "name").(string); n == name {
			return d
		}
	}
	return nil
}

func findResource(docs []map[string]any, kind, name, ns string) map[string]any {
	for _, d := range docs {
		k, _ := d["kind"].(string)
		n, _ := lookup(d, "metadata", "name").(string)
		dns, _ := lookup(d, "metadata", "namespace").(string)
		if k == kind && n == name && (ns == "" || dns == "" || dns == ns) {
			return d
		}
	}
	return nil
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

func readDocs(t *testing.T, file string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var out []map[string]any
	for _, doc := range docSeparator.Split(string(raw), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil || m == nil {
			continue
		}
		out = append(out, m)
	}
	return out
}

// tidy removes nulls, empty maps and empty lists, as the CLI does before
// comparing resources.
func tidy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, e := range t {
			if e = tidy(e); e != nil {
				m[k] = e
			}
		}
		if len(m) == 0 {
			return nil
		}
		return m
	case []any:
		var l []any
		for _, e := range t {
			if e = tidy(e); e != nil {
				l = append(l, e)
			}
		}
		if len(l) == 0 {
			return nil
		}
		return l
	}
	return v
}

func equalTidy(a, b any) bool {
	switch at := a.(type) {
	case map[string]any:
		bt, ok := b.(map[string]any)
		if !ok || len(at) != len(bt) {
			return false
		}
		keys := make([]string, 0, len(at))
		for k := range at {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !equalTidy(at[k], bt[k]) {
				return false
			}
		}
		return true
	case []any:
		bt, ok := b.([]any)
		if !ok || len(at) != len(bt) {
			return false
		}
		for i := range at {
			if !equalTidy(at[i], bt[i]) {
				return false
			}
		}
		return true
	case float64:
		switch bt := b.(type) {
		case float64:
			return at == bt || (math.IsNaN(at) && math.IsNaN(bt))
		}
	}
	return equalScalars(a, b)
}
