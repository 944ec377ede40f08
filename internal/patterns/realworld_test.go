package patterns

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/internal/testshared"
)

// This file runs validate.pattern and validate.anyPattern rules of policies
// from the upstream policy library against the resources of their Kyverno CLI
// tests (kyverno-test.yaml), and compares the outcome with the expected
// result. Only rules decided by the pattern alone are used: no variables,
// preconditions, context, exclude, foreach or deny, and matching by kind only.
// Rules written for Pods are expanded for Pod controllers the way Kyverno's
// autogen does (spec.template, and spec.jobTemplate.spec.template for CronJobs).
//
// testdata/realworld holds a copy of some of those tests. With the shared
// conformance corpus (GAVEL_SHARED), the whole corpus is run too.

func TestRealWorld(t *testing.T) {
	dirs, err := filepath.Glob("testdata/realworld/*/.kyverno-test")
	if err != nil || len(dirs) < 20 {
		t.Fatalf("want at least 20 real-world cases, found %d (%v)", len(dirs), err)
	}
	var report bytes.Buffer
	total := 0
	for _, dir := range dirs {
		name := filepath.Base(filepath.Dir(dir))
		t.Run(name, func(t *testing.T) {
			outcomes := runKyvernoTest(t, dir)
			if len(outcomes) == 0 {
				t.Fatalf("no pattern rule result in %s", dir)
			}
			total += len(outcomes)
			for _, o := range outcomes {
				fmt.Fprintf(&report, "%s %s\n", name, o)
			}
		})
	}
	t.Logf("%d real-world cases, %d results", len(dirs), total)
	checkGolden(t, "testdata/realworld.golden", report.Bytes())
}

func TestRealWorldSharedCorpus(t *testing.T) {
	// the whole upstream corpus: with GAVEL_SHARED
	sharedCorpus := filepath.Join(testshared.Dir(t, "conformance"), "kyverno-policies")
	var dirs []string
	err := filepath.WalkDir(sharedCorpus, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == ".kyverno-test" {
			dirs = append(dirs, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	results, policies := 0, 0
	for _, dir := range dirs {
		name := strings.TrimPrefix(filepath.Dir(dir), sharedCorpus+"/")
		t.Run(name, func(t *testing.T) {
			n := len(runKyvernoTest(t, dir))
			results += n
			if n > 0 {
				policies++
			}
		})
	}
	t.Logf("shared corpus: %d policies with pattern rules, %d results checked", policies, results)
}

type kyvernoTest struct {
	Policies  []string `json:"policies"`
	Resources []string `json:"resources"`
	Results   []struct {
		Policy    string   `json:"policy"`
		Rule      string   `json:"rule"`
		Kind      string   `json:"kind"`
		Resource  string   `json:"resource"`
		Resources []string `json:"resources"`
		Result    string   `json:"result"`
	} `json:"results"`
}

// patternRule is a validate rule decided by its pattern(s) alone.
type patternRule struct {
	kinds       []string
	controllers []string // Pod controllers autogen applies to
	pattern     any
	anyPattern  []any
}

// runKyvernoTest checks every expected result of a pattern rule in the test
// directory and returns one line per result checked.
func runKyvernoTest(t *testing.T, dir string) []string {
	t.Helper()
	var test kyvernoTest
	if _, err := os.Stat(filepath.Join(dir, "kyverno-test.yaml")); err != nil {
		return nil
	}
	readYAML(t, filepath.Join(dir, "kyverno-test.yaml"), &test)
	rules := map[[2]string]*patternRule{}
	for _, p := range test.Policies {
		for _, doc := range readDocs(t, filepath.Join(dir, p)) {
			collectRules(doc, rules)
		}
	}
	resources := map[[2]string]map[string]any{}
	for _, r := range test.Resources {
		for _, doc := range readDocs(t, filepath.Join(dir, r)) {
			indexResource(doc, resources)
		}
	}
	var outcomes []string
	for _, res := range test.Results {
		rule := rules[[2]string{res.Policy, res.Rule}]
		if rule == nil {
			continue
		}
		names := res.Resources
		if res.Resource != "" {
			names = append(names, res.Resource)
		}
		for _, name := range names {
			// Names may be written namespace/name.
			obj := resources[[2]string{res.Kind, name[strings.LastIndex(name, "/")+1:]}]
			if obj == nil {
				t.Errorf("%s/%s: resource %s %s not found", res.Policy, res.Rule, res.Kind, name)
				continue
			}
			patterns, ok := rule.forKind(res.Kind)
			if !ok {
				continue
			}
			got, msg := evaluate(t, patterns, rule.anyPattern != nil, obj)
			if got != res.Result {
				t.Errorf("%s/%s %s %s: got %s (%s), want %s", res.Policy, res.Rule, res.Kind, name, got, msg, res.Result)
			}
			outcomes = append(outcomes, strings.TrimSpace(fmt.Sprintf("%s/%s %s/%s: %s %s", res.Policy, res.Rule, res.Kind, name, got, msg)))
		}
	}
	sort.Strings(outcomes)
	return outcomes
}

func collectRules(policy map[string]any, rules map[[2]string]*patternRule) {
	meta, _ := policy["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	autogen := "Deployment,DaemonSet,StatefulSet,Job,CronJob,ReplicaSet,ReplicationController"
	if ann, ok := meta["annotations"].(map[string]any); ok {
		if v, ok := ann["pod-policies.kyverno.io/autogen-controllers"].(string); ok {
			autogen = v
		}
	}
	spec, _ := policy["spec"].(map[string]any)
	list, _ := spec["rules"].([]any)
	for _, x := range list {
		r, _ := x.(map[string]any)
		v, _ := r["validate"].(map[string]any)
		if v == nil || (v["pattern"] == nil && v["anyPattern"] == nil) {
			continue
		}
		if r["preconditions"] != nil || r["context"] != nil || r["exclude"] != nil ||
			v["foreach"] != nil || v["deny"] != nil || v["podSecurity"] != nil || v["cel"] != nil {
			continue
		}
		raw, _ := json.Marshal(r)
		if bytes.Contains(raw, []byte("{{")) || bytes.Contains(raw, []byte("$(")) {
			continue
		}
		kinds, ok := matchKinds(r["match"])
		if !ok || len(kinds) == 0 {
			continue
		}
		pr := &patternRule{kinds: kinds, pattern: v["pattern"]}
		if ap, ok := v["anyPattern"].([]any); ok {
			pr.anyPattern = ap
		}
		if slices.Equal(kinds, []string{"Pod"}) && autogen != "none" {
			pr.controllers = strings.Split(autogen, ",")
		}
		rules[[2]string{name, r["name"].(string)}] = pr
	}
}

// matchKinds returns the kinds of a match block that selects by kind only.
func matchKinds(match any) ([]string, bool) {
	m, _ := match.(map[string]any)
	var blocks []any
	for _, k := range []string{"any", "all"} {
		if l, ok := m[k].([]any); ok {
			blocks = append(blocks, l...)
		}
	}
	if r, ok := m["resources"]; ok {
		blocks = append(blocks, map[string]any{"resources": r})
	}
	var kinds []string
	for _, b := range blocks {
		bm, _ := b.(map[string]any)
		res, _ := bm["resources"].(map[string]any)
		if len(bm) != 1 || len(res) != 1 || res["kinds"] == nil {
			return nil, false
		}
		for _, k := range res["kinds"].([]any) {
			kinds = append(kinds, k.(string))
		}
	}
	return kinds, true
}

// forKind returns the pattern(s) the rule applies to a resource of kind.
func (r *patternRule) forKind(kind string) ([]any, bool) {
	ps := r.anyPattern
	if ps == nil {
		ps = []any{r.pattern}
	}
	if slices.Contains(r.kinds, kind) {
		return ps, true
	}
	if !slices.Contains(r.controllers, kind) {
		return nil, false
	}
	out := make([]any, len(ps))
	for i, p := range ps {
		wrapped := map[string]any{"spec": map[string]any{"template": p}}
		if kind == "CronJob" {
			wrapped = map[string]any{"spec": map[string]any{"jobTemplate": wrapped}}
		}
		out[i] = wrapped
	}
	return out, true
}

// evaluate returns Kyverno's rule status for a pattern or an anyPattern.
func evaluate(t *testing.T, patterns []any, any bool, obj map[string]any) (string, string) {
	t.Helper()
	var fails, skips []string
	for _, raw := range patterns {
		p, err := Compile(raw)
		if err != nil {
			t.Fatalf("compile: %v", err)
		}
		err = p.Match(obj)
		if err == nil {
			return "pass", ""
		}
		pe := err.(*Error)
		if !any {
			return string(pe.Status()), pe.Path + " " + pe.Error()
		}
		if pe.Skip {
			skips = append(skips, pe.Error())
		} else {
			fails = append(fails, pe.Path+" "+pe.Error())
		}
	}
	if len(fails) == 0 && len(skips) > 0 {
		return "skip", strings.Join(skips, " | ")
	}
	return "fail", strings.Join(fails, " | ")
}

func indexResource(doc map[string]any, index map[[2]string]map[string]any) {
	kind, _ := doc["kind"].(string)
	if items, ok := doc["items"].([]any); ok && strings.HasSuffix(kind, "List") {
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				indexResource(m, index)
			}
		}
		return
	}
	meta, _ := doc["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	index[[2]string{kind, name}] = doc
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// readDocs reads the documents of a multi-document YAML file.
func readDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var docs []map[string]any
	for _, part := range splitYAML(data) {
		var doc map[string]any
		if err := yaml.Unmarshal(part, &doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
	return docs
}

func splitYAML(data []byte) [][]byte {
	var parts [][]byte
	var cur []byte
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if bytes.Equal(bytes.TrimRight(line, " \r\n"), []byte("---")) {
			parts = append(parts, cur)
			cur = nil
			continue
		}
		cur = append(cur, line...)
	}
	return append(parts, cur)
}
