package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
)

const genBenchPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: add-ns-quota
spec:
  rules:
  - name: generate-resourcequota
    match:
      any:
      - resources:
          kinds: [Namespace]
    exclude:
      any:
      - resources:
          namespaces: [kube-system]
    generate:
      apiVersion: v1
      kind: ResourceQuota
      name: default-resourcequota
      synchronize: true
      namespace: "{{request.object.metadata.name}}"
      data:
        metadata:
          labels:
            team: "{{request.object.metadata.labels.team}}"
        spec:
          hard:
            requests.cpu: '4'
            requests.memory: '16Gi'
  - name: generate-networkpolicy
    match:
      any:
      - resources:
          kinds: [Namespace]
    generate:
      apiVersion: networking.k8s.io/v1
      kind: NetworkPolicy
      name: default-deny
      namespace: "{{request.object.metadata.name}}"
      data:
        spec:
          podSelector: {}
          policyTypes: [Ingress, Egress]
`

// BenchmarkGenerate_Namespace evaluates two data generate rules on a new
// Namespace, with and without a cluster client (which is asked whether the
// downstream objects exist).
func BenchmarkGenerate_Namespace(b *testing.B) {
	s := &loader.Set{}
	if err := s.Read(strings.NewReader(genBenchPolicy), "policy.yaml"); err != nil {
		b.Fatal(err)
	}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "team-a", "labels": map[string]any{"team": "a"}}}
	for _, bc := range []struct {
		name string
		opts []engine.Option
	}{
		{"no-client", nil},
		{"inmem-client", []engine.Option{engine.WithClient(inmem.New())}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			eng, err := engine.New(bc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			set, err := eng.Compile(s.Policies...)
			if err != nil {
				b.Fatal(err)
			}
			req := &engine.Request{Operation: api.Create, Object: ns}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				resp, err := set.Generate(ctx, req)
				if err != nil || len(resp.Policies[0].Rules) != 2 {
					b.Fatal(err)
				}
			}
		})
	}
}
