package policytest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"sigs.k8s.io/yaml"
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

// Load reads a test file.
func Load(path string) (*Test, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var t Test
	if err := yaml.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t.Path = path
	return &t, nil
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
