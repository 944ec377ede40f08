package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
	goyaml "sigs.k8s.io/yaml/goyaml.v2"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/yamltext"
)

// WriteYAML writes the reports as YAML documents separated by "---" lines,
// as the upstream CLI prints them. Each document is byte for byte what
// sigs.k8s.io/yaml.Marshal gives for the report, but the results are
// written one at a time straight to w, which takes a fraction of the
// time and memory on reports of tens of thousands of results (yaml.v2
// renders each distinct "key: value" once, in the same context). It accepts
// the values Build and Store.Reports return.
func writeYAML(w io.Writer, reports []any) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	for i, r := range reports {
		if i > 0 {
			if _, err := bw.WriteString("---\n"); err != nil {
				return err
			}
		}
		if err := writeYAMLReport(bw, i, r); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteJSON writes the reports as JSON documents, one per line, separated
// by "---" lines as the upstream CLI does with -o json.
func writeJSON(w io.Writer, reports []any) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	for i, r := range reports {
		if _, _, err := splitReport(i, r); err != nil {
			return err
		}
		if i > 0 {
			if _, err := bw.WriteString("---\n"); err != nil {
				return err
			}
		}
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		b = append(b, '\n')
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// splitReport returns a copy of the report without its results, and the
// results.
func splitReport(i int, r any) (head any, results []api.PolicyReportResult, err error) {
	switch v := r.(type) {
	case *api.PolicyReport:
		if v != nil {
			c := *v
			c.Results = nil
			return &c, v.Results, nil
		}
	case *api.ClusterPolicyReport:
		if v != nil {
			c := *v
			c.Results = nil
			return &c, v.Results, nil
		}
	case *api.OpenReport:
		if v != nil {
			c := *v
			c.Results = nil
			return &c, v.Results, nil
		}
	case *api.OpenClusterReport:
		if v != nil {
			c := *v
			c.Results = nil
			return &c, v.Results, nil
		}
	case api.PolicyReport:
		results, v.Results = v.Results, nil
		return &v, results, nil
	case api.ClusterPolicyReport:
		results, v.Results = v.Results, nil
		return &v, results, nil
	case api.OpenReport:
		results, v.Results = v.Results, nil
		return &v, results, nil
	case api.OpenClusterReport:
		results, v.Results = v.Results, nil
		return &v, results, nil
	default:
		return nil, nil, &inputError{Path: fmt.Sprintf("reports[%d]", i), Msg: fmt.Sprintf("unsupported report type %T", r)}
	}
	return nil, nil, &inputError{Path: fmt.Sprintf("reports[%d]", i), Msg: "nil report"}
}

func writeYAMLReport(w *bufio.Writer, i int, r any) error {
	head, results, err := splitReport(i, r)
	if err != nil {
		return err
	}
	return writeYAMLDoc(w, head, len(results), func(enc *itemEncoder) error {
		for j := range results {
			if err := enc.result(&results[j]); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeYAMLDoc writes a report: head is the report without its results,
// and results (when n > 0) writes them with the encoder, at the place
// yaml.v2 puts the "results" key.
func writeYAMLDoc(w *bufio.Writer, head any, n int, results func(enc *itemEncoder) error) error {
	doc, err := yaml.Marshal(head)
	if err != nil {
		return err
	}
	if n == 0 {
		_, err := w.Write(doc)
		return err
	}
	// yaml.v2 sorts keys: the results go before the first top-level key
	// that sorts after "results" (scope, scopeSelector, source, summary).
	at := len(doc)
	for off := 0; off < len(doc); {
		end := bytes.IndexByte(doc[off:], '\n')
		if end < 0 {
			end = len(doc) - off
		}
		line := doc[off : off+end]
		if len(line) > 0 && line[0] != ' ' && line[0] != '-' {
			if k := bytes.IndexByte(line, ':'); k > 0 && string(line[:k]) > "results" {
				at = off
				break
			}
		}
		off += end + 1
	}
	if _, err := w.Write(doc[:at]); err != nil {
		return err
	}
	if _, err := w.WriteString("results:\n"); err != nil {
		return err
	}
	if err := results(newItemEncoder(w)); err != nil {
		return err
	}
	_, err = w.Write(doc[at:])
	return err
}

// itemEncoder writes report results in YAML exactly as yaml.v2 (under
// sigs.k8s.io/yaml) lays them out in a report: a sequence at column 0 under
// "results", whose items have their keys at column 2, with the resource
// references a sequence at column 2 whose items have their keys at column
// 4. Each "key: value" pair is rendered once by yaml.v2 in that same
// context (so quoting, escaping and line folding are yaml.v2's) and cached,
// since messages, policies and rules repeat across results.
type itemEncoder struct {
	w       io.Writer
	scalars lineCache[scalarKey]
	props   lineCache[string]
	buf     []byte
	tmp     []byte
}

func newItemEncoder(w io.Writer) *itemEncoder {
	return &itemEncoder{w: w}
}

type scalarKey struct {
	nested     bool
	key, value string
}

// maxCacheBytes bounds each cache of rendered lines of an encoder (keys
// and lines): a cache that would pass it starts over empty. An encoder
// lives as long as a run, and some lines (Pod Security properties) are
// long and rarely repeat.
const maxCacheBytes = 1 << 20

// lineCache maps keys to rendered lines within maxCacheBytes.
type lineCache[K comparable] struct {
	m    map[K][]byte
	size int
}

func (c *lineCache[K]) put(k K, keyBytes int, line []byte) {
	c.size += keyBytes + len(line)
	if c.size > maxCacheBytes || c.m == nil {
		c.m = map[K][]byte{}
		c.size = keyBytes + len(line)
	}
	c.m[k] = line
}

// Item prefixes: a sequence item's first key follows "- ", the others are
// indented to the same column.
const (
	firstItem  = "- "
	nextItem   = "  "
	firstRef   = "  - "
	nextRef    = "    "
	scalarTrue = "true"
)

// result writes one result: the keys in yaml.v2's order, empty values
// omitted where the JSON tags say omitempty.
func (e *itemEncoder) result(r *api.PolicyReportResult) error {
	e.buf = e.buf[:0]
	first := true
	prefix := func() string {
		if first {
			first = false
			return firstItem
		}
		return nextItem
	}
	str := func(key, value string, omitEmpty bool) error {
		if omitEmpty && value == "" {
			return nil
		}
		b, err := e.scalar(false, key, value)
		if err != nil {
			return err
		}
		e.buf = append(e.buf, prefix()...)
		e.buf = append(e.buf, b...)
		return nil
	}
	if err := str("category", r.Category, true); err != nil {
		return err
	}
	if err := str("message", r.Message, true); err != nil {
		return err
	}
	if err := str("policy", r.Policy, false); err != nil {
		return err
	}
	if len(r.Properties) > 0 {
		b, err := e.properties(r.Properties)
		if err != nil {
			return err
		}
		e.buf = append(e.buf, prefix()...)
		e.buf = append(e.buf, b...)
	}
	if r.ResourceSelector != nil {
		b, err := renderInItem(map[string]any{"resourceSelector": r.ResourceSelector}, true)
		if err != nil {
			return err
		}
		e.buf = append(e.buf, prefix()...)
		e.buf = append(e.buf, b...)
	}
	if len(r.Resources) > 0 {
		e.buf = append(e.buf, prefix()...)
		e.buf = append(e.buf, "resources:\n"...)
		for i := range r.Resources {
			if err := e.ref(&r.Resources[i]); err != nil {
				return err
			}
		}
	}
	if err := str("result", string(r.Result), true); err != nil {
		return err
	}
	if err := str("rule", r.Rule, true); err != nil {
		return err
	}
	if r.Scored {
		e.buf = append(e.buf, prefix()...)
		e.buf = append(e.buf, "scored: "+scalarTrue+"\n"...)
	}
	if err := str("severity", string(r.Severity), true); err != nil {
		return err
	}
	if err := str("source", r.Source, false); err != nil {
		return err
	}
	e.buf = append(e.buf, prefix()...)
	e.buf = append(e.buf, "timestamp:\n"+nextRef+"nanos: "...)
	e.buf = strconv.AppendInt(e.buf, int64(r.Timestamp.Nanos), 10)
	e.buf = append(e.buf, "\n"+nextRef+"seconds: "...)
	e.buf = strconv.AppendInt(e.buf, r.Timestamp.Seconds, 10)
	e.buf = append(e.buf, '\n')
	_, err := e.w.Write(e.buf)
	return err
}

// ref writes one resource reference of a result.
func (e *itemEncoder) ref(ref *api.ObjectReference) error {
	first := true
	for _, kv := range [...]struct{ k, v string }{
		{"apiVersion", ref.APIVersion}, {"fieldPath", ref.FieldPath}, {"kind", ref.Kind}, {"name", ref.Name},
		{"namespace", ref.Namespace}, {"resourceVersion", ref.ResourceVersion}, {"uid", ref.UID},
	} {
		if kv.v == "" {
			continue
		}
		b, err := e.scalar(true, kv.k, kv.v)
		if err != nil {
			return err
		}
		if first {
			e.buf = append(e.buf, firstRef...)
			first = false
		} else {
			e.buf = append(e.buf, nextRef...)
		}
		e.buf = append(e.buf, b...)
	}
	if first {
		e.buf = append(e.buf, firstRef+"{}\n"...)
	}
	return nil
}

// scalar renders "key: value" (with its continuation lines) as a key of a
// result (nested false) or of a resource reference (nested true).
func (e *itemEncoder) scalar(nested bool, key, value string) ([]byte, error) {
	if plainSafe(value) {
		e.tmp = append(append(append(e.tmp[:0], key...), ": "...), value...)
		e.tmp = append(e.tmp, '\n')
		return e.tmp, nil
	}
	keyCol := 2 // a result's keys follow "- "
	if nested {
		keyCol = 4 // a reference's keys follow "  - "
	}
	if b, ok := appendKeyString(e.tmp[:0], keyCol, key, value); ok {
		e.tmp = b
		return b, nil
	}
	k := scalarKey{nested, key, value}
	if b, ok := e.scalars.m[k]; ok {
		return b, nil
	}
	var b []byte
	var err error
	if nested {
		b, err = renderInRef(key, value)
	} else {
		b, err = renderInItem(map[string]any{key: value}, false)
	}
	if err != nil {
		return nil, err
	}
	e.scalars.put(k, len(key)+len(value), b)
	return b, nil
}

// plainSafe is yamltext.PlainSafe.
func plainSafe(s string) bool { return yamltext.PlainSafe(s) }

// properties renders the properties of a result, cached by content.
func (e *itemEncoder) properties(props map[string]string) ([]byte, error) {
	keys := make([]string, 0, len(props))
	letters := true
	for k := range props {
		keys = append(keys, k)
		letters = letters && asciiLetters(k)
	}
	slices.Sort(keys)
	if letters {
		// yaml.v2 sorts keys made of letters as strings
		b := append(e.tmp[:0], "properties:\n"...)
		ok := true
		for _, k := range keys {
			b = append(b, "    "...)
			if b, ok = appendKeyString(b, 4, k, props[k]); !ok {
				break
			}
		}
		e.tmp = b
		if ok {
			return b, nil
		}
	}
	var id strings.Builder
	for _, k := range keys {
		id.WriteString(k)
		id.WriteByte(0)
		id.WriteString(props[k])
		id.WriteByte(0)
	}
	if b, ok := e.props.m[id.String()]; ok {
		return b, nil
	}
	m := make(map[string]any, len(props))
	for k, v := range props {
		m[k] = v
	}
	b, err := renderInItem(map[string]any{"properties": m}, false)
	if err != nil {
		return nil, err
	}
	e.props.put(id.String(), id.Len(), b)
	return b, nil
}

// renderInItem renders a one-key map as the key of a sequence item at
// column 0 and returns it without the item's "- ". With viaJSON the value
// goes through JSON first, as sigs.k8s.io/yaml does with typed values.
func renderInItem(m map[string]any, viaJSON bool) ([]byte, error) {
	var item any = m
	if viaJSON {
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		if err := goyaml.Unmarshal(raw, &item); err != nil {
			return nil, err
		}
	}
	b, err := goyaml.Marshal(map[string]any{"r": []any{item}})
	if err != nil {
		return nil, err
	}
	return cut(b, "r:\n"+firstItem)
}

// renderInRef renders "key: value" as the key of a resource reference and
// returns it without the reference's "  - ".
func renderInRef(key, value string) ([]byte, error) {
	b, err := goyaml.Marshal(map[string]any{"r": []any{map[string]any{"s": []any{map[string]any{key: value}}}}})
	if err != nil {
		return nil, err
	}
	return cut(b, "r:\n"+firstItem+"s:\n"+firstRef)
}

func cut(b []byte, prefix string) ([]byte, error) {
	rest, ok := bytes.CutPrefix(b, []byte(prefix))
	if !ok {
		return nil, fmt.Errorf("report: unexpected YAML layout %q", b)
	}
	return rest, nil
}

// asciiLetters reports whether s is made of ASCII letters only.
func asciiLetters(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}
