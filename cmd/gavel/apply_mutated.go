package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// mutatedWriter writes the mutated and generated resources of a run as the
// upstream CLI's -o/--output and -i/--stdin do: to a file (every document
// followed by "---"), to a folder (RESOURCE-mutated.yaml per mutated
// resource, POLICY-generated.yaml per generating policy), to standard
// output (-i), or, in the default text output, as part of the text
// ("policy P applied to NS/KIND/NAME:", the resource, "Mutation has been
// applied successfully." and a newline; with -o only the note). As upstream, a resource
// is written once per mutate policy with a passing rule, as that policy
// left it, followed by the targets the policy's mutate-existing rules
// patched; a generated resource once. A nil *mutatedWriter writes nothing.
type mutatedWriter struct {
	dir    string    // folder mode
	file   *os.File  // file mode
	stdout io.Writer // -i without -o
	// text keeps what the default text output prints of the mutations:
	// the resources, or upstream's note that -o wrote them
	text *spool
	// opened are the files of the folder this run wrote, truncated the
	// first time
	opened map[string]*os.File
	err    error
}

// mutatedDoc is one rendered resource, the file of the folder it goes to,
// and what the text output says of it.
type mutatedDoc struct {
	name string
	yaml []byte
	// targets are the rendered targets a mutate policy patched
	targets [][]byte
	// generated marks a generated resource
	generated bool
	// policy and resource name the policy and the trigger in the text
	policy, resource string
}

// newMutatedWriter opens the destination of -o, or standard output for -i;
// nil when neither is given. A path ending in a slash or naming an
// existing folder is a folder (created when missing); any other is a file,
// created or truncated.
func newMutatedWriter(f applyFlags, stdout io.Writer) (*mutatedWriter, error) {
	w, err := openMutated(f, stdout)
	if err == nil && f.textOutput() {
		if w == nil {
			w = &mutatedWriter{}
		}
		w.text = newSpool(reportMemory)
	}
	return w, err
}

func openMutated(f applyFlags, stdout io.Writer) (*mutatedWriter, error) {
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
	name := nameOf(rr.resource) + "-mutated"
	path := upstreamPath(rr.resource)
	for i := range rr.policies {
		pr := &rr.policies[i]
		applied := false
		var targets [][]byte
		for _, r := range pr.Rules {
			switch {
			case r.Type == engine.Mutation && r.Status == engine.StatusPass:
				applied = true
				for _, t := range r.PatchedTargets {
					b, err := yaml.Marshal(t)
					if err != nil {
						return nil, err
					}
					targets = append(targets, b)
				}
			case r.Type == engine.Generation && r.Status == engine.StatusPass:
				for _, g := range r.GeneratedResources {
					b, err := yaml.Marshal(cliGenerated(pr.Policy, g))
					if err != nil {
						return nil, err
					}
					docs = append(docs, mutatedDoc{name: pr.Policy.Source().GetName() + "-generated", yaml: b, generated: true, policy: pr.Policy.Source().GetName(), resource: path})
				}
			}
		}
		if !applied {
			continue
		}
		obj := pr.PatchedResource
		if obj == nil {
			obj = rr.resource
		}
		b, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		docs = append(docs, mutatedDoc{name: name, yaml: b, targets: targets, policy: pr.Policy.Source().GetName(), resource: path})
	}
	return docs, nil
}

// cliGenerated is a generated resource as upstream's CLI shows it: the
// downstream of a generate rule as the controller writes it; a
// GeneratingPolicy's without the tracking labels and annotations (its
// generator runs in a CLI mode that writes neither).
func cliGenerated(p *engine.Policy, obj map[string]any) map[string]any {
	if k := api.KindOf(p.Source()); k != api.KindGeneratingPolicy && k != api.KindNamespacedGeneratingPolicy {
		return obj
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	md, _ := obj["metadata"].(map[string]any)
	m := make(map[string]any, len(md))
	for k, v := range md {
		if k != "annotations" {
			m[k] = v
		}
	}
	if l, ok := md["labels"].(map[string]any); ok {
		labels := map[string]any{}
		for k, v := range l {
			if !strings.HasPrefix(k, "generate.kyverno.io/") && !(k == "app.kubernetes.io/managed-by" && v == "kyverno") {
				labels[k] = v
			}
		}
		delete(m, "labels")
		if len(labels) > 0 {
			m["labels"] = labels
		}
	}
	out["metadata"] = m
	return out
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
			_, err = fmt.Fprintf(w.stdout, "\n%s\n---\n", d.yaml)
			for _, t := range d.targets {
				if err == nil {
					_, err = fmt.Fprintf(w.stdout, "\n%s\n---\n", t)
				}
			}
		case w.file != nil:
			err = writeDoc(w.file, d)
		case w.dir != "":
			var f *os.File
			if f, err = w.open(d.name); err == nil {
				err = writeDoc(f, d)
			}
		default:
			// the default text output, without -o: upstream's text
			_, err = fmt.Fprintf(w.text, "\npolicy %s applied to %s:\n%s\n---\n", d.policy, d.resource, d.yaml)
			if err == nil && len(d.targets) > 0 {
				_, err = io.WriteString(w.text, "patched targets: \n")
				for _, t := range d.targets {
					if err == nil {
						_, err = fmt.Fprintf(w.text, "\n%s\n---\n\n", t)
					}
				}
			}
		}
		if err == nil && w.text != nil {
			// upstream prints its note whether or not -o is given; gavel
			// ends it with a newline (upstream's does not, and a failure
			// block that follows starts on its line)
			if d.generated {
				_, err = io.WriteString(w.text, "\n\nGenerate:\nGeneration completed successfully.\n")
			} else {
				_, err = io.WriteString(w.text, "\n\nMutation:\nMutation has been applied successfully.\n")
			}
		}
		if err != nil {
			w.err = err
			return
		}
	}
}

// writeDoc writes a document to a file of -o as upstream does: the
// resource followed by "---" and an empty line, then each patched target
// followed by "---".
func writeDoc(f io.Writer, d mutatedDoc) error {
	if _, err := fmt.Fprintf(f, "%s\n---\n\n", d.yaml); err != nil {
		return err
	}
	for _, t := range d.targets {
		if _, err := fmt.Fprintf(f, "%s\n---\n", t); err != nil {
			return err
		}
	}
	return nil
}

// writeText writes what the text output prints of the mutations and
// returns how many bytes that was.
func (w *mutatedWriter) writeText(out io.Writer) (int64, error) {
	if w == nil || w.text == nil {
		return 0, nil
	}
	if w.err != nil {
		return 0, w.err
	}
	return w.text.WriteTo(out)
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
	if w.text != nil {
		w.text.Close()
	}
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
