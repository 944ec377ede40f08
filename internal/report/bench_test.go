package report

import (
	"fmt"
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
		if _, err := Build(results, opts); err != nil {
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
		_ = s.Reports()
	}
}
