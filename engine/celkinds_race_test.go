package engine_test

import (
	"context"
	"sync"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// TestCELKindsConcurrent evaluates one set from many goroutines (run
// with -race): the lazy programs of Pod controller variants, the
// exceptions' compiled conditions and the request states are shared
// or reused across calls.
func TestCELKindsConcurrent(t *testing.T) {
	policies, pods := loadBenchPolicies(t, "policies-vpol")
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(policies...)
	if err != nil {
		t.Fatal(err)
	}
	deploy := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "d", "namespace": "n"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}}}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				obj := pods[(g*20+i)%len(pods)]
				if i%3 == 0 {
					obj = deploy
				}
				resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: obj})
				if err != nil {
					t.Error(err)
					return
				}
				n := 0
				for range resp.Rules() {
					n++
				}
				if n == 0 {
					t.Error("no results")
				}
			}
		}()
	}
	wg.Wait()
}
