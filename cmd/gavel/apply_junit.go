package main

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// junitStream writes the JUnit XML of gavel apply (-o junit) for entries
// that arrive one resource after the other: a test suite per policy, in
// the order of their first entry, with the bytes xml.MarshalIndent writes
// for the whole document. The suites' counts open them, so the test cases
// of each policy are kept until the end: in memory up to a budget, then
// appended to one temporary file (a segment per suite each time the budget
// is passed). The memory a run needs is then bounded.
type junitStream struct {
	suites  []*junitGroup
	byName  map[string]*junitGroup
	budget  int
	held    int    // bytes of the suites' bufs
	spilled *spool // the segments (a temporary file, see spool)
	off     int64
	err     error
}

// junitGroup is a suite: its counts (no cases), the segments of its cases
// in the spill, then the cases still in memory.
type junitGroup struct {
	suite    junitSuite
	segments [][2]int64 // offset, length
	buf      []byte
}

func newJUnitStream(budget int) *junitStream {
	return &junitStream{byName: map[string]*junitGroup{}, budget: budget, spilled: newSpool(0)}
}

// renderedCase is an entry rendered as a test case, with what its suite
// counts.
type renderedCase struct {
	policy, result string
	text           []byte // the case, on its own lines
}

// renderCase renders an entry as the test case of its policy's suite, as
// xml.MarshalIndent writes it at the third level of the document.
func renderCase(e applyEntry) renderedCase {
	b := append(make([]byte, 0, 160+2*len(e.Message)), "\n    <testcase name=\""...)
	b = appendXMLEscaped(b, "rule="+e.Rule+" resource="+e.Resource)
	b = append(b, `" classname="`...)
	b = appendXMLEscaped(b, e.Policy)
	b = append(b, `">`...)
	if e.Result == "fail" || e.Result == "error" {
		elem := "error"
		if e.Result == "fail" {
			elem = "failure"
		}
		b = append(append(append(b, "\n      <"...), elem...), ` message="`...)
		b = appendXMLEscaped(b, e.Message)
		b = append(append(append(b, `" type="`...), e.Result...), `">`...)
		b = appendCDATA(b, e.Message)
		b = append(append(append(b, "</"...), elem...), ">\n    "...)
	}
	b = append(b, "</testcase>"...)
	return renderedCase{policy: e.Policy, result: e.Result, text: b}
}

// appendXMLEscaped appends s as encoding/xml escapes attribute values:
// quotes, ampersands, angle brackets, tabs and line breaks as character
// references, and the runes XML cannot hold (and invalid UTF-8) as U+FFFD.
func appendXMLEscaped(b []byte, s string) []byte {
	last := 0
	for i := 0; i < len(s); {
		r, width := utf8.DecodeRuneInString(s[i:])
		var esc string
		switch r {
		case '"':
			esc = "&#34;"
		case '\'':
			esc = "&#39;"
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '\t':
			esc = "&#x9;"
		case '\n':
			esc = "&#xA;"
		case '\r':
			esc = "&#xD;"
		default:
			if !xmlChar(r) || (r == utf8.RuneError && width == 1) {
				esc = "\uFFFD"
			}
		}
		if esc != "" {
			b = append(append(b, s[last:i]...), esc...)
			last = i + width
		}
		i += width
	}
	return append(b, s[last:]...)
}

// xmlChar reports whether r is in XML's character range.
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D || r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// appendCDATA appends s as encoding/xml writes a ",cdata" field: nothing
// for the empty string, else one CDATA section, split where s holds "]]>".
func appendCDATA(b []byte, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, "<![CDATA["...)
	for {
		before, after, found := strings.Cut(s, "]]>")
		if !found {
			break
		}
		b = append(append(b, before...), "]]]]><![CDATA[>"...)
		s = after
	}
	return append(append(b, s...), "]]>"...)
}

// add takes the next entry.
func (j *junitStream) add(e applyEntry) error {
	return j.addRendered(renderCase(e))
}

// addRendered takes the next entry, rendered.
func (j *junitStream) addRendered(rc renderedCase) error {
	if j.err != nil {
		return j.err
	}
	g := j.byName[rc.policy]
	if g == nil {
		g = &junitGroup{suite: junitSuite{Name: rc.policy}}
		j.byName[rc.policy] = g
		j.suites = append(j.suites, g)
	}
	switch rc.result {
	case "fail":
		g.suite.Failures++
	case "error":
		g.suite.Errors++
	}
	g.suite.Tests++
	g.buf = append(g.buf, rc.text...)
	j.held += len(rc.text)
	if j.held > j.budget {
		j.err = j.spill()
	}
	return j.err
}

// spill moves the cases held in memory to the temporary file.
func (j *junitStream) spill() error {
	for _, g := range j.suites {
		if len(g.buf) == 0 {
			continue
		}
		if _, err := j.spilled.Write(g.buf); err != nil {
			return fmt.Errorf("spilling test cases: %w", err)
		}
		g.segments = append(g.segments, [2]int64{j.off, int64(len(g.buf))})
		j.off += int64(len(g.buf))
		g.buf = g.buf[:0]
	}
	j.held = 0
	return nil
}

// writeTo writes the document.
func (j *junitStream) writeTo(w io.Writer) error {
	if j.err != nil {
		return j.err
	}
	top := junitSuites{Name: "gavel apply"}
	for _, g := range j.suites {
		top.Tests += g.suite.Tests
		top.Failures += g.suite.Failures
		top.Errors += g.suite.Errors
	}
	// the tags are those of the elements marshaled without children
	open, err := openTag(top, "", "testsuites")
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(xml.Header)
	bw.WriteString(open)
	if len(j.suites) == 0 {
		bw.WriteString("</testsuites>\n")
		return bw.Flush()
	}
	// one buffer for every segment: io.Copy would hand each to the
	// output's ReadFrom (through bw's), which allocates one per call for
	// a file; the struct hides bw's ReadFrom
	var buf []byte
	for _, g := range j.suites {
		open, err := openTag(g.suite, "  ", "testsuite")
		if err != nil {
			return err
		}
		bw.WriteString("\n" + open)
		for _, seg := range g.segments {
			if buf == nil {
				buf = make([]byte, 32<<10)
			}
			if _, err := io.CopyBuffer(struct{ io.Writer }{bw}, j.spilled.section(seg[0], seg[1]), buf); err != nil {
				return fmt.Errorf("reading spilled test cases: %w", err)
			}
		}
		bw.Write(g.buf)
		bw.WriteString("\n  </testsuite>")
	}
	bw.WriteString("\n</testsuites>\n")
	return bw.Flush()
}

// marshalIndent is xml.MarshalIndent(v, prefix, "  ") for v as element
// name (the name the field of its parent gives it).
func marshalIndent(v any, prefix, name string) ([]byte, error) {
	var b bytes.Buffer
	enc := xml.NewEncoder(&b)
	enc.Indent(prefix, "  ")
	if err := enc.EncodeElement(v, xml.StartElement{Name: xml.Name{Local: name}}); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// openTag returns the start tag of v (an element without children) as
// xml.MarshalIndent writes it with prefix.
func openTag(v any, prefix, name string) (string, error) {
	b, err := marshalIndent(v, prefix, name)
	if err != nil {
		return "", err
	}
	s, ok := strings.CutSuffix(string(b), "</"+name+">")
	if !ok {
		return "", fmt.Errorf("junit: unexpected %s element %q", name, b)
	}
	return s, nil
}

// close removes the temporary file, if any.
func (j *junitStream) close() error { return j.spilled.Close() }

// section returns the n bytes written to the spool from offset off.
func (s *spool) section(off, n int64) io.Reader {
	if s.file != nil {
		return io.NewSectionReader(s.file, off, n)
	}
	return bytes.NewReader(s.mem.Bytes()[off : off+n])
}

// streamJUnit evaluates the resources and prints the results as JUnit XML
// (-o junit) without keeping them (see junitStream): the test cases of
// each resource are rendered by the worker that evaluated it. The summary
// goes to stderr so that stdout stays one document.
func streamJUnit(stdout, stderr io.Writer, ev *evaluator, feed feedFunc, f applyFlags) (counts, int) {
	js := newJUnitStream(reportMemory)
	defer js.close()
	newFinish := entryFinish(f, func(e applyEntry) (renderedCase, error) { return renderCase(e), nil })
	doc := ev.newDocument()
	err := ev.run(feed, f.parallel, newFinish, func(rr *resourceResult) {
		if !doc.take(rr) {
			return
		}
		for _, rc := range rr.cases {
			js.addRendered(rc) // an error is kept and returned by writeTo
		}
	})
	if err != nil {
		fmt.Fprintln(stderr, "gavel apply: failed to load resources:", err)
		return counts{}, exitUsage
	}
	for _, e := range doc.Errors {
		fmt.Fprintln(stderr, "gavel apply:", e)
	}
	if err := js.writeTo(stdout); err != nil {
		fmt.Fprintln(stderr, "gavel apply:", err)
		return counts{}, exitUsage
	}
	writeSummary(stderr, doc.Summary)
	return countsOf(doc.Summary), exitOK
}
