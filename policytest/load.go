package policytest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
)

// DefaultFileName is the test file name Discover looks for.
const DefaultFileName = "kyverno-test.yaml"

// Discover returns the test files under the paths: files named name
// (kyverno-test.yaml by default), found recursively, hidden folders
// included, in lexical order. A path that is a file is taken as is.
func Discover(name string, paths ...string) ([]string, error) {
	if name == "" {
		name = DefaultFileName
	}
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && d.Name() == name {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

// Load reads a test file (its first test, see LoadAll).
func Load(path string) (*Test, error) {
	tests, err := LoadAll(path)
	if err != nil {
		return nil, err
	}
	return tests[0], nil
}

// LoadAll reads the tests of a test file: one per YAML document (upstream
// reads several, separated by "---"), at least one.
func LoadAll(path string) ([]*Test, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tests []*Test
	dr := api.NewDocumentReader(bytes.NewReader(raw), path)
	for {
		doc, err := dr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(bytes.TrimSpace(doc.Bytes)) == 0 {
			continue
		}
		var t Test
		if err := yaml.Unmarshal(doc.Bytes, &t); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if t.APIVersion == "" && t.Kind == "" && t.TestName() == "" && len(t.Policies) == 0 && len(t.Results) == 0 {
			continue // only comments
		}
		t.Path = path
		tests = append(tests, &t)
	}
	if len(tests) == 0 {
		tests = append(tests, &Test{Path: path})
	}
	return tests, nil
}

func readYAML(path string, out any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
