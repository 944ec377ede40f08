package engine_test

import (
	"context"
	"testing"

	"github.com/gavelpolicy/gavel/engine"
)

// TestMatchReadsMetadataAsUpstream: rules match an object as upstream's
// matching reads it: a Pod its controller creates has only a
// generateName, which names match; a labels or annotations map holding a
// value that is not a string reads as absent (unstructured's GetLabels).
func TestMatchReadsMetadataAsUpstream(t *testing.T) {
	const policy = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: meta
spec:
  rules:
  - name: by-name
    match:
      any:
      - resources:
          kinds: [Pod]
          names: ["web-*"]
    validate:
      message: "m"
      pattern:
        metadata:
          namespace: "?*"
  - name: excluded-by-name
    match:
      any:
      - resources:
          kinds: [Pod]
    exclude:
      any:
      - resources:
          name: "web-*"
    validate:
      message: "m"
      pattern:
        metadata:
          namespace: "?*"
  - name: by-selector
    match:
      any:
      - resources:
          kinds: [Pod]
          selector:
            matchLabels:
              app: x
    validate:
      message: "m"
      pattern:
        metadata:
          namespace: "?*"
  - name: by-annotation
    match:
      any:
      - resources:
          kinds: [Pod]
          annotations:
            team: a
    validate:
      message: "m"
      pattern:
        metadata:
          namespace: "?*"
`
	for _, tc := range []struct {
		name, meta string
		applied    []string // the rules that gave a result
	}{
		{"generateName only", "generateName: web-\n  labels:\n    app: x\n  annotations:\n    team: a",
			[]string{"by-name", "by-selector", "by-annotation"}},
		{"name wins over generateName", "name: db-0\n  generateName: web-\n  labels:\n    app: x",
			[]string{"excluded-by-name", "by-selector"}},
		{"a label that is not a string", "name: web-1\n  labels:\n    app: x\n    replicas: 3\n  annotations:\n    team: a",
			[]string{"by-name", "by-annotation"}},
		{"an annotation that is not a string", "name: web-2\n  annotations:\n    team: a\n    weight: 1.5",
			[]string{"by-name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := rbCompile(t, policy)
			pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  namespace: default\n  " + tc.meta + "\nspec:\n  containers:\n  - name: c\n    image: nginx\n"
			resp, err := set.Validate(context.Background(), rbRequest(t, pod))
			if err != nil {
				t.Fatal(err)
			}
			got := rbResults(resp)
			for _, r := range tc.applied {
				if res, ok := got["meta/"+r]; !ok || res.Status != engine.StatusPass {
					t.Errorf("%s: %+v (applied %v), want a pass", r, res.Status, ok)
				}
				delete(got, "meta/"+r)
			}
			for name, res := range got {
				t.Errorf("%s applied (%s), want no result", name, res.Status)
			}
		})
	}
}
