package main

import (
	"io"
	"testing"
)

func BenchmarkApplyProbe(b *testing.B) {
	for b.Loop() {
		run([]string{"apply", "../../../shared/bench/policies", "--resource", "../../../shared/bench/pods-1000.yaml", "--policy-report"}, nil, io.Discard, io.Discard)
	}
}
