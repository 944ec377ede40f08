package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"
)

// Document is one YAML or JSON document read from a stream.
type Document struct {
	// Source names the stream, usually a file path.
	Source string
	// Index is the 0-based position of the document in its stream.
	Index int
	// Object is the decoded document.
	Object map[string]any
}

// APIVersion returns the document's apiVersion.
func (d Document) APIVersion() string { s, _ := d.Object["apiVersion"].(string); return s }

// Kind returns the document's kind.
func (d Document) Kind() string { s, _ := d.Object["kind"].(string); return s }

// Name returns metadata.name.
func (d Document) Name() string {
	m, _ := d.Object["metadata"].(map[string]any)
	s, _ := m["name"].(string)
	return s
}

// String names the document for messages: "file.yaml[2] ClusterPolicy/name".
func (d Document) String() string {
	s := fmt.Sprintf("%s[%d]", d.Source, d.Index)
	if k := d.Kind(); k != "" {
		s += " " + k
		if n := d.Name(); n != "" {
			s += "/" + n
		}
	}
	return s
}

// DecodeError is a document that could not be decoded.
type DecodeError struct {
	Source string
	Index  int
	// Object names the object ("ClusterPolicy/x") when known.
	Object string
	// Field is the field path when the error concerns one field.
	Field string
	Err   error
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s[%d]", e.Source, e.Index)
	if e.Object != "" {
		b.WriteString(" " + e.Object)
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *DecodeError) Unwrap() error { return e.Err }

// ReadDocuments splits a YAML or JSON stream into documents and decodes each
// into a JSON-like tree. Empty documents are dropped; a top-level "List"
// (kind: List, or any document with an items array and kind ending in
// "List") is expanded into its items. Malformed documents give a
// *DecodeError naming source and index.
func ReadDocuments(r io.Reader, source string) ([]Document, error) {
	dr := NewDocumentReader(r, source)
	var raws []RawDocument
	var readErr error
	for {
		raw, err := dr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			readErr = err
			break
		}
		raws = append(raws, raw)
	}
	decoded := decodeAll(raws)
	var docs []Document
	for _, d := range decoded {
		if d.err != nil {
			return docs, d.err
		}
		docs = append(docs, d.docs...)
	}
	return docs, readErr
}

// RawDocument is one document of a stream, split from the others but not
// decoded.
type RawDocument struct {
	// Source names the stream, Index is the position of the document
	// among the stream's documents that are not empty.
	Source string
	Index  int
	// Bytes is the text of the document.
	Bytes []byte
}

// Decode decodes the document as ReadDocuments does: into one Document,
// into the items of a List, or into none for a null document.
func (d RawDocument) Decode() ([]Document, error) {
	obj, err := decodeOne(d.Bytes)
	if err != nil {
		return nil, &DecodeError{Source: d.Source, Index: d.Index, Err: err}
	}
	if obj == nil {
		return nil, nil
	}
	items, ok := listItems(obj)
	if !ok {
		return []Document{{Source: d.Source, Index: d.Index, Object: obj}}, nil
	}
	docs := make([]Document, 0, len(items))
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, &DecodeError{Source: d.Source, Index: d.Index, Err: errors.New("list item is not an object")}
		}
		docs = append(docs, Document{Source: d.Source, Index: d.Index, Object: m})
	}
	return docs, nil
}

// MayBeKind reports whether the document may decode to an object of one
// of the kinds (or a List holding one), without decoding it: false only
// when no kind's name appears in its text and the text has no escape
// sequence (a backslash) that could spell one. YAML has no other way to
// write a scalar than with its characters, an escape, or an alias of an
// anchor in the same document.
func (d RawDocument) MayBeKind(kinds ...string) bool {
	if bytes.IndexByte(d.Bytes, '\\') >= 0 {
		return true
	}
	for _, k := range kinds {
		if bytes.Contains(d.Bytes, []byte(k)) {
			return true
		}
	}
	return false
}

// DocumentReader reads the documents of a YAML or JSON stream one at a
// time without decoding them, so that a long stream need not be in memory
// at once. It splits as the YAMLReader of k8s.io/apimachinery (which
// upstream's CLI uses) does: a line that starts with "---" ends a
// document, and only spaces or a comment may follow the dashes; a first
// separator stays in the document it opens; "\r\n" line ends become "\n".
type DocumentReader struct {
	r      *bufio.Reader
	source string
	index  int
	err    error
	// hint is the size of the last document, the capacity of the next
	hint int
}

// NewDocumentReader returns a reader of the documents of r; source names
// r in errors.
func NewDocumentReader(r io.Reader, source string) *DocumentReader {
	return &DocumentReader{r: bufio.NewReaderSize(r, 64<<10), source: source, hint: 4 << 10}
}

// Next returns the next document that is not empty (blank, or only
// comments and separators), or io.EOF after the last one. A read error or
// a malformed separator is a *DecodeError naming the source and the index
// the document would have.
func (dr *DocumentReader) Next() (RawDocument, error) {
	for dr.err == nil {
		raw, err := dr.split()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				err = &DecodeError{Source: dr.source, Index: dr.index, Err: err}
			}
			dr.err = err
			if len(raw) == 0 {
				break
			}
		}
		if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || isOnlyComments(trimmed) {
			continue
		}
		d := RawDocument{Source: dr.source, Index: dr.index, Bytes: raw}
		dr.index++
		return d, nil
	}
	return RawDocument{}, dr.err
}

// split reads the next document. At the end of the stream it returns the
// last document, if any, with io.EOF.
func (dr *DocumentReader) split() ([]byte, error) {
	buf := make([]byte, 0, dr.hint)
	for {
		line := len(buf)
		var err error
		for {
			var chunk []byte
			chunk, err = dr.r.ReadSlice('\n')
			buf = append(buf, chunk...)
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if len(buf) == line { // end of the stream
			dr.hint = max(len(buf), 512)
			return buf, io.EOF
		}
		// the line ends with "\n" ("\r\n" and a missing one included)
		switch {
		case buf[len(buf)-1] != '\n':
			buf = append(buf, '\n')
		case len(buf)-line > 1 && buf[len(buf)-2] == '\r':
			buf = append(buf[:len(buf)-2], '\n')
		}
		if buf[line] == '-' && bytes.HasPrefix(buf[line:], []byte(docSeparator)) {
			rest := strings.TrimSpace(string(buf[line+len(docSeparator):]))
			if rest != "" && rest[0] != '#' {
				return nil, fmt.Errorf("invalid Yaml document separator: %s", rest)
			}
			if line > 0 {
				dr.hint = max(line, 512)
				return buf[:line:line], err
			}
		}
		if err != nil { // io.EOF after a last line without "\n"
			dr.hint = max(len(buf), 512)
			return buf, err
		}
	}
}

// docSeparator starts the line that ends a document.
const docSeparator = "---"

type decoded struct {
	docs []Document
	err  error
}

// decodeAll decodes the documents of a stream, in parallel when there are
// many: each document is decoded on its own.
func decodeAll(raws []RawDocument) []decoded {
	out := make([]decoded, len(raws))
	workers := runtime.GOMAXPROCS(0)
	if workers < 2 || len(raws) < 64 {
		for i, raw := range raws {
			out[i].docs, out[i].err = raw.Decode()
		}
		return out
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, workers) // at most workers at a time
	for i := range raws {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			out[i].docs, out[i].err = raws[i].Decode()
		})
	}
	wg.Wait() // the errors are kept by document
	return out
}

func listItems(obj map[string]any) ([]any, bool) {
	kind, _ := obj["kind"].(string)
	if kind != "List" && !(strings.HasSuffix(kind, "List") && obj["items"] != nil) {
		return nil, false
	}
	items, ok := obj["items"].([]any)
	return items, ok
}

func decodeOne(raw []byte) (map[string]any, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || isOnlyComments(trimmed) {
		return nil, nil
	}
	// Duplicate keys are refused, as kubectl's strict field validation
	// does: with "last one wins" a reviewer could read one value while
	// another one applies.
	var js []byte
	if trimmed[0] == '{' {
		js = trimmed
	} else {
		if m, ok := decodeFast(raw); ok {
			return m, nil
		}
		var err error
		js, err = yaml.YAMLToJSONStrict(raw)
		if err != nil {
			return nil, err
		}
	}
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		return nil, err
	}
	if trimmed[0] == '{' {
		if err := duplicateKey(js); err != nil {
			return nil, err
		}
	}
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("document is a %T, not an object", v)
	}
	return m, nil
}

func isOnlyComments(b []byte) bool {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && !bytes.Equal(line, []byte("---")) {
			return false
		}
	}
	return true
}

// DecodeStrict decodes a document's object into out (a pointer to a struct)
// and reports every field that out's type does not know, with its path, as
// a *DecodeError. Free-form fields (of type any) accept anything.
func DecodeStrict(d Document, out any) error {
	obj := d.Kind()
	if n := d.Name(); n != "" {
		obj += "/" + n
	}
	if unknown := unknownFields(d.Object, reflect.TypeOf(out)); len(unknown) > 0 {
		return &DecodeError{Source: d.Source, Index: d.Index, Object: obj, Field: unknown[0],
			Err: fmt.Errorf("unknown field %q", unknown[0][strings.LastIndex(unknown[0], ".")+1:])}
	}
	raw, err := json.Marshal(d.Object)
	if err != nil {
		return &DecodeError{Source: d.Source, Index: d.Index, Object: obj, Err: err}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &DecodeError{Source: d.Source, Index: d.Index, Object: obj, Field: typeErrorPath(d.Object, reflect.TypeOf(out), te.Field),
				Err: fmt.Errorf("cannot use a %s as %s", te.Value, te.Type)}
		}
		return &DecodeError{Source: d.Source, Index: d.Index, Object: obj, Err: err}
	}
	return nil
}

// unknownFields lists the paths ("spec.rules[0].validate.patern") of the
// fields of v that type t does not declare, sorted.
func unknownFields(v any, t reflect.Type) []string {
	var out []string
	walkUnknown(v, t, "", &out)
	sort.Strings(out)
	return out
}

var unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

type fieldSet struct {
	fields map[string]reflect.Type
	// folded holds the fields by lower-case name: encoding/json matches a
	// key that is not a field name exactly to a field whose name is equal
	// under case folding (upstream's readers accept them, and so do
	// policy tests: "isMUtatingPolicy")
	folded map[string]reflect.Type
	inline bool // has ",inline" map catch-all (not used by gavel types)
}

// field returns the type of the field a key decodes into, as
// encoding/json chooses it: the exact name, else a name equal under case
// folding.
func (fs *fieldSet) field(k string) (reflect.Type, bool) {
	if t, ok := fs.fields[k]; ok {
		return t, true
	}
	t, ok := fs.folded[strings.ToLower(k)]
	return t, ok
}

var fieldCache sync.Map // reflect.Type -> *fieldSet; immutable entries, safe to share

func fieldsOf(t reflect.Type) *fieldSet {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.(*fieldSet)
	}
	fs := &fieldSet{fields: map[string]reflect.Type{}, folded: map[string]reflect.Type{}}
	collectFields(t, fs)
	for name, ft := range fs.fields {
		fs.folded[strings.ToLower(name)] = ft
	}
	fieldCache.Store(t, fs)
	return fs
}

func collectFields(t reflect.Type, fs *fieldSet) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				collectFields(ft, fs)
				continue
			}
		}
		_ = opts
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fs.fields[name] = ft
	}
}

func walkUnknown(v any, t reflect.Type, path string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		fs := fieldsOf(t)
		for k, child := range m {
			ft, ok := fs.field(k)
			if !ok {
				*out = append(*out, joinPath(path, k))
				continue
			}
			walkUnknown(child, ft, joinPath(path, k), out)
		}
	case reflect.Slice:
		s, ok := v.([]any)
		if !ok {
			return
		}
		for i, el := range s {
			walkUnknown(el, t.Elem(), fmt.Sprintf("%s[%d]", path, i), out)
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, child := range m {
			walkUnknown(child, t.Elem(), joinPath(path, k), out)
		}
	}
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// typeErrorPath returns the path, list indices included, of the value that
// encoding/json could not store: its error names the field without indices
// ("spec.rules.match.any.resources.kinds"). The first value, in key order,
// whose JSON type does not fit its Go type and whose path without indices
// is field is reported; field itself when none is found.
func typeErrorPath(v any, t reflect.Type, field string) string {
	found := field
	walkTypes(v, t, "", func(p string) bool {
		if stripIndices(p) == field {
			found = p
			return true
		}
		return false
	})
	return found
}

// walkTypes calls mismatch for each value of v whose JSON type cannot be
// decoded into its Go type; it stops when mismatch returns true.
func walkTypes(v any, t reflect.Type, path string, mismatch func(string) bool) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) {
		return false
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return mismatch(path)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft := t
			if t.Kind() == reflect.Map {
				ft = t.Elem()
			} else if ft, ok = fieldsOf(t).field(k); !ok {
				continue
			}
			if walkTypes(m[k], ft, joinPath(path, k), mismatch) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		if _, ok := v.(string); ok && t.Elem().Kind() == reflect.Uint8 {
			return false
		}
		s, ok := v.([]any)
		if !ok {
			return mismatch(path)
		}
		for i, el := range s {
			if walkTypes(el, t.Elem(), fmt.Sprintf("%s[%d]", path, i), mismatch) {
				return true
			}
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			return mismatch(path)
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return mismatch(path)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		if _, ok := v.(float64); !ok {
			return mismatch(path)
		}
	}
	return false
}

// stripIndices removes the list indices of a path: "a[0].b[12]" -> "a.b".
func stripIndices(p string) string {
	if !strings.Contains(p, "[") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '[' {
			for i < len(p) && p[i] != ']' {
				i++
			}
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// duplicateKey reports the first object key that appears twice in a JSON
// document (which encoding/json accepts, keeping the last value).
func duplicateKey(js []byte) error {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	return duplicateKeyIn(dec, "")
}

func duplicateKeyIn(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			if seen[k] {
				return fmt.Errorf("duplicate key %q at %s", k, joinPath(path, k))
			}
			seen[k] = true
			if err := duplicateKeyIn(dec, joinPath(path, k)); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := duplicateKeyIn(dec, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	return nil
}
