package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/policytest"
)

// testOutput renders the results of gavel test.
type testOutput struct {
	files    []testFile
	failOnly bool
	detailed bool
	colour   bool
	// elapsed is the wall-clock time of the run.
	elapsed time.Duration
}

// ANSI colours, all of the same length so that aligned columns stay
// aligned when coloured.
const (
	ansiGreen = "\033[32m"
	ansiRed   = "\033[31m"
	ansiBold  = "\033[01m"
	ansiReset = "\033[0m"
)

func (o *testOutput) paint(code, s string) string {
	if !o.colour {
		return s
	}
	return code + s + ansiReset
}

func (o *testOutput) status(r policytest.Row) string {
	if r.Passed {
		return o.paint(ansiGreen, "PASS")
	}
	return o.paint(ansiRed, "FAIL")
}

// counts returns the number of passed and failed entries of the run.
func (o *testOutput) counts() (passed, failed int) {
	for _, f := range o.files {
		for _, r := range f.Rows {
			if r.Passed {
				passed++
			} else {
				failed++
			}
		}
	}
	return passed, failed
}

// shown reports whether a row is printed.
func (o *testOutput) shown(r policytest.Row) bool { return !r.Passed || !o.failOnly }

func (o *testOutput) write(format string, w io.Writer) error {
	switch format {
	case formatTable:
		return o.writeTable(w)
	case formatJSON:
		b, err := json.MarshalIndent(o.document(), "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case formatYAML:
		b, err := yaml.Marshal(o.document())
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case formatJUnit:
		return o.writeJUnit(w)
	case formatMarkdown:
		return o.writeMarkdown(w)
	}
	return o.writeText(w)
}

// rowResource is "Kind/name" or "Kind/namespace/name".
func rowResource(r policytest.Row) string {
	if r.Namespace != "" {
		return r.Kind + "/" + r.Namespace + "/" + r.Resource
	}
	return r.Kind + "/" + r.Resource
}

// writeText prints one line per shown entry and the summary line. The line
// layout is stable (scripts and the CI conformance guard read it):
// "PASS|FAIL TEST: policy=P rule=R resource=RES: REASON".
func (o *testOutput) writeText(w io.Writer) error {
	ew := &errWriter{w: w}
	for _, f := range o.files {
		for _, r := range f.Rows {
			if !o.shown(r) {
				continue
			}
			fmt.Fprintf(ew, "%s %s: policy=%s rule=%s resource=%s: %s\n", o.status(r), r.Test, r.Policy, r.Rule, rowResource(r), r.Reason)
			if o.detailed && r.Message != "" {
				fmt.Fprintf(ew, "    message: %s\n", r.Message)
			}
		}
	}
	passed, failed := o.counts()
	fmt.Fprintf(ew, "%d passed, %d failed\n", passed, failed)
	return ew.err
}

// writeTable prints, per test file with shown entries, a heading and an
// aligned table, then the summary line.
func (o *testOutput) writeTable(w io.Writer) error {
	ew := &errWriter{w: w}
	for _, f := range o.files {
		show := false
		for _, r := range f.Rows {
			if o.shown(r) {
				show = true
				break
			}
		}
		if !show {
			continue
		}
		heading := f.Path
		if f.Name != "" {
			heading += " (" + f.Name + ")"
		}
		fmt.Fprintln(ew, o.paint(ansiBold, heading))
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		// the RESULT cells are coloured: the header cell carries an escape
		// sequence of the same length so that the column stays aligned
		header := "ID\t" + o.paint(ansiBold, "RESULT") + "\tPOLICY\tRULE\tRESOURCE\tREASON"
		if o.detailed {
			header += "\tMESSAGE"
		}
		fmt.Fprintln(tw, header)
		for i, r := range f.Rows {
			if !o.shown(r) {
				continue
			}
			line := fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%s", i+1, o.status(r), dash(r.Policy), dash(r.Rule), dash(strings.Trim(rowResource(r), "/")), oneLine(r.Reason))
			if o.detailed {
				line += "\t" + oneLine(r.Message)
			}
			fmt.Fprintln(tw, line)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(ew)
	}
	passed, failed := o.counts()
	fmt.Fprintf(ew, "%d passed, %d failed\n", passed, failed)
	return ew.err
}

// writeMarkdown prints, per test file with shown entries, a heading and a
// Markdown table (for CI job summaries and pull request comments, as
// upstream's -o markdown), then the summary line. Never coloured.
func (o *testOutput) writeMarkdown(w io.Writer) error {
	ew := &errWriter{w: w}
	cell := func(s string) string { return strings.ReplaceAll(oneLine(s), "|", "\\|") }
	for _, f := range o.files {
		show := false
		for _, r := range f.Rows {
			show = show || o.shown(r)
		}
		if !show {
			continue
		}
		heading := f.Path
		if f.Name != "" {
			heading += " (" + f.Name + ")"
		}
		fmt.Fprintf(ew, "### %s\n\n", cell(heading))
		header, rule := "| ID | RESULT | POLICY | RULE | RESOURCE | REASON |", "|---|---|---|---|---|---|"
		if o.detailed {
			header, rule = header+" MESSAGE |", rule+"---|"
		}
		fmt.Fprintf(ew, "%s\n%s\n", header, rule)
		for i, r := range f.Rows {
			if !o.shown(r) {
				continue
			}
			status := "FAIL"
			if r.Passed {
				status = "PASS"
			}
			fmt.Fprintf(ew, "| %d | %s | %s | %s | %s | %s |", i+1, status, cell(dash(r.Policy)), cell(dash(r.Rule)), cell(dash(strings.Trim(rowResource(r), "/"))), cell(r.Reason))
			if o.detailed {
				fmt.Fprintf(ew, " %s |", cell(r.Message))
			}
			fmt.Fprintln(ew)
		}
		fmt.Fprintln(ew)
	}
	passed, failed := o.counts()
	fmt.Fprintf(ew, "%d passed, %d failed\n", passed, failed)
	return ew.err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine folds whitespace runs, newlines included, into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// testReport is the json and yaml document of gavel test.
type testReport struct {
	Summary testSummary  `json:"summary"`
	Tests   []testResult `json:"tests"`
}

type testSummary struct {
	// Tests is the number of test files.
	Tests  int `json:"tests"`
	Passed int `json:"passed"`
	Failed int `json:"failed"`
}

type testResult struct {
	Path   string `json:"path"`
	Name   string `json:"name,omitempty"`
	Passed int    `json:"passed"`
	Failed int    `json:"failed"`
	// Error is set when the file could not be loaded or run as a whole.
	Error   string        `json:"error,omitempty"`
	Results []entryResult `json:"results"`
}

type entryResult struct {
	Policy    string `json:"policy"`
	Rule      string `json:"rule"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Resource  string `json:"resource"`
	Expected  string `json:"expected"`
	Got       string `json:"got"`
	// Result is "pass" or "fail": whether the entry met its expectation.
	Result  string `json:"result"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

func (o *testOutput) document() testReport {
	rep := testReport{Tests: []testResult{}}
	for _, f := range o.files {
		tr := testResult{Path: f.Path, Name: f.Name, Results: []entryResult{}}
		if f.Err != nil {
			tr.Error = f.Err.Error()
		}
		for _, r := range f.Rows {
			res := "fail"
			if r.Passed {
				res = "pass"
				tr.Passed++
			} else {
				tr.Failed++
			}
			if !o.shown(r) {
				continue
			}
			tr.Results = append(tr.Results, entryResult{
				Policy: r.Policy, Rule: r.Rule, Kind: r.Kind, Namespace: r.Namespace, Resource: r.Resource,
				Expected: r.Expected, Got: r.Got, Result: res, Reason: r.Reason, Message: r.Message,
			})
		}
		rep.Summary.Passed += tr.Passed
		rep.Summary.Failed += tr.Failed
		rep.Tests = append(rep.Tests, tr)
	}
	rep.Summary.Tests = len(o.files)
	return rep
}

// JUnit XML, in the common schema read by Jenkins, GitLab, GitHub Actions
// reporters and others: one testsuite per test file, one testcase per
// entry; failed expectations are failures, files that could not be loaded
// or run are errors.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string           `xml:"name,attr"`
	Tests      int              `xml:"tests,attr"`
	Failures   int              `xml:"failures,attr"`
	Errors     int              `xml:"errors,attr"`
	Skipped    int              `xml:"skipped,attr"`
	Time       string           `xml:"time,attr"`
	Properties *junitProperties `xml:"properties,omitempty"`
	Cases      []junitCase      `xml:"testcase"`
}

type junitProperties struct {
	Property []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

func (o *testOutput) writeJUnit(w io.Writer) error {
	doc := junitSuites{Name: "gavel test", Suites: []junitSuite{}}
	for _, f := range o.files {
		s := junitSuite{Name: f.Path, Time: fmt.Sprintf("%.3f", f.Duration.Seconds())}
		class := f.Name
		if class == "" {
			class = f.Path
		}
		if f.Name != "" {
			s.Properties = &junitProperties{Property: []junitProperty{{Name: "test.name", Value: f.Name}}}
		}
		for _, r := range f.Rows {
			if !o.shown(r) {
				continue
			}
			c := junitCase{Classname: class, Name: fmt.Sprintf("policy=%s rule=%s resource=%s", r.Policy, r.Rule, rowResource(r))}
			if r.Policy == "" && r.Rule == "" {
				c.Name = "load " + f.Path
			}
			if !r.Passed {
				var lines []string
				for _, kv := range [][2]string{{"expected", r.Expected}, {"got", r.Got}, {"reason", r.Reason}, {"message", r.Message}} {
					if kv[1] != "" {
						lines = append(lines, kv[0]+": "+kv[1])
					}
				}
				text := strings.Join(lines, "\n")
				p := &junitProblem{Message: r.Reason, Text: text}
				if f.Err != nil {
					p.Type = "error"
					c.Error = p
					s.Errors++
				} else {
					p.Type = "fail"
					c.Failure = p
					s.Failures++
				}
			}
			s.Tests++
			s.Cases = append(s.Cases, c)
		}
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Suites = append(doc.Suites, s)
	}
	doc.Time = fmt.Sprintf("%.3f", o.elapsed.Seconds())
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
