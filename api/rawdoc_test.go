package api_test

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
)

// TestDocumentReaderMatchesReadDocuments reads streams one raw document at
// a time and decodes each: the documents are those ReadDocuments gives,
// with the same sources and indexes.
func TestDocumentReaderMatchesReadDocuments(t *testing.T) {
	streams := map[string]string{
		"plain":    "a: 1\n---\nb: 2\n",
		"empty":    "---\n# only a comment\n---\n\n---\nkind: Pod\nmetadata:\n  name: x\n",
		"list":     "apiVersion: v1\nkind: List\nitems:\n- kind: Pod\n  metadata: {name: a}\n- kind: Pod\n  metadata: {name: b}\n---\nkind: Namespace\n",
		"json":     "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"j\"}}\n",
		"no final": "kind: Pod\n---\nkind: Service",
		"null":     "kind: A\n---\n~\n---\nkind: B\n",
	}
	for name, src := range streams {
		want, err := api.ReadDocuments(strings.NewReader(src), "s.yaml")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got []api.Document
		dr := api.NewDocumentReader(strings.NewReader(src), "s.yaml")
		for {
			raw, err := dr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			docs, err := raw.Decode()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got = append(got, docs...)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
	}
}

// TestRawDocumentErrors: a malformed document is a DecodeError naming the
// source and the index among the non-empty documents.
func TestRawDocumentErrors(t *testing.T) {
	dr := api.NewDocumentReader(strings.NewReader("---\n# c\n---\nkind: A\n---\nkind: [\n---\nkind: List\nitems: [1]\n"), "bad.yaml")
	var errs []string
	for {
		raw, err := dr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Decode(); err != nil {
			var de *api.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("%T is not a DecodeError", err)
			}
			errs = append(errs, err.Error()[:len("bad.yaml[1]")])
		}
	}
	if want := []string{"bad.yaml[1]", "bad.yaml[2]"}; !reflect.DeepEqual(errs, want) {
		t.Errorf("errors at %v, want %v", errs, want)
	}
}

func TestRawDocumentMayBeKind(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"kind: Pod\n", false},
		{"kind: PolicyException\n", true},
		{"kind: List\nitems:\n- kind: PolicyException\n", true},
		{"kind: \"Polic\\x79Exception\"\n", true}, // an escape may spell it
		{"{\"kind\": \"\\u0050olicyException\"}", true},
		{"metadata:\n  annotations:\n    a: PolicyException\nkind: Pod\n", true}, // a mention is enough
	} {
		d := api.RawDocument{Bytes: []byte(tc.text)}
		if got := d.MayBeKind("PolicyException"); got != tc.want {
			t.Errorf("MayBeKind(%q) = %v, want %v", tc.text, got, tc.want)
		}
		// whenever it says false, the decoded document is of another kind
		if docs, err := d.Decode(); err == nil && !tc.want {
			for _, doc := range docs {
				if doc.Kind() == "PolicyException" {
					t.Errorf("%q decodes to a PolicyException", tc.text)
				}
			}
		}
	}
}
