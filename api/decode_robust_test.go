package api_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gavelpolicy/gavel/api"
)

// readAll reads a stream and decodes every policy and exception in it.
func readAll(src string) ([]api.Document, error) {
	docs, err := api.ReadDocuments(strings.NewReader(src), "bad.yaml")
	if err != nil {
		return docs, err
	}
	var errs []error
	for _, d := range docs {
		if _, err := api.DecodeObject(d); err != nil {
			errs = append(errs, err)
		}
	}
	return docs, errors.Join(errs...)
}

const goodPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: p
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      pattern: {}
`

// TestReadBadInput: every malformed input is an error that names the
// source, the document and, when known, the object and the field path.
func TestReadBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want []string
	}{
		{"malformed YAML", "a: [\n", []string{"bad.yaml[0]", "yaml"}},
		{"malformed second document", goodPolicy + "---\nkey: : x\n", []string{"bad.yaml[1]", "yaml"}},
		{"bad separator", goodPolicy + "--- x\n", []string{"bad.yaml", "invalid Yaml document separator"}},
		{"malformed JSON", `{"a": }`, []string{"bad.yaml[0]", "invalid character"}},
		{"trailing JSON", `{"a": 1} {"b": 2}`, []string{"bad.yaml[0]"}},
		{"scalar document", "just text\n", []string{"bad.yaml[0]", "document is a string, not an object"}},
		{"list document", "- a\n", []string{"bad.yaml[0]", "not an object"}},
		{"list item not an object", "kind: List\nitems: [1]\n", []string{"bad.yaml[0]", "list item is not an object"}},
		{"duplicate YAML key", "apiVersion: v1\nkind: Pod\nkind: ConfigMap\n", []string{"bad.yaml[0]", `"kind" already set`}},
		{"duplicate nested YAML key", strings.Replace(goodPolicy, "    validate:\n", "    validate:\n      pattern: {a: b}\n", 1), []string{"bad.yaml[0]", `"pattern" already set`}},
		{"duplicate JSON key", `{"apiVersion":"v1","spec":{"a":[{"x":1,"x":2}]}}`, []string{"bad.yaml[0]", `duplicate key "x" at spec.a[0].x`}},
		{"billion laughs", "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n",
			[]string{"bad.yaml[0]", "excessive aliasing"}},
		{"deep YAML", "a: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n", []string{"bad.yaml[0]", "depth"}},
		{"deep JSON", `{"a": ` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "}", []string{"bad.yaml[0]", "depth"}},
		{"unknown field", strings.Replace(goodPolicy, "pattern: {}", "patern: {}", 1),
			[]string{"bad.yaml[0] ClusterPolicy/p: spec.rules[0].validate.patern", `unknown field "patern"`}},
		{"unknown top-level field", goodPolicy + "extra: 1\n", []string{"ClusterPolicy/p: extra", "unknown field"}},
		{"unknown metadata field", strings.Replace(goodPolicy, "  name: p\n", "  name: p\n  nam: q\n", 1), []string{"ClusterPolicy/p: metadata.nam", "unknown field"}},
		{"wrong type in a list", strings.Replace(goodPolicy, "kinds: [Pod]", "kinds: [[Pod]]", 1),
			[]string{"ClusterPolicy/p: spec.rules[0].match.any[0].resources.kinds[0]", "cannot use a array as string"}},
		{"wrong type for rules", strings.Replace(goodPolicy, "  rules:\n", "  rules: 5\n  x:\n", 1), []string{"ClusterPolicy/p"}},
		{"wrong type for a bool", strings.Replace(goodPolicy, "spec:\n", "spec:\n  background: \"no\"\n", 1),
			[]string{"ClusterPolicy/p: spec.background", "cannot use a string as bool"}},
		{"wrong type in the second rule", strings.Replace(goodPolicy, "  rules:\n", "  rules:\n  - name: first\n    match: {}\n    validate: {pattern: {}}\n", 1) + "  - name: third\n    match: {any: [{resources: {kinds: Pod}}]}\n    validate: {pattern: {}}\n",
			[]string{"ClusterPolicy/p: spec.rules[2].match.any[0].resources.kinds", "cannot use a string as []string"}},
		{"unsupported policy version", strings.Replace(goodPolicy, "kyverno.io/v1", "kyverno.io/v3", 1), []string{"bad.yaml[0] ClusterPolicy/p", `unsupported apiVersion "kyverno.io/v3"`}},
		{"unsupported exception version", "apiVersion: kyverno.io/v1\nkind: PolicyException\nmetadata:\n  name: x\nspec: {}\n", []string{"bad.yaml[0] PolicyException/x", "unsupported apiVersion"}},
		{"exception unknown field", "apiVersion: kyverno.io/v2\nkind: PolicyException\nmetadata:\n  name: x\nspec:\n  exceptions:\n  - policyName: p\n    ruleName: [r]\n  match: {}\n",
			[]string{"bad.yaml[0] PolicyException/x: spec.exceptions[0].ruleName", "unknown field"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readAll(tc.src)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestReadLongLastLine: a last line without a newline whose length is a
// multiple of the reader's buffer used to be dropped silently (truncating
// the document); it must be read like any other line.
func TestReadLongLastLine(t *testing.T) {
	for _, n := range []int{65536 - 100, 65536, 2 * 65536, 3*65536 + 1} {
		head := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  z: "
		src := head + strings.Repeat("b", n-len("  z: "))
		docs, err := api.ReadDocuments(strings.NewReader(src), "big.yaml")
		if err != nil || len(docs) != 1 {
			t.Fatalf("n=%d: %d documents, %v", n, len(docs), err)
		}
		data, _ := docs[0].Object["data"].(map[string]any)
		if z, _ := data["z"].(string); len(z) != n-len("  z: ") {
			t.Errorf("n=%d: last line lost (data = %.20v)", n, docs[0].Object["data"])
		}
		if _, err := api.ReadDocuments(strings.NewReader(strings.Repeat("a", n)), "big.yaml"); err == nil {
			t.Errorf("n=%d: a scalar document was accepted", n)
		}
	}
}

// TestReadLargeInputIsBounded: large and adversarial inputs are decoded or
// refused in bounded time.
func TestReadLargeInputIsBounded(t *testing.T) {
	for name, src := range map[string]string{
		"many documents": strings.Repeat("a: 1\n---\n", 20000),
		"long key":       strings.Repeat("k", 1<<20) + ": v\n",
		"many keys":      manyKeys(100000),
		"wide list":      "a: [" + strings.Repeat("1,", 200000) + "1]\n",
		"aliases":        "a: &a {x: 1}\nb: [" + strings.TrimSuffix(strings.Repeat("*a,", 5000), ",") + "]\n",
	} {
		start := time.Now()
		_, _ = api.ReadDocuments(strings.NewReader(src), "big.yaml")
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s took %v", name, d)
		}
	}
}

// TestDecodeDoesNotModify: decoding leaves the document as it was.
func TestDecodeDoesNotModify(t *testing.T) {
	docs, err := api.ReadDocuments(strings.NewReader(strings.Replace(goodPolicy, "kind: ClusterPolicy", "kind: Policy", 1)), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := api.DecodePolicy(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	if p.GetNamespace() != "default" {
		t.Errorf("namespace = %q", p.GetNamespace())
	}
	if _, ok := docs[0].Object["metadata"].(map[string]any)["namespace"]; ok {
		t.Errorf("DecodePolicy wrote into the document")
	}
}

// manyKeys is a JSON object with n distinct keys.
func manyKeys(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:%d", fmt.Sprintf("k%d", i), i)
	}
	b.WriteString("}")
	return b.String()
}
