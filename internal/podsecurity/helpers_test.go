package podsecurity

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"sigs.k8s.io/yaml"
)

// testEvaluator is shared by the tests, as an embedder would share it.
var testEvaluator = func() *Evaluator {
	ev, err := NewEvaluator()
	if err != nil {
		panic(err)
	}
	return ev
}()

// splitYAML splits a multi-document YAML stream on "---" lines.
func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	flush := func() {
		if strings.TrimSpace(cur.String()) != "" {
			docs = append(docs, append([]byte(nil), cur.Bytes()...))
		}
		cur.Reset()
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimRight(line, " ") == "---" {
			flush()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	flush()
	return docs
}

// mustObjects decodes every document of a YAML stream into a JSON-like tree.
func mustObjects(t testing.TB, data []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, doc := range splitYAML(data) {
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatalf("decode yaml: %v\n%s", err, doc)
		}
		if obj != nil {
			out = append(out, obj)
		}
	}
	return out
}

func mustObject(t testing.TB, doc string) map[string]any {
	t.Helper()
	objs := mustObjects(t, []byte(doc))
	if len(objs) != 1 {
		t.Fatalf("want one document, got %d", len(objs))
	}
	return objs[0]
}

func mustReadObjects(t testing.TB, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return mustObjects(t, data)
}

// mustPodSecurity decodes a podSecurity block written in YAML.
func mustPodSecurity(t testing.TB, doc string) api.PodSecurity {
	t.Helper()
	var ps api.PodSecurity
	if err := yaml.UnmarshalStrict([]byte(doc), &ps); err != nil {
		t.Fatalf("decode podSecurity: %v", err)
	}
	return ps
}

// mustExcludes decodes a list of podSecurity exemptions written in YAML.
func mustExcludes(t testing.TB, doc string) []api.PodSecurityStandard {
	t.Helper()
	var out []api.PodSecurityStandard
	if err := yaml.UnmarshalStrict([]byte(doc), &out); err != nil {
		t.Fatalf("decode exemptions: %v", err)
	}
	return out
}

func mustCompile(t testing.TB, ps api.PodSecurity, rule string) *Check {
	t.Helper()
	chk, err := testEvaluator.Compile(ps, WithRuleName(rule))
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return chk
}

func mustEvaluate(t testing.TB, chk *Check, obj map[string]any, extra []api.PodSecurityStandard) Result {
	t.Helper()
	res, err := chk.Evaluate(obj, extra)
	if err != nil {
		t.Fatalf("evaluate: %v", err)
	}
	return res
}

// status is the policy report status upstream gives the result.
func (r Result) status() string {
	switch {
	case r.Exempted:
		return "skip"
	case r.Allowed:
		return "pass"
	}
	return "fail"
}

// excludesOrNil decodes exemptions, or returns nil for an empty document.
func excludesOrNil(t testing.TB, doc string) []api.PodSecurityStandard {
	t.Helper()
	if strings.TrimSpace(doc) == "" {
		return nil
	}
	return mustExcludes(t, doc)
}

// nested reads a value at a path of objects (test helper).
func nested(obj map[string]any, path []string) (any, bool, error) {
	var cur any = obj
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		if cur, ok = m[k]; !ok {
			return nil, false, nil
		}
	}
	return cur, true, nil
}
