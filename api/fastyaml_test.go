package api

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/internal/testshared"
)

// slowDecode is decodeOne without the fast path: the reference.
func slowDecode(raw []byte) (map[string]any, error) {
	js, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return nil, err
	}
	var v any
	if err := yaml.Unmarshal(js, &v); err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not an object")
	}
	return m, nil
}

// checkFast compares the fast decoder with the general path on one
// document: when it decodes, it must give what the general path gives,
// and it must not accept what the general path rejects.
func checkFast(t *testing.T, what string, raw []byte) bool {
	t.Helper()
	got, ok := decodeFast(raw)
	if !ok {
		return false
	}
	want, err := slowDecode(raw)
	if err != nil {
		t.Fatalf("%s: the fast decoder accepted a document the general path rejects (%v):\n%s", what, err, raw)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: fast %v\n general %v\n%s", what, got, want, raw)
	}
	return true
}

func splitDocs(t *testing.T, data []byte) [][]byte {
	r := utilyaml.NewYAMLReader(bufio.NewReader(io.MultiReader(bytes.NewReader(data), strings.NewReader("\n"))))
	var out [][]byte
	for {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			return out
		}
		out = append(out, raw)
	}
}

// TestDecodeFastCorpus runs the comparison on every YAML file of the
// repository and, with GAVEL_SHARED, of the shared corpus.
func TestDecodeFastCorpus(t *testing.T) {
	var files []string
	roots := []string{".."}
	if dir, ok := testshared.Optional(t, "."); ok {
		roots = append(roots, dir)
	}
	for _, root := range roots {
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml") {
				files = append(files, path)
			}
			return nil
		})
	}
	if testing.Short() && len(files) > 300 {
		files = files[:300]
	}
	fast, total := 0, 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for i, raw := range splitDocs(t, data) {
			if len(bytes.TrimSpace(raw)) == 0 || bytes.TrimSpace(raw)[0] == '{' {
				continue
			}
			total++
			if checkFast(t, fmt.Sprintf("%s[%d]", f, i), raw) {
				fast++
			}
		}
	}
	t.Logf("%d of %d documents decoded by the fast path", fast, total)
}

// TestDecodeFastMutations edits corpus-like documents at random (indentation,
// quotes, indicators, comments, numbers) and compares again.
func TestDecodeFastMutations(t *testing.T) {
	base := `apiVersion: v1
kind: Pod
metadata:
  name: "pod-1"
  labels:
    app.kubernetes.io/name: 'web'
    tier: on
  annotations:
    note: a value # with a comment
spec:
  containers:
    - name: c0
      image: nginx:1.2
      ports:
        - containerPort: 8080
          protocol: TCP
      args: []
      env: []
      securityContext: {}
    - name: c1
  volumes:
  - name: v
    emptyDir: {}
  x: -1.50
  yy: 0
  z: ~
  "quoted key": "with \"escapes\" \u00e9 \n"
  list:
  - - a
    - b
  -
  - null
`
	frags := []string{" ", "  ", "-", "- ", ":", ": ", "#", " #", "'", `"`, "\\", "{", "}", "[", "]", "\n", "\n  ", "\n- ", "0", "01", "1.5", "-0", "yes", "~", "&a", "*a", "!t", "|", ">", "x", "key: v", "\t", "é", "+(", "<<"}
	r := rand.New(rand.NewSource(11))
	n := 10000
	if testing.Short() {
		n = 2000
	}
	accepted := 0
	for i := 0; i < n; i++ {
		doc := []byte(base)
		for j := r.Intn(4); j >= 0; j-- {
			pos := r.Intn(len(doc))
			switch r.Intn(3) {
			case 0: // insert
				f := frags[r.Intn(len(frags))]
				doc = append(doc[:pos:pos], append([]byte(f), doc[pos:]...)...)
			case 1: // delete a few bytes
				end := min(len(doc), pos+1+r.Intn(3))
				doc = append(doc[:pos:pos], doc[end:]...)
			default: // replace a byte
				f := frags[r.Intn(len(frags))]
				doc = append(doc[:pos:pos], append([]byte(f), doc[min(len(doc), pos+1):]...)...)
			}
		}
		if checkFast(t, fmt.Sprintf("mutation %d", i), doc) {
			accepted++
		}
	}
	t.Logf("%d of %d mutated documents decoded by the fast path", accepted, n)
}

// FuzzDecodeFast compares the fast decoder with the general path on
// arbitrary documents.
func FuzzDecodeFast(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: c\n    image: nginx\n    ports: []\n"))
	f.Add([]byte("a:\n- - b\n  - 'c'\n-\nd: \"e\\n\" # x\n"))
	f.Add([]byte("x: -0\ny: 1.50\nz: ~\nw: on\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkFast(t, "fuzz", doc)
	})
}
