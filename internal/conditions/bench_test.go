package conditions

import "testing"

var benchSink bool

func benchmarkEvaluate(b *testing.B, key any, op Operator, value any) {
	b.Helper()
	b.ReportAllocs()
	for b.Loop() {
		ok, err := Evaluate(key, op, value)
		if err != nil {
			b.Fatal(err)
		}
		benchSink = ok
	}
}

func BenchmarkEquals(b *testing.B) {
	benchmarkEvaluate(b, "backend", Equals, "backend")
}

func BenchmarkEqualsWildcard(b *testing.B) {
	benchmarkEvaluate(b, "foo.mycompany.com", NotEquals, "*.mycompany.com")
}

func BenchmarkEqualsNumber(b *testing.B) {
	benchmarkEvaluate(b, 3.0, Equals, 3.0)
}

func BenchmarkAnyInList(b *testing.B) {
	benchmarkEvaluate(b, []any{"app", "debug", "shell"}, AnyIn, []any{"sidecar", "istio-proxy", "app"})
}

func BenchmarkAllNotInList(b *testing.B) {
	benchmarkEvaluate(b, []any{"app", "debug", "shell"}, AllNotIn, []any{"sidecar", "istio-*", "init"})
}

func BenchmarkNotInLegacy(b *testing.B) {
	benchmarkEvaluate(b, []any{"str1", "str4"}, NotIn, []any{"str1", "str2", "str3"})
}

func BenchmarkAnyInRange(b *testing.B) {
	benchmarkEvaluate(b, 5.0, AnyIn, "1-10")
}

func BenchmarkQuantityLessThan(b *testing.B) {
	benchmarkEvaluate(b, "500Mi", LessThan, "1Gi")
}

func BenchmarkGreaterThanNumber(b *testing.B) {
	benchmarkEvaluate(b, 3.0, GreaterThan, 0.0)
}

func BenchmarkDurationGreaterThan(b *testing.B) {
	benchmarkEvaluate(b, "1h", GreaterThan, "30m")
}

func BenchmarkSemverGreaterThan(b *testing.B) {
	benchmarkEvaluate(b, "1.10.0", GreaterThan, "1.9.2")
}
