package api

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gavelpolicy/gavel/internal/testshared"
)

// splitReference splits as apimachinery's YAMLReader, the reference
// (documents as returned, empty ones included).
func splitReference(data []byte) ([]string, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReaderSize(bytes.NewReader(data), 64<<10))
	var out []string
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, string(doc))
	}
}

// splitOurs splits with DocumentReader.split.
func splitOurs(data []byte) ([]string, error) {
	dr := NewDocumentReader(bytes.NewReader(data), "s")
	var out []string
	for {
		doc, err := dr.split()
		if err != nil && !errors.Is(err, io.EOF) {
			return out, err
		}
		if len(doc) > 0 {
			out = append(out, string(doc))
		}
		if err != nil {
			return out, nil
		}
	}
}

func compareSplit(t *testing.T, name string, data []byte) {
	t.Helper()
	want, werr := splitReference(data)
	got, gerr := splitOurs(data)
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("%s: error %v, want %v", name, gerr, werr)
	}
	if werr != nil {
		return // the reference's documents before the error are not used
	}
	if strings.Join(got, "\x00|") != strings.Join(want, "\x00|") {
		t.Fatalf("%s: documents\n%q\nwant\n%q", name, got, want)
	}
}

// TestSplitMatchesYAMLReader compares the splitter with apimachinery's on
// every manifest of the repository and (with GAVEL_SHARED) the shared
// corpus, and on the
// corner cases of separators and line ends.
func TestSplitMatchesYAMLReader(t *testing.T) {
	cases := map[string]string{
		"empty":              "",
		"one":                "a: 1\n",
		"no final newline":   "a: 1\n---\nb: 2",
		"leading separator":  "---\na: 1\n---\nb: 2\n",
		"separators only":    "---\n---\n---\n",
		"comment separator":  "a: 1\n--- # next\nb: 2\n",
		"spaces separator":   "a: 1\n---   \nb: 2\n",
		"bad separator":      "a: 1\n--- b: 2\n",
		"four dashes":        "a: 1\n----\nb: 2\n",
		"crlf":               "a: 1\r\n---\r\nb: |\r\n  x\r\n",
		"lone cr":            "a: 1\rb\n",
		"cr at end":          "a: 1\r",
		"indented dashes":    "a:\n  ---\nb: 1\n",
		"dashes in value":    "a: ---\n",
		"separator at end":   "a: 1\n---",
		"keep chomping":      "a: |+\n  x\n\n",
		"long line":          "a: " + strings.Repeat("x", 200<<10) + "\n---\nb: 1\n",
		"long line crlf":     "a: " + strings.Repeat("y", 64<<10-5) + "\r\n---\r\n",
		"json":               "{\"a\": 1}\n",
		"blank lines":        "\n\n\na: 1\n\n\n",
		"separator then eof": "a: 1\n---\n",
	}
	for name, text := range cases {
		compareSplit(t, name, []byte(text))
	}
	n := 0
	roots := []string{".."}
	if dir, ok := testshared.Optional(t, "."); ok {
		roots = append(roots, dir)
	}
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			compareSplit(t, path, data)
			n++
			return nil
		})
	}
	t.Logf("%d files", n)
}

// FuzzSplit compares the splitter with apimachinery's on any input.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"a: 1\n---\nb: 2", "---\n---\n", "a\r\n--- #x\r\nb", "x\n--- y\n", "\r\r\n---\r"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		compareSplit(t, "fuzz", data)
	})
}
