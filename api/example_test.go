package api_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gavelpolicy/gavel/api"
)

// ExampleDocumentReader reads a stream one document at a time, decoding
// only the documents that may be PolicyExceptions.
func ExampleDocumentReader() {
	stream := `apiVersion: v1
kind: Pod
metadata:
  name: web
---
# a comment only: not a document
---
apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: allow-web
`
	dr := api.NewDocumentReader(strings.NewReader(stream), "stream.yaml")
	for {
		raw, err := dr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			panic(err)
		}
		if !raw.MayBeKind("PolicyException") {
			fmt.Printf("%s[%d]: skipped\n", raw.Source, raw.Index)
			continue
		}
		docs, err := raw.Decode()
		if err != nil {
			panic(err)
		}
		for _, d := range docs {
			fmt.Println(d)
		}
	}
	// Output:
	// stream.yaml[0]: skipped
	// stream.yaml[1] PolicyException/allow-web
}
