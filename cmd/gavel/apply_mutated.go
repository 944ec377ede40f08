package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/engine"
)

// mutatedWriter writes the mutated and generated resources of a run as the
// upstream CLI's -o/--output and -i/--stdin do: to a file (every document
// followed by "---"), to a folder (RESOURCE-mutated.yaml per mutated
// resource, POLICY-generated.yaml per generating policy), or to standard
// output (-i). A resource is written when a mutate rule passed on it, once,
// as it is after every mutation, followed by the targets its
// mutate-existing rules patched. A nil *mutatedWriter writes nothing.
type mutatedWriter struct {
	dir    string    // folder mode
	file   *os.File  // file mode
	stdout io.Writer // -i without -o
	// opened are the files of the folder this run wrote, truncated the
	// first time
	opened map[string]*os.File
	err    error
}

// mutatedDoc is one rendered document and the file of the folder it goes
// to.
type mutatedDoc struct {
	name string
	yaml []byte
}

// newMutatedWriter opens the destination of -o, or standard output for -i;
// nil when neither is given. A path ending in a slash or naming an
// existing folder is a folder (created when missing); any other is a file,
// created or truncated.
func newMutatedWriter(f applyFlags, stdout io.Writer) (*mutatedWriter, error) {
	switch {
	case f.output == "" && f.stdin:
		return &mutatedWriter{stdout: stdout}, nil
	case f.output == "":
		return nil, nil
	}
	info, err := os.Stat(f.output)
	if strings.HasSuffix(f.output, "/") || strings.HasSuffix(f.output, string(os.PathSeparator)) || (err == nil && info.IsDir()) {
		if err := os.MkdirAll(f.output, 0o755); err != nil {
			return nil, fmt.Errorf("failed to create folder %s: %w", f.output, err)
		}
		return &mutatedWriter{dir: filepath.Clean(f.output), opened: map[string]*os.File{}}, nil
	}
	if dir := filepath.Dir(f.output); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("failed to create folder %s: %w", dir, err)
		}
	}
	file, err := os.Create(f.output)
	if err != nil {
		return nil, fmt.Errorf("failed to create file %s: %w", f.output, err)
	}
	return &mutatedWriter{file: file}, nil
}

// render renders the documents of one resource's results: it runs on the
// worker that evaluated the resource, before the results are dropped.
func (w *mutatedWriter) render(rr *resourceResult) ([]mutatedDoc, error) {
	if w == nil || rr.err != nil {
		return nil, nil
	}
	var docs []mutatedDoc
	mutated := false
	var targets, generated []mutatedDoc
	for _, pr := range rr.policies {
		for _, r := range pr.Rules {
			switch {
			case r.Type == engine.Mutation && r.Status == engine.StatusPass:
				mutated = true
				for _, t := range r.PatchedTargets {
					b, err := yaml.Marshal(t)
					if err != nil {
						return nil, err
					}
					targets = append(targets, mutatedDoc{yaml: b})
				}
			case r.Type == engine.Generation && r.Status == engine.StatusPass:
				for _, g := range r.GeneratedResources {
					b, err := yaml.Marshal(g)
					if err != nil {
						return nil, err
					}
					generated = append(generated, mutatedDoc{name: pr.Policy.Name() + "-generated", yaml: b})
				}
			}
		}
	}
	if mutated {
		b, err := yaml.Marshal(rr.resource)
		if err != nil {
			return nil, err
		}
		name := nameOf(rr.resource) + "-mutated"
		docs = append(docs, mutatedDoc{name: name, yaml: b})
		for _, t := range targets {
			t.name = name
			docs = append(docs, t)
		}
	}
	return append(docs, generated...), nil
}

func nameOf(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	return name
}

// write writes the documents of one resource, in input order.
func (w *mutatedWriter) write(docs []mutatedDoc) {
	if w == nil || w.err != nil {
		return
	}
	for _, d := range docs {
		var err error
		switch {
		case w.stdout != nil:
			_, err = fmt.Fprintf(w.stdout, "\n%s\n---\n", bytes.TrimSuffix(d.yaml, []byte("\n")))
		case w.file != nil:
			_, err = fmt.Fprintf(w.file, "%s\n---\n\n", d.yaml)
		default:
			var f *os.File
			if f, err = w.open(d.name); err == nil {
				_, err = fmt.Fprintf(f, "%s\n---\n\n", d.yaml)
			}
		}
		if err != nil {
			w.err = err
			return
		}
	}
}

// open returns the file of a name in the folder.
func (w *mutatedWriter) open(name string) (*os.File, error) {
	if f, ok := w.opened[name]; ok {
		return f, nil
	}
	if name == "" || name == "." || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("cannot name a file after %q", name)
	}
	f, err := os.Create(filepath.Join(w.dir, name+".yaml"))
	if err != nil {
		return nil, err
	}
	w.opened[name] = f
	return f, nil
}

// close closes the files and returns the first error of the run.
func (w *mutatedWriter) close() error {
	if w == nil {
		return nil
	}
	err := w.err
	closeFile := func(f *os.File) {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if w.file != nil {
		closeFile(w.file)
	}
	for _, f := range w.opened {
		closeFile(f)
	}
	return err
}
