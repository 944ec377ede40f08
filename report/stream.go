package report

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// CompactResult is what a report needs of an engine.PolicyResult, in a
// fraction of its memory: a reference to the resource instead of the
// resource, and of each rule result what its entry shows. A run that keeps
// the results of many resources until the reports are written keeps these
// (see Compact and WriteYAMLCompact).
type CompactResult struct {
	policy  *engine.Policy
	enforce bool
	ref     *api.ObjectReference
	rules   []compactRule
}

type compactRule struct {
	name    string
	message string
	props   map[string]string // the rule's reportProperties (shared)
	extra   *compactExtra     // nil for most results
	status  engine.Status
}

// compactExtra holds what few results carry.
type compactExtra struct {
	exceptions []string
	checks     []engine.PodSecurityCheck
}

// Compact appends to dst the compact form of the results that have rule
// results (the others make no report entry). Results of the same resource
// share one reference, whose strings are copied: the reference does not
// keep the resource (or the text it was decoded from) in memory.
func Compact(dst []CompactResult, results []engine.PolicyResult) []CompactResult {
	return compact(dst, results, nil)
}

// Compactor compacts results as Compact does, keeping one copy of each
// distinct message: the results of many resources repeat the same
// messages. A Compactor is not safe for concurrent use (use one per
// goroutine); the zero value is ready to use.
type Compactor struct {
	messages map[string]string
}

// maxInterned bounds the messages a Compactor keeps.
const maxInterned = 1 << 16

// Compact is the package's Compact with shared messages.
func (c *Compactor) Compact(dst []CompactResult, results []engine.PolicyResult) []CompactResult {
	if c.messages == nil {
		c.messages = map[string]string{}
	}
	return compact(dst, results, c.messages)
}

func compact(dst []CompactResult, results []engine.PolicyResult, messages map[string]string) []CompactResult {
	n, prs := 0, 0
	for i := range results {
		if k := len(results[i].Rules); k > 0 {
			n += k
			prs++
		}
	}
	if prs == 0 {
		return dst
	}
	dst = slices.Grow(dst, prs)
	// one array for all the rules of the results
	rules := make([]compactRule, 0, n)
	var ref *api.ObjectReference
	var refOf map[string]any
	for i := range results {
		pr := &results[i]
		if len(pr.Rules) == 0 {
			continue
		}
		if ref == nil || !sameObject(refOf, pr.Resource) {
			r := resourceRef(pr.Resource)
			for _, s := range []*string{&r.APIVersion, &r.Kind, &r.Name, &r.Namespace, &r.UID, &r.ResourceVersion} {
				*s = strings.Clone(*s)
			}
			ref, refOf = &r, pr.Resource
		}
		start := len(rules)
		for j := range pr.Rules {
			rr := &pr.Rules[j]
			c := compactRule{name: rr.Name, status: rr.Status, message: rr.Message, props: rr.Properties}
			c.message = intern(messages, c.message)
			if len(rr.Exceptions) > 0 || len(rr.PodSecurityChecks) > 0 {
				c.extra = &compactExtra{exceptions: rr.Exceptions}
				if len(rr.PodSecurityChecks) > 0 {
					// the properties need the controls and their images only
					c.extra.checks = make([]engine.PodSecurityCheck, len(rr.PodSecurityChecks))
					for k, ck := range rr.PodSecurityChecks {
						var images []string // nil stays nil: controlsJSON shows null
						if ck.Images != nil {
							images = make([]string, len(ck.Images))
							for m, img := range ck.Images {
								images[m] = intern(messages, img)
							}
						}
						c.extra.checks[k] = engine.PodSecurityCheck{ID: ck.ID, Name: ck.Name, Images: images}
					}
				}
			}
			rules = append(rules, c)
		}
		dst = append(dst, CompactResult{policy: pr.Policy, enforce: pr.FailureAction.IsEnforce(), ref: ref, rules: rules[start:len(rules):len(rules)]})
	}
	return dst
}

// intern returns the copy of s the table holds, adding a copy of s (which
// then no longer shares the memory of the text it was cut from); s itself
// without a table.
func intern(table map[string]string, s string) string {
	if table == nil || s == "" {
		return s
	}
	if t, ok := table[s]; ok {
		return t
	}
	if len(table) >= maxInterned {
		return strings.Clone(s)
	}
	t := strings.Clone(s)
	table[t] = t
	return t
}

func sameObject(a, b map[string]any) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer())
}

// WriteYAMLResults writes the reports Build makes of results exactly as
// WriteYAML writes them, without building them: each entry is rendered
// when it is written. It returns the summary of all the reports (what
// Summary gives for Build's reports).
func WriteYAMLResults(w io.Writer, results []engine.PolicyResult, opts Options) (api.PolicyReportSummary, error) {
	for i := range results {
		if len(results[i].Rules) > 0 && results[i].Policy == nil {
			return api.PolicyReportSummary{}, &InputError{Path: fmt.Sprintf("results[%d].policy", i), Msg: "no compiled policy"}
		}
	}
	return WriteYAMLCompact(w, Compact(nil, results), opts)
}

// WriteYAMLCompact is WriteYAMLResults for results kept in compact form.
func WriteYAMLCompact(w io.Writer, results []CompactResult, opts Options) (api.PolicyReportSummary, error) {
	var total api.PolicyReportSummary
	if opts.Clock == nil {
		return total, ErrNoClock
	}
	ts := opts.now()
	source := opts.source()

	// group the policy results as Build does, by index
	var gs groups
	for i := range results {
		p := results[i].policy
		if p == nil {
			return total, &InputError{Path: fmt.Sprintf("results[%d].policy", i), Msg: "no compiled policy"}
		}
		g := gs.of(p)
		g.prs = append(g.prs, i)
	}
	docs := gs.docs()

	summarize := func(d *reportDoc) (sum api.PolicyReportSummary, n int) {
		for _, g := range d.groups {
			for _, k := range g.prs {
				cr := &results[k]
				for j := range cr.rules {
					count(&sum, cr.result(&cr.rules[j], opts.AuditWarn))
					n++
				}
			}
		}
		return sum, n
	}
	entries := func(bw *bufio.Writer, d *reportDoc) error {
		var prs []int
		for _, g := range d.groups {
			prs = append(prs, g.prs...)
		}
		return encodeEntries(bw, results, prs, func(w io.Writer) *entryEncoder {
			return newEntryEncoder(w, source, ts, opts.AuditWarn)
		})
	}
	return writeReportDocs(w, opts.Format, docs, summarize, entries)
}

// result is the result of the entry of a rule: the status, fail becoming
// warn when the policy is not scored or, with auditWarn, not enforced.
func (cr *CompactResult) result(r *compactRule, auditWarn bool) api.PolicyResult {
	s := status(r.status)
	if s == api.ResultFail && (cr.policy.Annotations()[AnnotationScored] == "false" || (auditWarn && !cr.enforce)) {
		return api.ResultWarn
	}
	return s
}

func count(s *api.PolicyReportSummary, r api.PolicyResult) {
	switch r {
	case api.ResultPass:
		s.Pass++
	case api.ResultFail:
		s.Fail++
	case api.ResultWarn:
		s.Warn++
	case api.ResultError:
		s.Error++
	case api.ResultSkip:
		s.Skip++
	}
}

// setSummary sets the summary of a report newReport made.
func setSummary(r any, s api.PolicyReportSummary) {
	switch v := r.(type) {
	case *api.OpenClusterReport:
		v.Summary = s
	case *api.OpenReport:
		v.Summary = s
	case *api.ClusterPolicyReport:
		v.Summary = s
	case *api.PolicyReport:
		v.Summary = s
	}
}

// encodeEntries writes the entries of the policy results results[prs[i]],
// in order, encoding them in parallel: chunks of policy results are
// encoded by up to GOMAXPROCS goroutines, each with its own encoder, and
// written in order as they are ready, a few chunks ahead at most.
func encodeEntries(w io.Writer, results []CompactResult, prs []int, newEncoder func(io.Writer) *entryEncoder) error {
	const chunkSize = 256 // policy results per chunk
	encodeChunk := func(enc *entryEncoder, chunk []int) error {
		for _, k := range chunk {
			cr := &results[k]
			for j := range cr.rules {
				if err := enc.entry(cr, &cr.rules[j]); err != nil {
					return err
				}
			}
		}
		return nil
	}
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 || len(prs) <= chunkSize {
		return encodeChunk(newEncoder(w), prs)
	}
	type chunk struct {
		buf  *bytes.Buffer
		err  error
		done chan struct{}
	}
	n := (len(prs) + chunkSize - 1) / chunkSize
	chunks := make([]*chunk, n)
	jobs := make(chan int)
	// the buffers of the chunks in flight are recycled
	inFlight := 2 * workers
	free := make(chan *bytes.Buffer, inFlight)
	for i := 0; i < inFlight; i++ {
		free <- bytes.NewBuffer(make([]byte, 0, chunkSize*768))
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// one encoder per goroutine: its caches serve every chunk
			var enc *entryEncoder
			for ci := range jobs {
				c := chunks[ci]
				c.buf = <-free
				if enc == nil {
					enc = newEncoder(c.buf)
				}
				enc.w = c.buf
				part := prs[ci*chunkSize : min(len(prs), (ci+1)*chunkSize)]
				c.err = encodeChunk(enc, part)
				close(c.done)
			}
		}()
	}
	// feed the workers while writing the chunks in order, keeping at most
	// inFlight chunks in memory
	var err error
	next, written := 0, 0
	for written < n {
		for next < n && next-written < inFlight {
			chunks[next] = &chunk{done: make(chan struct{})}
			jobs <- next
			next++
		}
		c := chunks[written]
		<-c.done
		if err == nil {
			if c.err != nil {
				err = c.err
			} else if _, werr := w.Write(c.buf.Bytes()); werr != nil {
				err = werr
			}
		}
		c.buf.Reset()
		free <- c.buf
		chunks[written] = nil
		written++
	}
	close(jobs)
	wg.Wait()
	return err
}

// entryEncoder writes report entries straight from engine results, as
// itemEncoder writes the entries convert makes of them, rendering once
// what all the entries of a policy or of a policy result share.
type entryEncoder struct {
	*itemEncoder
	auditWarn bool
	source    []byte // "source: ...\n"
	sourceErr error
	timestamp []byte // "timestamp:\n    nanos: 0\n    seconds: ...\n"
	policies  map[*engine.Policy]*policyLines
	// messages are rendered message lines: most messages repeat
	messages lineCache[string]
	// refOf and refLines are the resources of the last policy result
	refOf    *api.ObjectReference
	refLines []byte
	line     []byte
	scored   []byte // scoredLine
	// extra caches the properties of entries with exceptions or Pod
	// Security checks, by policy and by what makes them (sig)
	extra     map[*engine.Policy]map[string][]byte
	extraSize int
	sig       []byte
}

// scoredLine is the line of a scored entry.
const scoredLine = "scored: " + scalarTrue + "\n"

// policyLines are the rendered lines shared by the entries of a policy.
type policyLines struct {
	category, policy, severity []byte // nil when omitted
	scored                     bool
	properties                 []byte // when process is the only property
}

func newEntryEncoder(w io.Writer, source string, ts metav1.Timestamp, auditWarn bool) *entryEncoder {
	e := &entryEncoder{itemEncoder: newItemEncoder(w), auditWarn: auditWarn, policies: map[*engine.Policy]*policyLines{},
		extra: map[*engine.Policy]map[string][]byte{}}
	e.timestamp = fmt.Appendf(nil, "timestamp:\n%snanos: %d\n%sseconds: %d\n", nextRef, ts.Nanos, nextRef, ts.Seconds)
	e.source, e.sourceErr = e.render("source", source)
	e.scored = []byte(scoredLine)
	return e
}

// render returns `key: value` (with its line break), copied.
func (e *entryEncoder) render(key, value string) ([]byte, error) {
	b, err := e.scalar(false, key, value)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), b...), nil
}

func (e *entryEncoder) policy(p *engine.Policy) (*policyLines, error) {
	if pl := e.policies[p]; pl != nil {
		return pl, nil
	}
	annotations := p.Annotations()
	pl := &policyLines{scored: annotations[AnnotationScored] != "false"}
	var err error
	if c := annotations[AnnotationCategory]; c != "" {
		if pl.category, err = e.render("category", c); err != nil {
			return nil, err
		}
	}
	if pl.policy, err = e.render("policy", p.Key()); err != nil {
		return nil, err
	}
	if s := severity(annotations[AnnotationSeverity]); s != "" {
		if pl.severity, err = e.render("severity", string(s)); err != nil {
			return nil, err
		}
	}
	b, err := e.properties(map[string]string{PropertyProcess: process(p)})
	if err != nil {
		return nil, err
	}
	pl.properties = append([]byte(nil), b...)
	e.policies[p] = pl
	return pl, nil
}

// extraProperties renders the properties of an entry with exceptions, Pod
// Security checks or report properties. Those of the first two kinds
// repeat across resources: they are cached by what makes them.
func (e *entryEncoder) extraProperties(cr *CompactResult, r *compactRule) ([]byte, error) {
	cacheable := len(r.props) == 0
	var k []byte
	if cacheable {
		// every string with its length: the key is unambiguous
		k = appendSig(e.sig[:0], r.name)
		k = binary.AppendUvarint(k, uint64(len(r.extra.exceptions)))
		for _, x := range r.extra.exceptions {
			k = appendSig(k, x)
		}
		k = binary.AppendUvarint(k, uint64(len(r.extra.checks)))
		for _, c := range r.extra.checks {
			k = appendSig(appendSig(k, c.ID), c.Name)
			if c.Images == nil {
				k = append(k, 0) // null in controlsJSON
			} else {
				k = binary.AppendUvarint(k, uint64(len(c.Images))+1)
			}
			for _, img := range c.Images {
				k = appendSig(k, img)
			}
		}
		e.sig = k
		if b, ok := e.extra[cr.policy][string(k)]; ok {
			return b, nil
		}
	}
	rr := engine.RuleResult{Name: r.name, Properties: r.props}
	if r.extra != nil {
		rr.Exceptions, rr.PodSecurityChecks = r.extra.exceptions, r.extra.checks
	}
	props, err := e.properties(entryProperties(&engine.PolicyResult{Policy: cr.policy}, &rr))
	if err != nil || !cacheable {
		return props, err
	}
	if e.extraSize += len(k) + len(props); e.extraSize > maxCacheBytes {
		clear(e.extra)
		e.extraSize = len(k) + len(props)
	}
	byKey := e.extra[cr.policy]
	if byKey == nil {
		byKey = map[string][]byte{}
		e.extra[cr.policy] = byKey
	}
	b := append([]byte(nil), props...)
	byKey[string(k)] = b
	return b, nil
}

func appendSig(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// entry writes the entry of rule r of cr, with the keys and the values of
// itemEncoder.result for the entry convert makes of the rule result.
func (e *entryEncoder) entry(cr *CompactResult, r *compactRule) error {
	pl, err := e.policy(cr.policy)
	if err != nil {
		return err
	}
	if e.sourceErr != nil {
		return e.sourceErr
	}
	if e.refOf != cr.ref {
		e.buf = e.buf[:0]
		if err := e.ref(cr.ref); err != nil {
			return err
		}
		e.refLines = append(append(e.refLines[:0], "resources:\n"...), e.buf...)
		e.refOf = cr.ref
	}
	b := e.line[:0]
	first := true
	put := func(line []byte) {
		if first {
			b = append(b, firstItem...)
			first = false
		} else {
			b = append(b, nextItem...)
		}
		b = append(b, line...)
	}
	if pl.category != nil {
		put(pl.category)
	}
	if r.message != "" {
		line, ok := e.messages.m[r.message]
		if !ok {
			rendered, err := e.scalar(false, "message", r.message)
			if err != nil {
				return err
			}
			line = append([]byte(nil), rendered...)
			e.messages.put(r.message, len(r.message), line)
		}
		put(line)
	}
	put(pl.policy)
	if len(r.props) == 0 && r.extra == nil {
		put(pl.properties)
	} else {
		props, err := e.extraProperties(cr, r)
		if err != nil {
			return err
		}
		put(props)
	}
	put(e.refLines)
	if res := cr.result(r, e.auditWarn); res != "" {
		line, err := e.scalar(false, "result", string(res))
		if err != nil {
			return err
		}
		put(line)
	}
	if r.name != "" {
		line, err := e.scalar(false, "rule", r.name)
		if err != nil {
			return err
		}
		put(line)
	}
	if pl.scored {
		put(e.scored)
	}
	if pl.severity != nil {
		put(pl.severity)
	}
	put(e.source)
	put(e.timestamp)
	e.line = b
	_, err = e.w.Write(b)
	return err
}
