package report

import (
	"encoding/binary"
	"fmt"
	"io"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

func sameObject(a, b map[string]any) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer())
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
	// refOf and refLines are the resource of the last policy result
	refOf    map[string]any
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
	head
	category, policy, severity []byte // nil when omitted
	properties                 []byte // when process is the only property
	source                     []byte // nil: the encoder's
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
	h := headOf(p)
	pl := &policyLines{head: h}
	var err error
	if h.category != "" {
		if pl.category, err = e.render("category", h.category); err != nil {
			return nil, err
		}
	}
	if pl.policy, err = e.render("policy", h.key); err != nil {
		return nil, err
	}
	if h.severity != "" {
		if pl.severity, err = e.render("severity", string(h.severity)); err != nil {
			return nil, err
		}
	}
	if h.source != "" {
		if pl.source, err = e.render("source", h.source); err != nil {
			return nil, err
		}
	}
	b, err := e.properties(map[string]string{propertyProcess: h.process})
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
func (e *entryEncoder) extraProperties(pr *engine.PolicyResult, rr *engine.RuleResult) ([]byte, error) {
	cacheable := len(rr.Properties) == 0
	var k []byte
	if cacheable {
		// every string with its length: the key is unambiguous
		k = appendSig(e.sig[:0], rr.Name)
		k = binary.AppendUvarint(k, uint64(len(rr.Exceptions)))
		for _, x := range rr.Exceptions {
			k = appendSig(k, x)
		}
		k = binary.AppendUvarint(k, uint64(len(rr.PodSecurityChecks)))
		for _, c := range rr.PodSecurityChecks {
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
		if b, ok := e.extra[pr.Policy][string(k)]; ok {
			return b, nil
		}
	}
	props, err := e.properties(entryProperties(pr, rr))
	if err != nil || !cacheable {
		return props, err
	}
	if e.extraSize += len(k) + len(props); e.extraSize > maxCacheBytes {
		clear(e.extra)
		e.extraSize = len(k) + len(props)
	}
	byKey := e.extra[pr.Policy]
	if byKey == nil {
		byKey = map[string][]byte{}
		e.extra[pr.Policy] = byKey
	}
	b := append([]byte(nil), props...)
	byKey[string(k)] = b
	return b, nil
}

func appendSig(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// entry writes the entry of rule result rr of pr, with the keys and the
// values of itemEncoder.result for the entry convert makes of it, and
// returns the entry's result.
func (e *entryEncoder) entry(pr *engine.PolicyResult, rr *engine.RuleResult) (api.PolicyResult, error) {
	pl, err := e.policy(pr.Policy)
	if err != nil {
		return "", err
	}
	if e.sourceErr != nil {
		return "", e.sourceErr
	}
	if e.refOf == nil || !sameObject(e.refOf, pr.Resource) {
		ref := resourceRef(pr.Resource)
		e.buf = e.buf[:0]
		if err := e.ref(&ref); err != nil {
			return "", err
		}
		e.refLines = append(append(e.refLines[:0], "resources:\n"...), e.buf...)
		e.refOf = pr.Resource
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
	if rr.Message != "" {
		line, ok := e.messages.m[rr.Message]
		if !ok {
			rendered, err := e.scalar(false, "message", rr.Message)
			if err != nil {
				return "", err
			}
			line = append([]byte(nil), rendered...)
			e.messages.put(rr.Message, len(rr.Message), line)
		}
		put(line)
	}
	put(pl.policy)
	if len(rr.Properties) == 0 && len(rr.Exceptions) == 0 && len(rr.PodSecurityChecks) == 0 {
		put(pl.properties)
	} else {
		props, err := e.extraProperties(pr, rr)
		if err != nil {
			return "", err
		}
		put(props)
	}
	put(e.refLines)
	res := pl.result(pr, rr, e.auditWarn)
	if res != "" {
		line, err := e.scalar(false, "result", string(res))
		if err != nil {
			return "", err
		}
		put(line)
	}
	if rr.Name != "" {
		line, err := e.scalar(false, "rule", rr.Name)
		if err != nil {
			return "", err
		}
		put(line)
	}
	if pl.scored {
		put(e.scored)
	}
	if pl.severity != nil {
		put(pl.severity)
	}
	if pl.source != nil {
		put(pl.source)
	} else {
		put(e.source)
	}
	put(e.timestamp)
	e.line = b
	_, err = e.w.Write(b)
	return res, err
}
