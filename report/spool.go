package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// Spill is where a Stream moves rendered entries once they pass its memory
// budget: it appends with Write and reads them back with ReadAt. A
// temporary file (os.CreateTemp) serves; the package itself opens no file.
type Spill interface {
	io.Writer
	io.ReaderAt
}

// segment is a run of a group's entries in the spill.
type segment struct{ off, n int64 }

// Stream writes the YAML policy reports of a run whose results arrive one
// resource after the other, with the bytes Build and WriteYAML write for
// all the results at once (those of WriteJSON, with NewJSONStream). Each resource's entries are rendered when its
// results come (by Renderers, one per goroutine, so rendering runs where
// the evaluation runs) and kept with the entries of their policy: in
// memory up to a budget, then in the Spill. The memory a run needs is then
// bounded however many resources it evaluates.
//
// Add must be called in the order of the resources, from one goroutine at
// a time; Renderers may run concurrently with it and with each other.
type Stream struct {
	opts   Options
	source string
	ts     metav1.Timestamp
	spill  Spill
	budget int

	// json is set for a Stream of NewJSONStream: entries are rendered as
	// JSON, each after a comma
	json bool

	gs       groups
	buffered int   // bytes of the groups' bufs
	spilled  int64 // bytes written to the spill
	err      error
	pool     sync.Pool // *Rendered
}

// NewStream returns a Stream for reports made with opts. Entries beyond
// budget bytes go to spill; with a nil spill every entry stays in memory.
func NewStream(opts Options, spill Spill, budget int) *Stream {
	return &Stream{opts: opts, source: opts.source(), ts: opts.now(), spill: spill, budget: budget}
}

// NewJSONStream is NewStream for the reports WriteJSON writes (one JSON
// document per report) instead of the YAML ones.
func NewJSONStream(opts Options, spill Spill, budget int) *Stream {
	s := NewStream(opts, spill, budget)
	s.json = true
	return s
}

// Renderer renders the entries of results for a Stream. It keeps caches of
// rendered lines; use one per goroutine.
type Renderer struct {
	s   *Stream
	enc *entryEncoder
}

// NewRenderer returns a Renderer for s.
func (s *Stream) NewRenderer() *Renderer {
	return &Renderer{s: s, enc: newEntryEncoder(nil, s.source, s.ts, s.opts.AuditWarn)}
}

// Rendered holds the rendered entries of one resource until Stream.Add
// takes them.
type Rendered struct {
	buf   []byte
	parts []renderedPart
}

// renderedPart are the entries of one policy result: buf[:end] after the
// previous part.
type renderedPart struct {
	policy *engine.Policy
	end    int
	n      int
	sum    api.PolicyReportSummary
}

// Render renders the entries of the results of one resource (policy
// results without rule results have none).
func (r *Renderer) Render(results []engine.PolicyResult) (*Rendered, error) {
	for i := range results {
		if len(results[i].Rules) > 0 && results[i].Policy == nil {
			return nil, &inputError{Path: fmt.Sprintf("results[%d].policy", i), Msg: "no compiled policy"}
		}
	}
	out, _ := r.s.pool.Get().(*Rendered)
	if out == nil {
		out = &Rendered{}
	}
	w := appendWriter{b: out.buf[:0]}
	r.enc.w = &w
	// the encoder keeps no resource alive once done
	defer func() { r.enc.w, r.enc.refOf = nil, nil }()
	parts := out.parts[:0]
	for i := range results {
		pr := &results[i]
		if len(pr.Rules) == 0 {
			continue
		}
		p := renderedPart{policy: pr.Policy}
		var ref api.ObjectReference
		if r.s.json {
			ref = resourceRef(pr.Resource)
		}
		for j := range pr.Rules {
			var res api.PolicyResult
			var err error
			if r.s.json {
				res, err = r.jsonEntry(&w, pr, &pr.Rules[j], ref)
			} else {
				res, err = r.enc.entry(pr, &pr.Rules[j])
			}
			if err != nil {
				return nil, err
			}
			count(&p.sum, res)
			p.n++
		}
		p.end = len(w.b)
		parts = append(parts, p)
	}
	out.buf, out.parts = w.b, parts
	return out, nil
}

// jsonEntry appends a comma and the JSON of the entry Build makes of rule
// result rr of pr (encoding/json writes the elements of a list so, and
// WriteReports drops the comma before the first).
func (r *Renderer) jsonEntry(w *appendWriter, pr *engine.PolicyResult, rr *engine.RuleResult, ref api.ObjectReference) (api.PolicyResult, error) {
	e := convert(pr, rr, r.s.source, r.s.ts, r.s.opts.AuditWarn, ref)
	if b, ok := appendEntryJSON(append(w.b, ','), &e); ok {
		w.b = b
		return e.Result, nil
	}
	b, err := json.Marshal(&e)
	if err != nil {
		return "", err
	}
	w.b = append(append(w.b, ','), b...)
	return e.Result, nil
}

// appendWriter appends what is written to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// Add takes the entries of the next resource. The Rendered value must not
// be used afterwards. An error of the spill is returned (and again by
// WriteReports).
func (s *Stream) Add(r *Rendered) error {
	if s.err != nil {
		return s.err
	}
	start := 0
	for _, p := range r.parts {
		g := s.gs.of(p.policy)
		g.buf = append(g.buf, r.buf[start:p.end]...)
		s.buffered += p.end - start
		g.n += p.n
		g.sum.Pass += p.sum.Pass
		g.sum.Fail += p.sum.Fail
		g.sum.Warn += p.sum.Warn
		g.sum.Error += p.sum.Error
		g.sum.Skip += p.sum.Skip
		start = p.end
	}
	clear(r.parts)
	r.parts = r.parts[:0]
	s.pool.Put(r)
	if s.spill != nil && s.buffered > s.budget {
		s.err = s.spillAll()
	}
	return s.err
}

// spillAll moves the entries held in memory to the spill, one segment per
// group.
func (s *Stream) spillAll() error {
	for _, list := range [][]*group{s.gs.cluster, s.gs.namespaced} {
		for _, g := range list {
			if len(g.buf) == 0 {
				continue
			}
			n, err := s.spill.Write(g.buf)
			if err == nil && n != len(g.buf) {
				err = io.ErrShortWrite
			}
			if err != nil {
				return fmt.Errorf("report: spilling entries: %w", err)
			}
			g.segments = append(g.segments, segment{off: s.spilled, n: int64(n)})
			s.spilled += int64(n)
			g.buf = g.buf[:0]
		}
	}
	s.buffered = 0
	return nil
}

// WriteReports writes the reports of every entry added and returns their
// summary.
func (s *Stream) WriteReports(w io.Writer) (api.PolicyReportSummary, error) {
	if s.err != nil {
		return api.PolicyReportSummary{}, s.err
	}
	summarize := func(d *reportDoc) (sum api.PolicyReportSummary, n int) {
		for _, g := range d.groups {
			sum.Pass += g.sum.Pass
			sum.Fail += g.sum.Fail
			sum.Warn += g.sum.Warn
			sum.Error += g.sum.Error
			sum.Skip += g.sum.Skip
			n += g.n
		}
		return sum, n
	}
	// one buffer reads back every segment: io.Copy to the bufio.Writer
	// would hand each segment to the output's ReadFrom, which (a file,
	// standard output) allocates a buffer per call, thousands of them
	// in a large run
	var buf []byte
	entries := func(bw *bufio.Writer, d *reportDoc) error {
		var out io.Writer = bw
		if s.json {
			out = &skipFirst{w: bw} // the comma before the first entry
		}
		for _, g := range d.groups {
			for _, seg := range g.segments {
				if buf == nil {
					buf = make([]byte, 32<<10)
				}
				if err := copySegment(out, s.spill, seg, buf); err != nil {
					return err
				}
			}
			if _, err := out.Write(g.buf); err != nil {
				return err
			}
		}
		return nil
	}
	writeDoc := yamlDoc(s.opts.Format, entries)
	if s.json {
		var err error
		if writeDoc, err = jsonDoc(s.opts.Format, entries); err != nil {
			return api.PolicyReportSummary{}, err
		}
	}
	return writeReportDocs(w, s.gs.docs(), summarize, writeDoc)
}

// copySegment writes the spilled bytes of seg to w through buf.
func copySegment(w io.Writer, spill io.ReaderAt, seg segment, buf []byte) error {
	for off, end := seg.off, seg.off+seg.n; off < end; {
		n, err := spill.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			off += int64(n)
		}
		if n == 0 && err == nil {
			err = io.ErrNoProgress
		}
		if err != nil && (off < end || !errors.Is(err, io.EOF)) {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("report: reading spilled entries: %w", err)
		}
	}
	return nil
}

// skipFirst writes to w all but the first byte written to it.
type skipFirst struct {
	w       io.Writer
	skipped bool
}

func (s *skipFirst) Write(p []byte) (int, error) {
	if s.skipped || len(p) == 0 {
		return s.w.Write(p)
	}
	s.skipped = true
	n, err := s.w.Write(p[1:])
	return n + 1, err
}
