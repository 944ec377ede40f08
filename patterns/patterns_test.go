package patterns

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

// TestMatch covers the four outcomes upstream distinguishes: pass, skip,
// fail (with a path) and error (a mismatch without one).
func TestMatch(t *testing.T) {
	for _, tt := range []struct {
		name, pattern, value string
		want                 Result
	}{
		{"plain match", `{"metadata":{"labels":{"team":"?*"}}}`, `{"metadata":{"labels":{"team":"shop"}}}`,
			Result{Matched: true}},
		{"missing field", `{"metadata":{"labels":{"team":"?*"}}}`, `{"metadata":{"labels":{"app":"web"}}}`,
			Result{Path: "/metadata/labels/team/", Reason: "resource value '<nil>' does not match '?*' at path /metadata/labels/team/"}},
		{"operator in a list", `{"spec":{"containers":[{"image":"!*:latest"}]}}`, `{"spec":{"containers":[{"image":"a:1"},{"image":"b:latest"}]}}`,
			Result{Path: "/spec/containers/1/image/", Reason: "resource value 'b:latest' does not match '!*:latest' at path /spec/containers/1/image/"}},
		{"condition anchor skips", `{"(kind)":"Pod","spec":{"x":"1"}}`, `{"kind":"Service","spec":{"x":"2"}}`,
			Result{Skipped: true, Reason: "conditional anchor mismatch: resource value 'Service' does not match 'Pod' at path /kind/"}},
		{"global anchor skips", `{"spec":{"containers":[{"<(image)":"corp.io/*"}],"imagePullSecrets":[{"name":"regcred"}]}}`,
			`{"spec":{"containers":[{"image":"nginx"}]}}`,
			Result{Skipped: true, Reason: "global anchor mismatch: resource value 'nginx' does not match 'corp.io/*' at path /spec/containers/0/image/"}},
		{"negation anchor", `{"spec":{"X(hostNetwork)":"null"}}`, `{"spec":{"hostNetwork":true}}`,
			Result{Path: "/spec/hostNetwork/", Reason: "negation anchor matched in resource: /spec/hostNetwork/ is not allowed"}},
		{"equality anchor absent", `{"spec":{"=(hostPID)":false}}`, `{"spec":{}}`, Result{Matched: true}},
		{"existence anchor", `{"spec":{"^(containers)":[{"name":"sidecar"}]}}`, `{"spec":{"containers":[{"name":"web"},{"name":"sidecar"}]}}`,
			Result{Matched: true}},
		{"error: an anchored key found nowhere", `{"spec":{"^(volumes)":[{"name":"a"}],"x":"1"}}`, `{"spec":{"x":"2"}}`,
			Result{Reason: "resource value '2' does not match '1' at path /spec/x/"}},
		{"scalar quantity range", `"128Mi-512Mi"`, `"1Gi"`,
			Result{Path: "/", Reason: "resource value '1Gi' does not match '128Mi-512Mi' at path /"}},
		{"integers of unstructured objects", `{"spec":{"replicas":">=2"}}`, `{"spec":{"replicas":3}}`, Result{Matched: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile(mustJSON(t, tt.pattern))
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Match(mustJSON(t, tt.value)); got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tt := range []struct {
		pattern any
		want    string
	}{
		{map[string]any{"spec": map[string]any{"x": []string{"a"}}}, "patterns: unsupported pattern value of type []string at /spec/x/"},
		{map[string]string{}, "patterns: unsupported pattern value of type map[string]string at /"},
	} {
		if _, err := Compile(tt.pattern); err == nil || err.Error() != tt.want {
			t.Errorf("Compile(%#v) = %v, want %s", tt.pattern, err, tt.want)
		}
	}
	var nilPattern *Pattern
	if r := nilPattern.Match(nil); r.Matched || !strings.Contains(r.Reason, "nil Pattern") {
		t.Errorf("nil pattern: %+v", r)
	}
}

// TestMatchConcurrent: one compiled pattern serves many goroutines and
// modifies neither the pattern nor the values.
func TestMatchConcurrent(t *testing.T) {
	src := `{"spec":{"containers":[{"(image)":"*:latest","imagePullPolicy":"Always"}]}}`
	pattern := mustJSON(t, src)
	p, err := Compile(pattern)
	if err != nil {
		t.Fatal(err)
	}
	value := mustJSON(t, `{"spec":{"containers":[{"image":"a:latest"},{"image":"b:1"}]}}`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if r := p.Match(value); r.Matched || r.Path != "/spec/containers/0/imagePullPolicy/" {
					t.Errorf("got %+v", r)
					return
				}
			}
		}()
	}
	wg.Wait()
	if b, _ := json.Marshal(pattern); string(b) != src {
		t.Errorf("pattern modified: %s", b)
	}
}

func BenchmarkMatch(b *testing.B) {
	var pattern, value any
	_ = json.Unmarshal([]byte(`{"spec":{"containers":[{"name":"*","image":"!*:latest","resources":{"limits":{"memory":"<=1Gi"}}}]}}`), &pattern)
	_ = json.Unmarshal([]byte(`{"spec":{"containers":[{"name":"web","image":"nginx:1.25","resources":{"limits":{"memory":"512Mi"}}}]}}`), &value)
	p, err := Compile(pattern)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !p.Match(value).Matched {
			b.Fatal("no match")
		}
	}
}
