package api_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/gavelpolicy/gavel/internal/policykey"
	"reflect"
	"testing"

	"github.com/gavelpolicy/gavel/api"
)

// FuzzReadDocuments reads fuzzed YAML or JSON streams (seeds: policies,
// exceptions and resources of the conformance corpus, under
// testdata/fuzz/FuzzReadDocuments) and decodes every policy and exception
// in them. Nothing may panic; failures are *DecodeError values naming the
// source; decoding never modifies the document; a decoded policy survives
// a JSON round trip.
func FuzzReadDocuments(f *testing.F) {
	f.Add([]byte("apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: p\nspec:\n  rules: []\n"))
	f.Add([]byte(`{"apiVersion":"kyverno.io/v2","kind":"PolicyException","metadata":{"name":"x"},"spec":{"exceptions":[{"policyName":"p","ruleNames":["*"]}],"match":{}}}`))
	f.Add([]byte("kind: List\nitems:\n- apiVersion: kyverno.io/v1\n  kind: Policy\n  metadata: {name: a}\n---\n# c\n---\n"))
	f.Add([]byte("a: &a [1, *a]\n"))
	f.Add([]byte("spec: !!binary aGk=\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		docs, err := api.ReadDocuments(bytes.NewReader(data), "fuzz.yaml")
		if err != nil {
			var de *api.DecodeError
			if !errors.As(err, &de) || de.Source != "fuzz.yaml" || err.Error() == "" {
				t.Fatalf("ReadDocuments error %T %v is not a *DecodeError naming the source", err, err)
			}
		}
		for _, d := range docs {
			_ = d.String()
			before, err := json.Marshal(d.Object)
			if err != nil {
				t.Fatalf("document %s cannot be marshalled: %v", d, err)
			}
			var out any
			obj, err := api.DecodeObject(d)
			switch p := obj.(type) {
			case *api.PolicyException, *api.CELPolicyException:
				out = p
			case api.PolicyObject:
				if cp, ok := p.(api.ClassicPolicy); (ok && cp.GetSpec() == nil) || policykey.Key(p) == "" && p.GetName() != "" {
					t.Fatalf("decoded policy without spec or key")
				}
				out = p
			default:
				var ue *api.UnknownKindError
				if err != nil && !errors.As(err, &ue) {
					checkDecodeError(t, err)
				}
			}
			after, _ := json.Marshal(d.Object)
			if !bytes.Equal(before, after) {
				t.Fatalf("decoding modified the document")
			}
			if out == nil {
				continue
			}
			raw, err := json.Marshal(out)
			if err != nil {
				t.Fatalf("decoded object cannot be marshalled: %v", err)
			}
			again := reflect.New(reflect.TypeOf(out).Elem()).Interface()
			if err := json.Unmarshal(raw, again); err != nil {
				t.Fatalf("decoded object does not round trip: %v", err)
			}
		}
	})
}

func checkDecodeError(t *testing.T, err error) {
	t.Helper()
	var de *api.DecodeError
	if !errors.As(err, &de) || de.Source != "fuzz.yaml" {
		t.Fatalf("decode error %T %v is not a *DecodeError naming the source", err, err)
	}
}
