// Package loader reads policies, PolicyExceptions and resources from files,
// folders and readers. It is a host-side helper (it touches the file
// system); the engine itself never does.
package loader

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/gavelpolicy/gavel/api"
)

// Set is what was read: policies, exceptions and every other document.
type Set struct {
	// Policies are the policies of every kind (see api.DecodePolicy),
	// bindings of admission policies included.
	Policies   []api.PolicyObject
	Exceptions []*api.PolicyException
	// CELExceptions are the policies.kyverno.io PolicyExceptions.
	CELExceptions []*api.CELPolicyException
	// Resources are the documents that are neither policies nor exceptions.
	Resources []api.Document
}

// add decodes one document into the set. A document of a policy group
// whose kind gavel does not know is an *api.UnknownKindError (see
// api.DecodeObject).
func (s *Set) add(d api.Document) error {
	obj, err := api.DecodeObject(d)
	if err != nil {
		return err
	}
	switch o := obj.(type) { // the exceptions first: they have a PolicyObject's methods too
	case *api.PolicyException:
		s.Exceptions = append(s.Exceptions, o)
	case *api.CELPolicyException:
		s.CELExceptions = append(s.CELExceptions, o)
	case api.PolicyObject:
		s.Policies = append(s.Policies, o)
	default:
		s.Resources = append(s.Resources, d)
	}
	return nil
}

// Read decodes every document of a stream into the set.
func (s *Set) Read(r io.Reader, source string) error {
	docs, err := api.ReadDocuments(r, source)
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range docs {
		if err := s.add(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// isManifest reports whether a file name looks like YAML or JSON.
func isManifest(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// Files lists the manifest files under the paths: a file is taken as is, a
// folder is walked recursively in lexical order. "-" means standard input.
func Files(paths ...string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if p == "-" {
			out = append(out, p)
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && isManifest(d.Name()) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	return out, nil
}

// Load reads every manifest under the paths. Files are read and decoded
// in parallel; the set lists their documents in file order.
func Load(paths ...string) (*Set, error) {
	files, err := Files(paths...)
	if err != nil {
		return nil, err
	}
	parts := make([]Set, len(files))
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	slots := make(chan struct{}, runtime.GOMAXPROCS(0)) // at most that many at a time
	for i := range files {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			errs[i] = parts[i].readFile(files[i])
		})
	}
	wg.Wait() // the errors are kept by file, in order
	s := &Set{}
	for i := range parts {
		s.Policies = append(s.Policies, parts[i].Policies...)
		s.Exceptions = append(s.Exceptions, parts[i].Exceptions...)
		s.CELExceptions = append(s.CELExceptions, parts[i].CELExceptions...)
		s.Resources = append(s.Resources, parts[i].Resources...)
	}
	return s, errors.Join(errs...)
}

// readFile reads one file ("-" for standard input) into the set.
func (s *Set) readFile(name string) error {
	if name == "-" {
		return s.Read(os.Stdin, "<stdin>")
	}
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := s.Read(f, name); err != nil {
		return fmt.Errorf("%w", err)
	}
	return nil
}
