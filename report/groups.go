package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/gavelpolicy/gavel/internal/policykey"
	"io"
	"sort"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// group gathers the entries of one policy (by key) for the reports, as
// Build groups them: every ClusterPolicy's entries go to the merged
// cluster report, each namespaced Policy's to a report of its own.
type group struct {
	name, namespace string
	// the entries rendered: their count and summary, the segments moved
	// to the spill, then the bytes still in memory
	n        int
	sum      api.PolicyReportSummary
	segments []segment
	buf      []byte
}

// groups finds the group of a policy: by compiled policy first, then by
// key (several policy sets may compile the same policy).
type groups struct {
	byPolicy map[*engine.Policy]*group
	byKey    map[string]*group
	// cluster are the groups of cluster policies in the order their first
	// entry came; namespaced those of namespaced Policies
	cluster, namespaced []*group
}

func (gs *groups) of(p *engine.Policy) *group {
	if g := gs.byPolicy[p]; g != nil {
		return g
	}
	if gs.byPolicy == nil {
		gs.byPolicy, gs.byKey = map[*engine.Policy]*group{}, map[string]*group{}
	}
	key := p.Key()
	g := gs.byKey[key]
	if g == nil {
		g = &group{name: p.Source().GetName(), namespace: policykey.Namespace(p.Source())}
		gs.byKey[key] = g
		if g.namespace == "" {
			gs.cluster = append(gs.cluster, g)
		} else {
			gs.namespaced = append(gs.namespaced, g)
		}
	}
	gs.byPolicy[p] = g
	return g
}

// reportDoc is one report of the output and the groups of its entries.
type reportDoc struct {
	cluster         bool
	name, namespace string
	groups          []*group
}

// docs lists the reports as Build orders them: the merged cluster report,
// then the namespaced Policies' reports by namespace and name.
func (gs *groups) docs() []reportDoc {
	var docs []reportDoc
	if len(gs.cluster) > 0 {
		docs = append(docs, reportDoc{cluster: true, name: mergedReportName, groups: gs.cluster})
	}
	namespaced := append([]*group(nil), gs.namespaced...)
	sort.Slice(namespaced, func(i, j int) bool {
		if namespaced[i].namespace != namespaced[j].namespace {
			return namespaced[i].namespace < namespaced[j].namespace
		}
		return namespaced[i].name < namespaced[j].name
	})
	for _, g := range namespaced {
		docs = append(docs, reportDoc{name: g.name, namespace: g.namespace, groups: []*group{g}})
	}
	return docs
}

// docWriter writes one report: its head with summary sum (of n entries),
// the entries written by entries in place of the results.
type docWriter func(bw *bufio.Writer, d *reportDoc, sum api.PolicyReportSummary, n int) error

// writeReportDocs writes the reports with writeDoc, separated by "---"
// lines, and returns the summary of all of them.
func writeReportDocs(w io.Writer, docs []reportDoc, summarize func(d *reportDoc) (api.PolicyReportSummary, int), writeDoc docWriter) (api.PolicyReportSummary, error) {
	var total api.PolicyReportSummary
	bw := bufio.NewWriterSize(w, 64<<10)
	for i := range docs {
		d := &docs[i]
		// the summary first: it is part of the head
		sum, n := summarize(d)
		if i > 0 {
			if _, err := bw.WriteString("---\n"); err != nil {
				return total, err
			}
		}
		if err := writeDoc(bw, d, sum, n); err != nil {
			return total, err
		}
		total.Pass += sum.Pass
		total.Fail += sum.Fail
		total.Warn += sum.Warn
		total.Error += sum.Error
		total.Skip += sum.Skip
	}
	return total, bw.Flush()
}

// yamlDoc writes a report as a YAML document, as WriteYAML does.
func yamlDoc(format Format, entries func(bw *bufio.Writer, d *reportDoc) error) docWriter {
	return func(bw *bufio.Writer, d *reportDoc, sum api.PolicyReportSummary, n int) error {
		head := newReport(format, d.cluster, d.name, d.namespace, nil, nil)
		setSummary(head, sum)
		return writeYAMLDoc(bw, head, n, func(*itemEncoder) error { return entries(bw, d) })
	}
}

// jsonDoc writes a report as a line of JSON, as WriteJSON does: the head
// is marshaled with a marker for its one result, which the entries replace.
func jsonDoc(format Format, entries func(bw *bufio.Writer, d *reportDoc) error) (docWriter, error) {
	marker := api.PolicyReportResult{Policy: "\x00gavel-entries\x00"}
	m, err := json.Marshal(&marker)
	if err != nil {
		return nil, err
	}
	m = append(append([]byte{'['}, m...), ']')
	return func(bw *bufio.Writer, d *reportDoc, sum api.PolicyReportSummary, _ int) error {
		head := newReport(format, d.cluster, d.name, d.namespace, nil, []api.PolicyReportResult{marker})
		setSummary(head, sum)
		b, err := json.Marshal(head)
		if err != nil {
			return err
		}
		at := bytes.Index(b, m)
		if at < 0 {
			return fmt.Errorf("report: no results in the JSON of report %q", d.name)
		}
		if _, err := bw.Write(b[:at+1]); err != nil {
			return err
		}
		if err := entries(bw, d); err != nil {
			return err
		}
		if _, err := bw.Write(b[at+len(m)-1:]); err != nil {
			return err
		}
		return bw.WriteByte('\n')
	}, nil
}
