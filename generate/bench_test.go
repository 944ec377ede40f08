package generate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/generate"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
)

// BenchmarkProcess processes the UpdateRequest of a new Namespace: two
// downstream resources written to the in-memory cluster.
func BenchmarkProcess(b *testing.B) {
	s := &loader.Set{}
	if err := s.Read(strings.NewReader(dataPolicy(true, false, "a", true)), "policy.yaml"); err != nil {
		b.Fatal(err)
	}
	cluster := inmem.New()
	eng, err := engine.New(engine.WithClient(cluster))
	if err != nil {
		b.Fatal(err)
	}
	set, err := eng.Compile(s.Policies...)
	if err != nil {
		b.Fatal(err)
	}
	ctrl := generate.NewController(set, cluster)
	ctx := context.Background()
	const name = "team-a"
	cluster.Add(namespace(name, map[string]any{"env": "prod"}))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		_ = cluster.Delete(ctx, "v1", "ConfigMap", name, "zk-kafka-address")
		_ = cluster.Delete(ctx, "v1", "ConfigMap", name, "keep")
		b.StartTimer()
		ur := &api.UpdateRequest{Spec: api.UpdateRequestSpec{Type: api.URGenerate, Policy: "zk-kafka-address", RuleContext: []api.RuleContext{
			{Rule: "k-kafka-address", Trigger: api.ResourceSpec{APIVersion: "v1", Kind: "Namespace", Name: name}},
			{Rule: "keep", Trigger: api.ResourceSpec{APIVersion: "v1", Kind: "Namespace", Name: name}},
		}}}
		if err := ctrl.Process(ctx, ur); err != nil || ur.Status.State != api.URCompleted {
			b.Fatal(err, ur.Status)
		}
	}
}
