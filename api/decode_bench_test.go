package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
)

// BenchmarkReadDocuments decodes a stream of 256 small Deployments, which
// ReadDocuments decodes in parallel (up to GOMAXPROCS at a time).
func BenchmarkReadDocuments(b *testing.B) {
	var sb strings.Builder
	for i := range 256 {
		fmt.Fprintf(&sb, `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-%d
  namespace: team-%d
  labels: {app: app-%d, tier: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: app-%d}}
  template:
    metadata: {labels: {app: app-%d}}
    spec:
      containers:
      - name: app
        image: registry.example.com/app:%d
        resources: {limits: {cpu: 500m, memory: 128Mi}}
`, i, i%8, i, i, i, i)
	}
	stream := sb.String()
	b.ReportAllocs()
	for b.Loop() {
		docs, err := api.ReadDocuments(strings.NewReader(stream), "bench.yaml")
		if err != nil || len(docs) != 256 {
			b.Fatalf("%d documents, %v", len(docs), err)
		}
	}
}
