package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cluster"
)

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchDir is the shared bench workload (42 policies of the upstream
// library, 1,000 synthetic Pods), read only when GAVEL_SHARED names the
// shared corpus (as for the root module's tests).
func benchDir(b *testing.B) string {
	dir := os.Getenv("GAVEL_SHARED")
	if dir == "" {
		b.Skip("needs the shared corpus (bench): set GAVEL_SHARED to its directory (.ci/run does)")
	}
	dir = filepath.Join(dir, "bench")
	if _, err := os.Stat(filepath.Join(dir, "pods-1000.yaml")); err != nil {
		b.Skipf("no bench workload: %v", err)
	}
	return dir
}

func readDocs(b *testing.B, path string) []api.Document {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	docs, err := api.ReadDocuments(f, path)
	if err != nil {
		b.Fatal(err)
	}
	return docs
}

// BenchmarkAdmissionReview drives the webhook's HTTP handler with real
// AdmissionReview JSON: the CREATE of each of the 1,000 bench Pods in turn,
// under the 42 bench policies, through /validate/fail and /mutate/fail
// (where the API server sends them: the bench policies are all Fail), with
// the metrics recorded as in the binary. ns/op is the time (on one
// goroutine, the CPU) of one review: decoding, evaluation, the response's
// encoding; the Kubernetes events of the results are recorded as in the
// binary (upstream's defaults: violations only, written at up to 1,000 a
// second to an API server that accepts them). The goal is under 0.3 ms.
func BenchmarkAdmissionReview(b *testing.B) {
	dir := benchDir(b)
	files, _ := filepath.Glob(filepath.Join(dir, "policies", "*.yaml"))
	var policies []*unstructured.Unstructured
	for _, f := range files {
		for _, d := range readDocs(b, f) {
			u := &unstructured.Unstructured{Object: d.Object}
			u.SetGeneration(1)
			policies = append(policies, u)
		}
	}
	var bodies [][]byte
	for i, d := range readDocs(b, filepath.Join(dir, "pods-1000.yaml")) {
		u := unstructured.Unstructured{Object: d.Object}
		raw, _ := json.Marshal(d.Object)
		f := false
		body, _ := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{
				UID: types.UID(string(rune('a'+i%26)) + "-bench"), Operation: admissionv1.Create,
				Name: u.GetName(), Namespace: u.GetNamespace(),
				Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
				Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
				UserInfo: authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:replicaset-controller", Groups: []string{"system:serviceaccounts"}},
				Object:   runtime.RawExtension{Raw: raw},
				DryRun:   &f,
			},
		})
		bodies = append(bodies, body)
	}
	for _, events := range []struct {
		name string
		omit []string
	}{
		// the events' cost, within one binary: none recorded, then
		// upstream's defaults
		{"events=off", []string{cluster.EventReasonPolicyViolation, cluster.EventReasonPolicyError, cluster.EventReasonPolicyApplied, cluster.EventReasonPolicySkipped}},
		{"events=on", nil},
	} {
		b.Run(events.name, func(b *testing.B) {
			// built here: a filtered-out variant builds no replica
			r := newReplicaOpts(b, cluster.Options{Events: cluster.EventOptions{Omit: events.omit}}, policies...)
			if n := len(r.src.Set().Policies()); n != 42 {
				b.Fatalf("%d policies compiled, want 42: %v", n, r.src.Errors())
			}
			m, err := cluster.NewMetrics(prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			r.wh.metrics = m
			r.wh.log = slog.New(slog.NewTextHandler(io.Discard, nil))
			benchReviews(b, r, bodies)
		})
	}
}

// benchReviews sends the reviews of bodies to /validate/fail and
// /mutate/fail of r.
func benchReviews(b *testing.B, r *replica, bodies [][]byte) {
	h := r.wh.handler()
	for _, path := range []string{"/validate/fail", "/mutate/fail"} {
		b.Run(path[1:], func(b *testing.B) {
			b.ReportAllocs()
			cpu0, ev0 := cpuTime(), r.events.Load()
			n := 0
			for i := 0; b.Loop(); i++ {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(bodies[i%len(bodies)])))
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", path, rec.Code, rec.Body.String())
				}
				n++
			}
			// the process's CPU time per review (the garbage collector's
			// work on the other core included): on a shared machine the
			// wall time of ns/op also counts the time others ran
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(n), "cpu-ns/op")
			// the Kubernetes events written (at most EventOptions.QPS a
			// second; the others dropped)
			b.ReportMetric(float64(r.events.Load()-ev0)/float64(n), "events/op")
		})
	}
}
