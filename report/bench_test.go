package report

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/gavelpolicy/gavel/engine"
)

// benchResults evaluates n Pods (half of them failing) against three
// validate policies and returns n policy results per policy.
func benchResults(b *testing.B, n int) []engine.PolicyResult {
	b.Helper()
	eng := newEngine(b)
	set := eng.NewPolicySet(
		compilePolicy(b, eng, auditPolicy),
		compilePolicy(b, eng, seedSecretsPolicy),
		compilePolicy(b, eng, namespacedAuditPolicy),
	)
	var out []engine.PolicyResult
	for i := 0; i < n; i++ {
		var labels map[string]any
		if i%2 == 0 {
			labels = map[string]any{"team": "a"}
		}
		ns := "default"
		if i%3 == 0 {
			ns = "payments"
		}
		p := pod(ns, fmt.Sprintf("pod-%d", i), fmt.Sprintf("uid-%d", i), "nginx:1.25", labels)
		out = append(out, validate(b, set, p, false)...)
	}
	return out
}

// BenchmarkBuild builds the reports of 1,000 Pods (about 2,300 rule
// results: two ClusterPolicies and a Policy in one of three namespaces).
func BenchmarkBuild(b *testing.B) {
	results := benchResults(b, 1000)
	opts := Options{Clock: fixedClock, AuditWarn: true}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := build(results, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStoreUpdate records the admission results of 1,000 Pods.
func BenchmarkStoreUpdate(b *testing.B) {
	results := benchResults(b, 1000)
	perPod := len(results) / 1000
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s := NewStore(Options{Clock: fixedClock})
		for i := 0; i < 1000; i++ {
			if err := s.Update(fmt.Sprintf("uid-%d", i), results[i*perPod:(i+1)*perPod], false); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkStoreReports renders the reports of 1,000 Pods.
func BenchmarkStoreReports(b *testing.B) {
	results := benchResults(b, 1000)
	perPod := len(results) / 1000
	s := NewStore(Options{Clock: fixedClock})
	for i := 0; i < 1000; i++ {
		if err := s.Update(fmt.Sprintf("uid-%d", i), results[i*perPod:(i+1)*perPod], false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = s.reportObjects()
	}
}

// BenchmarkStoreMemory reports the live heap a Store of the background
// results of 1,000 Pods holds, per entry (the cluster Reporter keeps one
// such Store for every resource the policies match).
func BenchmarkStoreMemory(b *testing.B) {
	results := benchResults(b, 1000)
	perPod := len(results) / 1000
	var keep *Store
	var perEntry float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := NewStore(Options{Clock: fixedClock})
		for i := 0; i < 1000; i++ {
			if err := s.Update(fmt.Sprintf("uid-%d", i), results[i*perPod:(i+1)*perPod], true); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		n := 0
		for _, r := range s.reportObjects() {
			_, res, _ := splitReport(0, r)
			n += len(res)
		}
		perEntry = float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
		keep = s
	}
	runtime.KeepAlive(keep)
	b.ReportMetric(perEntry, "live-B/entry")
}

// BenchmarkStoreRescan records the same background results of 1,000 Pods
// again (a periodic scan of an unchanged cluster) and renders what
// changed: nothing.
func BenchmarkStoreRescan(b *testing.B) {
	results := benchResults(b, 1000)
	perPod := len(results) / 1000
	s := NewStore(Options{Clock: fixedClock})
	scan := func() {
		for i := 0; i < 1000; i++ {
			if err := s.Update(fmt.Sprintf("uid-%d", i), results[i*perPod:(i+1)*perPod], true); err != nil {
				b.Fatal(err)
			}
		}
		for _, k := range s.TakeChanged() {
			_, _ = s.Render(k)
		}
	}
	scan()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		scan()
	}
}
