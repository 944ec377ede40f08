package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"sync"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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
	reader := utilyaml.NewYAMLReader(bufio.NewReaderSize(r, 64<<10))
	var docs []Document
	for index := 0; ; index++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return docs, &DecodeError{Source: source, Index: index, Err: err}
		}
		obj, err := decodeOne(raw)
		if err != nil {
			return docs, &DecodeError{Source: source, Index: index, Err: err}
		}
		if obj == nil {
			index--
			continue
		}
		if items, ok := listItems(obj); ok {
			for _, it := range items {
				m, ok := it.(map[string]any)
				if !ok {
					return docs, &DecodeError{Source: source, Index: index, Err: errors.New("list item is not an object")}
				}
				docs = append(docs, Document{Source: source, Index: index, Object: m})
			}
			continue
		}
		docs = append(docs, Document{Source: source, Index: index, Object: obj})
	}
	return docs, nil
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
	var js []byte
	if trimmed[0] == '{' {
		js = trimmed
	} else {
		var err error
		js, err = yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, err
		}
	}
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		return nil, err
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
	for _, line := range bytes.Split(b, []byte("\n")) {
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
	if unknown := UnknownFields(d.Object, reflect.TypeOf(out)); len(unknown) > 0 {
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
			return &DecodeError{Source: d.Source, Index: d.Index, Object: obj, Field: te.Field,
				Err: fmt.Errorf("cannot use a %s as %s", te.Value, te.Type)}
		}
		return &DecodeError{Source: d.Source, Index: d.Index, Object: obj, Err: err}
	}
	return nil
}

// UnknownFields lists the paths ("spec.rules[0].validate.patern") of the
// fields of v that type t does not declare, sorted.
func UnknownFields(v any, t reflect.Type) []string {
	var out []string
	walkUnknown(v, t, "", &out)
	sort.Strings(out)
	return out
}

var unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

type fieldSet struct {
	fields map[string]reflect.Type
	inline bool // has ",inline" map catch-all (not used by gavel types)
}

var fieldCache sync.Map // reflect.Type -> *fieldSet; immutable entries, safe to share

func fieldsOf(t reflect.Type) *fieldSet {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.(*fieldSet)
	}
	fs := &fieldSet{fields: map[string]reflect.Type{}}
	collectFields(t, fs)
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
			ft, ok := fs.fields[k]
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
