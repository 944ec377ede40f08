package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cmd/gavel/internal/jsontext"
	"github.com/gavelpolicy/gavel/cmd/gavel/internal/yamltext"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/loader"
	"github.com/gavelpolicy/gavel/report"
)

// reportMemory is the memory the rendered report entries (and the text,
// JUnit and document outputs) of a run may take before they move to a
// temporary file. It is live heap, which the garbage collector's target
// (GOGC=200) triples at the peak: with 8 MB the entries of the 1,000-Pod
// ValidatingPolicy bench took 20 MB of its 67 MB heap peak; with 1 MB
// the writes to the file stay large (tens of KB each).
var reportMemory = 1 << 20

// resourceInputs are the resource files of a run. They are read twice
// (see runApply) without keeping their documents; what can be read only
// once (standard input, a pipe such as a shell's <(...), a device) is
// read into memory first.
type resourceInputs struct {
	files []string
	// data holds the contents of the inputs kept in memory, by index
	data map[int][]byte
}

// readInputs lists the resource files and reads those that cannot be read
// twice: standard input, pipes and devices, and http(s) URLs (downloaded,
// as upstream reads resources from URLs).
func readInputs(paths []string, stdin io.Reader) (*resourceInputs, error) {
	in := &resourceInputs{data: map[int][]byte{}}
	for _, p := range paths {
		if isGitURL(p) {
			b, err := download(p)
			if err != nil {
				return nil, err
			}
			in.data[len(in.files)] = b
			in.files = append(in.files, p)
			continue
		}
		files, err := loader.Files(p)
		if err != nil {
			return nil, err
		}
		for _, name := range files {
			i := len(in.files)
			in.files = append(in.files, name)
			if name == "-" {
				b, err := io.ReadAll(stdin)
				if err != nil {
					return nil, fmt.Errorf("<stdin>: %w", err)
				}
				in.data[i] = b
				continue
			}
			info, err := os.Stat(name)
			if err != nil {
				return nil, err
			}
			if !info.Mode().IsRegular() {
				b, err := os.ReadFile(name)
				if err != nil {
					return nil, err
				}
				in.data[i] = b
			}
		}
	}
	return in, nil
}

// downloadLimit bounds a resource file read from a URL.
const downloadLimit = 256 << 20

// download reads a resource file from an http(s) URL.
func download(url string) ([]byte, error) {
	client := &http.Client{Timeout: 2 * time.Minute}
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, downloadLimit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	if len(b) > downloadLimit {
		return nil, fmt.Errorf("%s: larger than %d bytes", url, downloadLimit)
	}
	return b, nil
}

// feedFunc calls emit with each document of a run's resources in order,
// until emit returns false.
type feedFunc func(emit func(job) bool) error

// job is one document to evaluate: raw, or already decoded (docs).
type job struct {
	seq     int
	raw     api.RawDocument
	docs    []api.Document
	decoded bool
	// err is the decoding error of a document the scan could not decode
	err error
}

// errStopped ends the reading of the inputs when emit asks to stop.
var errStopped = errors.New("stopped")

// each feeds the documents of the inputs, undecoded.
func (in *resourceInputs) each(emit func(job) bool) error {
	fn := func(raw api.RawDocument) error {
		if !emit(job{raw: raw}) {
			return errStopped
		}
		return nil
	}
	for i, name := range in.files {
		var err error
		switch b, inMemory := in.data[i]; {
		case name == "-":
			err = eachDocument(bytes.NewReader(b), "<stdin>", fn)
		case inMemory:
			err = eachDocument(bytes.NewReader(b), name, fn)
		default:
			err = eachFileDocument(name, fn)
		}
		if err == errStopped {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// eachDocument calls fn with each document of r in order, undecoded (see
// api.RawDocument.Decode), so that a long stream is never in memory at
// once. It stops at fn's first error and returns it.
func eachDocument(r io.Reader, source string, fn func(api.RawDocument) error) error {
	dr := api.NewDocumentReader(r, source)
	for {
		raw, err := dr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(raw); err != nil {
			return err
		}
	}
}

// eachFileDocument is eachDocument for a file.
func eachFileDocument(name string, fn func(api.RawDocument) error) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return eachDocument(f, name, fn)
}

// isException reports whether a document is a PolicyException of
// kyverno.io or policies.kyverno.io, without decoding it.
func isException(d api.Document) bool {
	group, _, _ := strings.Cut(d.APIVersion(), "/")
	return d.Kind() == api.KindPolicyException && (group == api.GroupKyverno || group == api.GroupPolicies)
}

// scanned is what the first reading of the resources finds.
type scanned struct {
	exceptions    []*api.PolicyException
	celExceptions []*api.CELPolicyException
	// objects are those of the kinds the cluster serves
	objects []map[string]any
	// docs are the documents of the raw documents, when all were decoded,
	// and errs the errors of those that could not be (--continue-on-error)
	docs [][]api.Document
	errs []error
	// namespacer gives the objects without a namespace theirs
	namespacer *loader.Namespacer
}

// scan reads the resources for their PolicyExceptions (withExceptions)
// and the objects of the given kinds (all: every object), decoding only
// the documents that may hold one (see api.RawDocument.MayBeKind). When
// every document is decoded (all), they are kept for the evaluation.
func (in *resourceInputs) scan(kinds []string, all, withExceptions, continueOnError bool, ns *loader.Namespacer) (scanned, error) {
	s := scanned{namespacer: ns}
	want := kinds
	if withExceptions {
		want = append([]string{"PolicyException"}, kinds...)
	}
	if all {
		s.docs = [][]api.Document{}
	}
	var decodeErr error
	err := in.each(func(j job) bool {
		if !all && !j.raw.MayBeKind(want...) {
			return true
		}
		docs, err := j.raw.Decode()
		if err != nil && continueOnError {
			// reported by the evaluation, as an error result
			if all {
				s.docs = append(s.docs, nil)
				s.errs = append(s.errs, err)
			}
			return true
		}
		if err == nil {
			err = s.add(docs, kinds, all)
		}
		if err != nil {
			decodeErr = err
			return false
		}
		if all {
			s.docs = append(s.docs, docs)
			s.errs = append(s.errs, nil)
		}
		return true
	})
	if decodeErr != nil {
		return s, decodeErr
	}
	return s, err
}

func (s *scanned) add(docs []api.Document, kinds []string, all bool) error {
	for _, d := range docs {
		obj, err := api.DecodeObject(d)
		if err != nil {
			return err
		}
		switch o := obj.(type) {
		case *api.PolicyException:
			s.exceptions = append(s.exceptions, o)
		case *api.CELPolicyException:
			s.celExceptions = append(s.celExceptions, o)
		case nil:
			if !all && !slices.Contains(kinds, d.Kind()) {
				continue
			}
			if s.namespacer != nil {
				s.namespacer.Default(d.Object)
			}
			s.objects = append(s.objects, d.Object)
		}
	}
	return nil
}

// each feeds the documents the scan decoded.
func (s *scanned) each(emit func(job) bool) error {
	for i, docs := range s.docs {
		if !emit(job{docs: docs, decoded: true, err: s.errs[i]}) {
			return nil
		}
	}
	return nil
}

// jobResult is the evaluation of the resources of one job, or the error
// that its document could not be decoded.
type jobResult struct {
	seq     int
	results []resourceResult
	// others counts the PolicyExceptions and policies among the
	// documents: not evaluated, but upstream's banner counts them
	others int
	err    error
}

// run evaluates the fed documents on parallel workers and hands the result
// of each resource to sink, in input order. A few documents per worker
// are in flight at most, so memory does not grow with the input. Each
// worker gets a finish function from newFinish (when not nil) that it
// applies to its results, to keep only what sink needs. A document that
// cannot be decoded stops the run: its error is returned and nothing
// after it reaches sink.
func (ev *evaluator) run(feed feedFunc, parallel int, newFinish func() func(*resourceResult), sink func(*resourceResult)) error {
	parallel = max(parallel, 1)
	window := 4 * parallel
	jobs := make(chan job)
	done := make(chan jobResult, window)
	tokens := make(chan struct{}, window)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var finish func(*resourceResult)
			if newFinish != nil {
				finish = newFinish()
			}
			for j := range jobs {
				done <- ev.do(j, finish)
			}
		}()
	}
	var feedErr error
	go func() {
		defer close(jobs)
		seq := 0
		feedErr = feed(func(j job) bool {
			select {
			case tokens <- struct{}{}:
			case <-stop:
				return false
			}
			j.seq = seq
			seq++
			jobs <- j
			return true
		})
	}()
	go func() {
		wg.Wait()
		close(done)
	}()
	pending := map[int]jobResult{}
	next := 0
	var loadErr error
	for r := range done {
		pending[r.seq] = r
		for {
			p, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			<-tokens
			if loadErr != nil {
				continue
			}
			if p.err != nil {
				loadErr = p.err
				close(stop)
				continue
			}
			ev.otherDocs += p.others
			for i := range p.results {
				ev.mutated.write(p.results[i].mutated)
				sink(&p.results[i])
			}
		}
	}
	// done is closed: the workers are gone, so is the feeder
	if loadErr != nil {
		return loadErr
	}
	return feedErr
}

// do decodes a job's document and evaluates its resources (policies and
// PolicyExceptions in resource files are not resources).
func (ev *evaluator) do(j job, finish func(*resourceResult)) jobResult {
	out := jobResult{seq: j.seq}
	docs, err := j.docs, j.err
	if !j.decoded {
		docs, err = j.raw.Decode()
	}
	if err != nil {
		if !ev.continueOnError {
			out.err = err
			return out
		}
		// --continue-on-error: the document is an error result
		out.results = append(out.results, resourceResult{err: err})
		return out
	}
	for _, d := range docs {
		if ev.payloads {
			rr := ev.evaluatePayload(d.Object)
			if finish != nil {
				finish(&rr)
			}
			out.results = append(out.results, rr)
			continue
		}
		if isException(d) {
			out.others++
			continue // read by the scan (--exceptions-with-resources)
		}
		obj, err := api.DecodeObject(d)
		if err != nil {
			out.err = err
			return out
		}
		if obj != nil { // a policy
			out.others++
			continue
		}
		if ev.namespacer != nil {
			ev.namespacer.Default(d.Object)
		}
		rr := ev.evaluate(d.Object)
		if ev.mutated != nil {
			var err error
			if rr.mutated, err = ev.mutated.render(&rr); err != nil && rr.err == nil {
				rr.err = err
			}
		}
		if finish != nil {
			finish(&rr)
		}
		out.results = append(out.results, rr)
	}
	return out
}

// streamReports evaluates the resources and prints the policy reports of
// the run as the upstream CLI's --policy-report does: the merged cluster
// report of every ClusterPolicy, then one report per namespaced Policy, as
// YAML documents separated by "---" (JSON documents with -o json); the
// summary goes to stderr so that stdout stays a clean stream of documents.
// The entries of each resource are rendered by the worker that evaluated
// it and kept by a report.Stream, in memory up to reportMemory, then in a
// temporary file (in memory when none can be created).
func streamReports(stdout, stderr io.Writer, ev *evaluator, feed feedFunc, f applyFlags) (counts, int) {
	opts := report.Options{Clock: time.Now, AuditWarn: f.auditWarn, Format: report.OpenReports}
	if f.reportFmt == "wgpolicy" {
		opts.Format = report.WGPolicy
	}
	var spill report.Spill
	if tmp, err := os.CreateTemp("", "gavel-report-*"); err == nil {
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		spill = tmp
	}
	newStream := report.NewStream
	if f.format == "json" {
		newStream = report.NewJSONStream
	}
	stream := newStream(opts, spill, reportMemory)
	newFinish := func() func(*resourceResult) {
		r := stream.NewRenderer()
		return func(rr *resourceResult) {
			if rr.err != nil {
				return
			}
			rr.rendered, rr.err = r.Render(rr.policies)
			rr.policies, rr.resource = nil, nil
		}
	}
	var evalErrs []error
	var addErr error
	err := ev.run(feed, f.parallel, newFinish, func(rr *resourceResult) {
		if rr.err != nil {
			evalErrs = append(evalErrs, rr.err)
			return
		}
		if addErr == nil {
			addErr = stream.Add(rr.rendered)
		}
	})
	if err != nil {
		fmt.Fprintln(stderr, "gavel apply: failed to load resources:", err)
		return counts{}, exitUsage
	}
	for _, e := range evalErrs {
		fmt.Fprintln(stderr, "gavel apply:", e)
	}
	sum, err := stream.WriteReports(stdout)
	if err != nil {
		fmt.Fprintln(stderr, "gavel apply:", err)
		return counts{}, exitUsage
	}
	errs := sum.Error + len(evalErrs) + len(ev.skipped)
	fmt.Fprintf(stderr, "\npass: %d, fail: %d, warn: %d, error: %d, skip: %d\n", sum.Pass, sum.Fail, sum.Warn, errs, sum.Skip)
	return counts{Pass: sum.Pass, Fail: sum.Fail, Warn: sum.Warn, Error: errs, Skip: sum.Skip}, exitOK
}

// streamText evaluates the resources and prints upstream's text output:
// the banner ("Applying N policy rule(s) to M resource(s)..."), the
// mutated resources (or the note of -o), the policies skipped as invalid,
// a block per policy and resource with failed rules, and the summary line.
// Nothing is kept of the results: the text goes to spools, in memory up to
// reportMemory, then in temporary files, and is printed once every
// resource was read (a resource that cannot be decoded stops the run
// before any output, as it always did; the banner needs the count).
func streamText(stdout, stderr io.Writer, ev *evaluator, feed feedFunc, f applyFlags) (counts, int) {
	out := newSpool(reportMemory)
	defer out.Close()
	doc := ev.newDocument()
	lines := bufio.NewWriterSize(out, 32<<10)
	resources := 0
	err := ev.run(feed, f.parallel, nil, func(rr *resourceResult) {
		resources++
		entries, _ := doc.add(rr, f.auditWarn)
		writeTextBlocks(lines, rr, entries, f)
	})
	if err != nil {
		fmt.Fprintln(stderr, "gavel apply: failed to load resources:", err)
		return counts{}, exitUsage
	}
	for _, e := range doc.Errors {
		fmt.Fprintln(stderr, "gavel apply:", e)
	}
	if err := lines.Flush(); err != nil {
		fmt.Fprintln(stderr, "gavel apply:", err)
		return counts{}, exitUsage
	}
	bw := bufio.NewWriter(stdout)
	writeBanner(bw, ev, resources+ev.otherDocs)
	if _, err := ev.mutated.writeText(bw); err != nil {
		fmt.Fprintln(stderr, "gavel apply:", err)
		return counts{}, exitUsage
	}
	writeSkipped(bw, ev.skipped)
	if _, err := out.WriteTo(bw); err != nil {
		fmt.Fprintln(stderr, "gavel apply:", err)
		return counts{}, exitUsage
	}
	fmt.Fprintf(bw, "\npass: %d, fail: %d, warn: %d, error: %d, skip: %d \n", doc.Summary["pass"], doc.Summary["fail"], doc.Summary["warn"], doc.Summary["error"], doc.Summary["skip"])
	if err := bw.Flush(); err != nil {
		fmt.Fprintln(stderr, "gavel apply:", err)
		return counts{}, exitUsage
	}
	return countsOf(doc.Summary), exitOK
}

// writeBanner writes upstream's first line of the text and table outputs.
func writeBanner(w io.Writer, ev *evaluator, resources int) {
	if ev.exceptions > 0 {
		fmt.Fprintf(w, "\nApplying %d policy rule(s) to %d resource(s) with %d exception(s)...\n", ev.rules, resources, ev.exceptions)
		return
	}
	fmt.Fprintf(w, "\nApplying %d policy rule(s) to %d resource(s)...\n", ev.rules, resources)
}

// divider frames upstream's list of skipped policies.
const divider = "----------------------------------------------------------------------"

// writeSkipped lists the policies skipped as invalid, with the reason, as
// upstream's printSkippedAndInvalidPolicies does ("Policies Skipped:",
// then "N. NAME: REASON"; its "Invalid Policies:" list takes only an
// error gavel does not make, a foreach variable outside a foreach).
func writeSkipped(w io.Writer, skipped []skippedPolicy) {
	if len(skipped) == 0 {
		return
	}
	fmt.Fprintln(w, divider)
	fmt.Fprintln(w, "Policies Skipped:")
	for i, sp := range skipped {
		if reason := skipReason(sp.err); reason != "" {
			fmt.Fprintf(w, "%d. %s: %s\n", i+1, sp.name, reason)
		} else {
			fmt.Fprintf(w, "%d. %s\n", i+1, sp.name)
		}
	}
	fmt.Fprintln(w, divider)
}

// skipReason is why a policy did not compile, without the policy's name
// (the list names it).
func skipReason(err error) string {
	var ce *engine.CompileError
	if errors.As(err, &ce) && len(ce.Errs) > 0 {
		return ce.Errs.ToAggregate().Error()
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// spool keeps what is written until the run ends: in memory up to a
// budget, then in a temporary file (in memory when none can be created).
type spool struct {
	mem    bytes.Buffer
	file   *os.File
	budget int
}

func newSpool(budget int) *spool { return &spool{budget: budget} }

func (s *spool) Write(p []byte) (int, error) {
	if s.file == nil && s.mem.Len()+len(p) > s.budget {
		if f, err := os.CreateTemp("", "gavel-output-*"); err == nil {
			s.file = f
			if _, err := s.mem.WriteTo(f); err != nil {
				return 0, err
			}
			s.mem = bytes.Buffer{}
		}
	}
	if s.file != nil {
		return s.file.Write(p)
	}
	return s.mem.Write(p)
}

// WriteTo writes everything written so far to w.
func (s *spool) WriteTo(w io.Writer) (int64, error) {
	if s.file == nil {
		return s.mem.WriteTo(w)
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	return io.Copy(w, s.file)
}

// Close removes the temporary file, if any.
func (s *spool) Close() error {
	if s.file == nil {
		return nil
	}
	err := s.file.Close()
	if rerr := os.Remove(s.file.Name()); err == nil {
		err = rerr
	}
	return err
}

// streamDocument evaluates the resources and prints the json or yaml
// document of -o (applyDocument as json.MarshalIndent or yaml.Marshal lay
// it out) without keeping the results: the entries of each resource are
// rendered by the worker that evaluated it and spooled (see spool); the
// summary, whether the run is blocked and the errors, which the document
// holds around the entries, are written at the end.
func streamDocument(stdout, stderr io.Writer, ev *evaluator, feed feedFunc, f applyFlags) (counts, int) {
	out := newSpool(reportMemory)
	defer out.Close()
	entries := bufio.NewWriterSize(out, 32<<10)
	newFinish := entryFinish(f, func(e applyEntry) (renderedCase, error) {
		b, err := renderEntry(f.format, e)
		return renderedCase{text: b}, err
	})
	doc := ev.newDocument()
	blocked := false
	n := 0
	var renderErr error
	err := ev.run(feed, f.parallel, newFinish, func(rr *resourceResult) {
		if !doc.take(rr) {
			return
		}
		blocked = blocked || rr.blocked
		for _, c := range rr.cases {
			if renderErr == nil {
				renderErr = writeEntry(entries, f.format, c.text, n == 0)
			}
			n++
		}
	})
	if err != nil {
		fmt.Fprintln(stderr, "gavel apply: failed to load resources:", err)
		return counts{}, exitUsage
	}
	for _, e := range doc.Errors {
		fmt.Fprintln(stderr, "gavel apply:", e)
	}
	if renderErr == nil {
		renderErr = entries.Flush()
	}
	if renderErr == nil {
		doc.Blocked = blocked
		renderErr = writeDocumentAround(stdout, f.format, doc, n, out)
	}
	if renderErr != nil {
		fmt.Fprintln(stderr, "gavel apply:", renderErr)
		return counts{}, exitUsage
	}
	writeSummary(stderr, doc.Summary)
	return countsOf(doc.Summary), exitOK
}

// entryFinish is the newFinish of a run that prints entries (see
// evaluator.run): each worker works out the entries of its resource and
// renders with render those the output shows, so that the sink only
// counts and writes them.
func entryFinish(f applyFlags, render func(applyEntry) (renderedCase, error)) func() func(*resourceResult) {
	return func() func(*resourceResult) {
		return func(rr *resourceResult) {
			if rr.err != nil {
				return
			}
			rr.entries, rr.blocked = resourceEntries(rr, f.auditWarn)
			shown := rr.entries
			if f.failOnly {
				shown = failing(shown)
			}
			rr.cases = make([]renderedCase, 0, len(shown))
			for _, e := range shown {
				rc, err := render(e)
				if err != nil {
					rr.err = err
					return
				}
				rr.cases = append(rr.cases, rc)
			}
			rr.policies, rr.resource = nil, nil
		}
	}
}

// renderEntry renders one entry of the results list as json.MarshalIndent
// or yaml.Marshal lay it out inside the document (without the separator
// before a JSON entry, see writeEntry).
func renderEntry(format string, e applyEntry) ([]byte, error) {
	if format == "json" {
		return appendEntryJSON(nil, e), nil
	}
	if b, ok := appendEntryYAML(nil, e); ok {
		return b, nil
	}
	return yaml.Marshal([]applyEntry{e})
}

// entryField is a field of an entry as its JSON tags name it.
type entryField struct {
	key, value string
	omitEmpty  bool
}

// fields lists the fields of e in the order of applyEntry.
func (e applyEntry) fields() [7]entryField {
	return [7]entryField{
		{"policy", e.Policy, false},
		{"rule", e.Rule, false},
		{"type", e.Type, false},
		{"resource", e.Resource, false},
		{"result", e.Result, false},
		{"failureAction", e.FailureAction, true},
		{"message", e.Message, true},
	}
}

// appendEntryYAML appends the YAML yaml.Marshal([]applyEntry{e}) writes
// (a list item, keys in alphabetical order) without its encoder, or
// reports false, appending nothing, when a value needs yaml.v2.
func appendEntryYAML(b []byte, e applyEntry) ([]byte, bool) {
	start := len(b)
	first := true
	fields := e.fields()
	for _, i := range [...]int{5, 6, 0, 3, 4, 1, 2} { // the keys sorted
		f := fields[i]
		if f.value == "" && f.omitEmpty {
			continue
		}
		if first {
			b = append(b, "- "...)
			first = false
		} else {
			b = append(b, "  "...)
		}
		var ok bool
		if b, ok = yamltext.AppendKeyString(b, 2, f.key, f.value); !ok {
			return b[:start], false
		}
	}
	return b, true
}

// appendEntryJSON appends what json.MarshalIndent(e, "    ", "  ") writes,
// without reflection.
func appendEntryJSON(b []byte, e applyEntry) []byte {
	b = append(b, '{')
	first := true
	for _, f := range e.fields() {
		if f.value == "" && f.omitEmpty {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(append(append(b, "\n      \""...), f.key...), "\": "...)
		b = jsontext.AppendString(b, f.value)
	}
	return append(b, "\n    }"...)
}

// writeEntry writes one rendered entry of the results list, after the
// separator JSON needs between entries.
func writeEntry(w io.Writer, format string, entry []byte, first bool) error {
	if format == "json" {
		sep := ",\n    "
		if first {
			sep = "    "
		}
		if _, err := io.WriteString(w, sep); err != nil {
			return err
		}
	}
	_, err := w.Write(entry)
	return err
}

// writeDocumentAround writes the document with its n entries taken from
// entries (written by writeEntry).
func writeDocumentAround(w io.Writer, format string, doc applyDocument, n int, entries io.WriterTo) error {
	bw := bufio.NewWriter(w)
	if format == "json" {
		summary, err := json.MarshalIndent(doc.Summary, "  ", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(bw, "{\n  \"summary\": %s,\n  \"blocked\": %t,\n  \"results\": ", summary, doc.Blocked)
		if n == 0 {
			bw.WriteString("[]")
		} else {
			bw.WriteString("[\n")
			if _, err := entries.WriteTo(bw); err != nil {
				return err
			}
			bw.WriteString("\n  ]")
		}
		if len(doc.Errors) > 0 {
			errs, err := json.MarshalIndent(doc.Errors, "  ", "  ")
			if err != nil {
				return err
			}
			fmt.Fprintf(bw, ",\n  \"errors\": %s", errs)
		}
		bw.WriteString("\n}\n")
		return bw.Flush()
	}
	// yaml.Marshal sorts the keys: blocked, errors, results, summary
	head, err := yaml.Marshal(struct {
		Blocked bool     `json:"blocked"`
		Errors  []string `json:"errors,omitempty"`
	}{doc.Blocked, doc.Errors})
	if err != nil {
		return err
	}
	tail, err := yaml.Marshal(struct {
		Summary map[string]int `json:"summary"`
	}{doc.Summary})
	if err != nil {
		return err
	}
	bw.Write(head)
	if n == 0 {
		bw.WriteString("results: []\n")
	} else {
		bw.WriteString("results:\n")
		if _, err := entries.WriteTo(bw); err != nil {
			return err
		}
	}
	bw.Write(tail)
	return bw.Flush()
}
