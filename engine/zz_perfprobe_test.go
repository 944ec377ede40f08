package engine_test

import (
	"context"
	"encoding/json"
	"github.com/gavelpolicy/gavel/loader"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

func BenchmarkPerPolicyProbe(b *testing.B) {
	policies, pods := loadBench(b)
	eng, _ := engine.New()
	for _, p := range policies {
		set, err := eng.Compile(p)
		if err != nil {
			b.Fatal(err)
		}
		for _, mut := range []bool{false, true} {
			name := "V"
			if mut {
				name = "M"
			}
			b.Run(name+"/"+p.GetName(), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					req := &engine.Request{Operation: api.Create, Object: pods[i%len(pods)]}
					i++
					if mut {
						set.Mutate(context.Background(), req)
					} else {
						set.Validate(context.Background(), req)
					}
				}
			})
		}
	}
}

func TestDumpProbe(t *testing.T) {
	b := &testing.B{}
	_ = b
	policies, pods := loadBenchT(t)
	eng, _ := engine.New()
	set, err := eng.Compile(policies...)
	if err != nil {
		t.Fatal(err)
	}
	var out []any
	for _, pod := range pods {
		m, err := set.Mutate(context.Background(), &engine.Request{Operation: api.Create, Object: pod})
		if err != nil {
			t.Fatal(err)
		}
		v, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: m.Resource})
		if err != nil {
			t.Fatal(err)
		}
		g, err := set.Generate(context.Background(), &engine.Request{Operation: api.Create, Object: m.Resource})
		if err != nil {
			t.Fatal(err)
		}
		rules := func(r *engine.Response) (o []any) {
			for _, p := range r.Policies {
				o = append(o, p.Policy.Name(), p.FailureAction, p.Rules)
			}
			return
		}
		out = append(out, m.Resource, string(m.Patch), rules(m), rules(v), rules(g))
	}
	raw, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile("/tmp/perf/dump.json", raw, 0o644)
}

func loadBenchT(t *testing.T) ([]api.PolicyObject, []map[string]any) {
	ps, err := loader.Load(filepath.Join(benchDir, "policies"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := loader.Load(filepath.Join(benchDir, "pods-1000.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pods []map[string]any
	for _, d := range rs.Resources {
		pods = append(pods, d.Object)
	}
	return ps.Policies, pods
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkCPUProbe(b *testing.B) {
	policies, pods := loadBench(b)
	eng, _ := engine.New()
	set, err := eng.Compile(policies...)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"V", "M"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			runtime.GC()
			start := cpuNow()
			i := 0
			for b.Loop() {
				req := &engine.Request{Operation: api.Create, Object: pods[i%len(pods)]}
				i++
				if mode == "M" {
					set.Mutate(context.Background(), req)
				} else {
					set.Validate(context.Background(), req)
				}
			}
			b.ReportMetric(float64(cpuNow()-start)/float64(b.N)/1000, "cpu-µs/op")
		})
	}
}
