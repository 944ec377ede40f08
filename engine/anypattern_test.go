package engine_test

import (
	"context"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// TestAnyPatternMessages pins the messages of anyPattern rules: failures
// at a path after the rule's message (with or without a final period, or
// none), skips of conditional anchors joined alone, and failures listed
// without the skips when both happen.
func TestAnyPatternMessages(t *testing.T) {
	const pod = `
apiVersion: v1
kind: Pod
metadata:
  name: p
  labels:
    app: web
spec:
  hostNetwork: true
  containers:
  - name: a
    image: nginx:latest
`
	head := func(message string) string {
		return `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: anyp
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
` + message + `
      anyPattern:
`
	}
	const twoFailures = `
      - spec:
          hostNetwork: false
      - metadata:
          labels:
            app: db
`
	const twoSkips = `
      - spec:
          (dnsPolicy): None
          hostNetwork: false
      - metadata:
          (name): q
          labels:
            app: db
`
	const skipAndFailure = `
      - spec:
          (dnsPolicy): None
          hostNetwork: false
      - metadata:
          labels:
            app: db
`
	for _, tc := range []struct {
		name, message, patterns string
		status                  engine.Status
		want                    string
	}{
		{"message with period", `      message: "Use the pod network."`, twoFailures, engine.StatusFail,
			"validation error: Use the pod network. rule r[0] failed at path /spec/hostNetwork/ rule r[1] failed at path /metadata/labels/app/"},
		{"message without period", `      message: "Use the pod network"`, twoFailures, engine.StatusFail,
			"validation error: Use the pod network. rule r[0] failed at path /spec/hostNetwork/ rule r[1] failed at path /metadata/labels/app/"},
		{"no message", "", twoFailures, engine.StatusFail,
			"validation error: rule r[0] failed at path /spec/hostNetwork/ rule r[1] failed at path /metadata/labels/app/"},
		{"skips", `      message: "m"`, twoSkips, engine.StatusSkip,
			"rule r[0] skipped: conditional anchor mismatch: conditional anchor key doesn't exist in the resource rule r[1] skipped: conditional anchor mismatch: resource value 'p' does not match 'q' at path /metadata/name/"},
		{"a skip and a failure", `      message: "m"`, skipAndFailure, engine.StatusFail,
			"validation error: m. rule r[1] failed at path /metadata/labels/app/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := rbCompile(t, head(tc.message)+tc.patterns)
			resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: rbObject(t, pod)})
			if err != nil {
				t.Fatal(err)
			}
			got := rbResults(resp)["anyp/r"]
			if got.Status != tc.status || got.Message != tc.want {
				t.Errorf("got %s %q\nwant %s %q", got.Status, got.Message, tc.status, tc.want)
			}
		})
	}
}
