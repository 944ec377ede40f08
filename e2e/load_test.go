//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/e2e/internal/testcluster"
)

func sharedDir() string {
	if d := os.Getenv("SHARED"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "shared")
}

// TestLoad creates thousands of Pods through the API server with the 42
// bench policies and reads the latency the webhook adds from the API
// server's admission webhook metrics.
func TestLoad(t *testing.T) {
	e := suite
	ctx := context.Background()
	bench := filepath.Join(sharedDir(), "bench")
	if _, err := os.Stat(bench); err != nil {
		t.Skipf("no bench folder: %v", err)
	}
	// a fresh webhook and controller with only the bench policies; no
	// webhook is registered meanwhile
	e.stopGavel()
	_ = e.Dynamic.Resource(clusterPolicies).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	// the bench policies go with the test: the next tests' objects are
	// not the synthetic Pods they are written for
	t.Cleanup(func() {
		_ = e.Dynamic.Resource(clusterPolicies).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	files, _ := filepath.Glob(filepath.Join(bench, "policies", "*.yaml"))
	for _, f := range files {
		if err := e.ApplyFile(ctx, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	// the Pods, in namespaces of their own
	pf, err := os.Open(filepath.Join(bench, "pods-1000.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := api.ReadDocuments(bufio.NewReader(pf), "pods-1000.yaml")
	pf.Close()
	if err != nil {
		t.Fatal(err)
	}
	n := 3000
	if v, err := strconv.Atoi(os.Getenv("GAVEL_E2E_PODS")); err == nil && v > 0 {
		n = v
	}
	namespaces := map[string]bool{}
	for _, d := range docs {
		u := unstructured.Unstructured{Object: d.Object}
		namespaces["load-"+u.GetNamespace()] = true
	}
	for ns := range namespaces {
		e.namespace(t, ns, nil)
	}
	port, _ := freePort()
	url := fmt.Sprintf("https://127.0.0.1:%d", port)
	wh := e.gavel(t, "webhook-load", "-controller=false", "-listen", fmt.Sprintf("127.0.0.1:%d", port))
	// the leader writes the webhook configurations the policies need
	// (all Fail: validate.gavel.io-fail, mutate.gavel.io-fail)
	ctrl := e.gavel(t, "controller-load", "-webhook=false", "-scan-interval", "10s", "-webhook-url", url)
	waitLog(t, wh, "policies=42")
	eventually(t, 60*time.Second, "the webhooks of the bench policies", func() bool {
		return strings.Contains(strings.Join(e.webhookNames(), " "), "validate.gavel.io-fail")
	})
	t.Cleanup(func() {
		ar := e.Kube.AdmissionregistrationV1()
		_ = ar.MutatingWebhookConfigurations().Delete(ctx, "gavel", metav1.DeleteOptions{})
		_ = ar.ValidatingWebhookConfigurations().Delete(ctx, "gavel", metav1.DeleteOptions{})
	})
	// the synthetic Pods draw many API server warnings: not logged
	qcfg := rest.CopyConfig(e.Config)
	qcfg.WarningHandler = rest.NoWarnings{}
	dyn := dynamic.NewForConfigOrDie(qcfg)

	// first the policies as written (3 of them Enforce, which deny most of
	// the synthetic Pods), then all in Audit, so that the Pods are created
	// and the controller's background scans have them to report on
	e.loadPass(t, dyn, docs, n, "enforce")
	for _, f := range files {
		if err := e.applyAudit(f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	time.Sleep(3 * time.Second) // the webhook's informers see the change
	e.loadPass(t, dyn, docs, n, "audit")
	var reports, entries int
	eventually(t, 60*time.Second, "the reports of the admitted Pods", func() bool {
		l, err := e.Dynamic.Resource(policyReports).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		reports, entries = len(l.Items), 0
		for _, r := range l.Items {
			res, _, _ := unstructured.NestedSlice(r.Object, "results")
			entries += len(res)
		}
		return entries > n/2
	})
	t.Logf("background scan: %d PolicyReports with %d entries", reports, entries)
	// the admitted Pods' results of the two admission-only bench policies
	// came as EphemeralReports: the leader merges and deletes them all
	eventually(t, 60*time.Second, "the ephemeral reports merged", func() bool {
		l, err := e.Dynamic.Resource(ephemeralReports).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0
	})
	for _, p := range []*testcluster.Proc{wh, ctrl} {
		t.Logf("memory %s: peak RSS %s", p.Name, peakRSS(p))
	}
}

// loadClients is the number of concurrent clients of the load run.
const loadClients = 8

// loadPass creates n Pods from loadClients concurrent clients and logs the
// outcome, the latency of each create as the client sees it (exact
// quantiles), and the webhook latency the API server measures.
func (e *env) loadPass(t *testing.T, dyn dynamic.Interface, docs []api.Document, n int, pass string) {
	ctx := context.Background()
	before, err := e.webhookHistogram()
	if err != nil {
		t.Fatal(err)
	}
	var created, denied, invalid, failed atomic.Int64
	var firstErr atomic.Value
	work := make(chan int)
	var wg sync.WaitGroup
	latencies := make([]time.Duration, n)
	start := time.Now()
	for range loadClients {
		wg.Go(func() {
			for i := range work {
				d := docs[i%len(docs)]
				u := &unstructured.Unstructured{Object: copyMap(d.Object)}
				u.SetNamespace("load-" + u.GetNamespace())
				u.SetName(fmt.Sprintf("%s-%s-%d", u.GetName(), pass, i/len(docs)))
				t0 := time.Now()
				_, err := dyn.Resource(podsResource).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
				latencies[i] = time.Since(t0)
				switch {
				case err == nil:
					created.Add(1)
				case apierrors.IsBadRequest(err) && strings.Contains(err.Error(), "denied the request"):
					// an Enforce policy's answer, the request worked: as
					// upstream's, a denial has no code, which the API
					// server reports as 400
					denied.Add(1)
				case apierrors.IsInvalid(err) && !strings.Contains(err.Error(), "webhook"):
					invalid.Add(1) // the API server's own validation of the synthetic Pod
				default:
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	elapsed := time.Since(start)
	after, err := e.webhookHistogram()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("load (%s): %d Pod creates in %s (%.0f/s): %d created, %d denied by policies, %d invalid for the API server, %d failed",
		pass, n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), created.Load(), denied.Load(), invalid.Load(), failed.Load())
	if failed.Load() > 0 {
		t.Errorf("%d requests failed, first: %v", failed.Load(), firstErr.Load())
	}
	slices.Sort(latencies)
	at := func(q float64) time.Duration { return latencies[min(len(latencies)-1, int(q*float64(len(latencies))))] }
	t.Logf("create latency (%s), %d clients, as they see it (API server, webhooks, etcd): p50 %.1f ms, p99 %.1f ms, max %.1f ms",
		pass, loadClients, ms(at(0.5)), ms(at(0.99)), ms(latencies[len(latencies)-1]))
	names := make([]string, 0, len(after))
	for name := range after {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		d := after[name].sub(before[name])
		if d.count == 0 {
			continue
		}
		t.Logf("admission latency (%s) %s: %d calls, p50 %.1f ms %s, p99 %.1f ms %s, mean %.1f ms",
			pass, name, int(d.count), d.quantile(0.5)*1000, d.bucket(0.5), d.quantile(0.99)*1000, d.bucket(0.99), d.sum/d.count*1000)
	}
}

// applyAudit applies the policies of a file with every failure action
// set to Audit.
func (e *env) applyAudit(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	docs, err := api.ReadDocuments(bufio.NewReader(f), path)
	if err != nil {
		return err
	}
	for _, d := range docs {
		u := &unstructured.Unstructured{Object: d.Object}
		if _, ok, _ := unstructured.NestedString(u.Object, "spec", "validationFailureAction"); ok {
			_ = unstructured.SetNestedField(u.Object, "Audit", "spec", "validationFailureAction")
		}
		rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
		for _, r := range rules {
			if v, ok := r.(map[string]any)["validate"].(map[string]any); ok && v["failureAction"] != nil {
				v["failureAction"] = "Audit"
			}
		}
		if rules != nil {
			_ = unstructured.SetNestedSlice(u.Object, rules, "spec", "rules")
		}
		if err := e.Apply(context.Background(), u.Object); err != nil {
			return err
		}
	}
	return nil
}

var (
	clusterPolicies  = schemaGVR("kyverno.io", "v1", "clusterpolicies")
	podsResource     = schemaGVR("", "v1", "pods")
	policyReports    = schemaGVR("wgpolicyk8s.io", "v1alpha2", "policyreports")
	ephemeralReports = schemaGVR("reports.kyverno.io", "v1", "ephemeralreports")
)

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func copyMap(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}

// peakRSS reads VmHWM of a running process.
func peakRSS(p *testcluster.Proc) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Cmd.Process.Pid))
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return strings.Join(strings.Fields(l)[1:], " ")
		}
	}
	return "unknown"
}

// histogram is apiserver_admission_webhook_admission_duration_seconds of
// one webhook, summed over its labels.
type histogram struct {
	buckets    map[float64]float64 // upper bound -> cumulative count
	sum, count float64
}

func (h histogram) sub(o histogram) histogram {
	out := histogram{buckets: map[float64]float64{}, sum: h.sum - o.sum, count: h.count - o.count}
	for le, c := range h.buckets {
		out.buckets[le] = c - o.buckets[le]
	}
	return out
}

// quantile interpolates linearly inside the bucket, as Prometheus does.
func (h histogram) quantile(q float64) float64 {
	les := make([]float64, 0, len(h.buckets))
	for le := range h.buckets {
		les = append(les, le)
	}
	sort.Float64s(les)
	rank := q * h.count
	prevLE, prevC := 0.0, 0.0
	for _, le := range les {
		c := h.buckets[le]
		if c >= rank {
			if math.IsInf(le, 1) {
				return prevLE
			}
			if c == prevC {
				return le
			}
			return prevLE + (le-prevLE)*(rank-prevC)/(c-prevC)
		}
		prevLE, prevC = le, c
	}
	return prevLE
}

// bucket names the bucket a quantile falls in: the API server's buckets
// (5, 25, 100, 500 ms...) are coarse, the quantile is interpolated in it.
func (h histogram) bucket(q float64) string {
	les := make([]float64, 0, len(h.buckets))
	for le := range h.buckets {
		les = append(les, le)
	}
	sort.Float64s(les)
	prev := 0.0
	for _, le := range les {
		if h.buckets[le] >= q*h.count {
			return fmt.Sprintf("(bucket %g-%g ms)", prev*1000, le*1000)
		}
		prev = le
	}
	return "(bucket ?)"
}

// webhookHistogram scrapes the API server's /metrics.
func (e *env) webhookHistogram() (map[string]histogram, error) {
	body, err := e.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		return nil, err
	}
	const metric = "apiserver_admission_webhook_admission_duration_seconds"
	out := map[string]histogram{}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, metric) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		labels := label(line, "name") + " (" + label(line, "type") + ")"
		h := out[labels]
		if h.buckets == nil {
			h.buckets = map[float64]float64{}
		}
		switch {
		case strings.HasPrefix(line, metric+"_bucket"):
			le := label(line, "le")
			f, err := strconv.ParseFloat(le, 64)
			if le == "+Inf" {
				f, err = math.Inf(1), nil
			}
			if err == nil {
				h.buckets[f] += v
			}
		case strings.HasPrefix(line, metric+"_sum"):
			h.sum += v
		case strings.HasPrefix(line, metric+"_count"):
			h.count += v
		}
		out[labels] = h
	}
	return out, nil
}

func label(line, name string) string {
	i := strings.Index(line, name+"=\"")
	if i < 0 {
		return ""
	}
	rest := line[i+len(name)+2:]
	return rest[:strings.IndexByte(rest, '"')]
}
