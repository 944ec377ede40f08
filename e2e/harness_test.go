//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/e2e/internal/testcluster"
)

// env is the cluster the suite runs against: etcd and kube-apiserver on
// 127.0.0.1 (a testcluster.Cluster, no controller manager), and gavel's
// processes, started with Spawn and stopped with the cluster.
type env struct {
	*testcluster.Cluster
	root   string // the repository
	binary string // gavel's cluster example
	helm   string
	whCert string // webhook TLS files
	whKey  string
}

var suite *env

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	start := time.Now()
	dir, err := os.MkdirTemp("", "gavel-e2e-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e setup: %v\n", err)
		return 1
	}
	e, err := setup(context.Background(), dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e setup: %v\n", err)
		teardown(e, dir)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: servers up in %s\n", time.Since(start).Round(time.Millisecond))
	suite = e
	code := m.Run()
	teardown(e, dir)
	fmt.Fprintf(os.Stderr, "e2e: total %s\n", time.Since(start).Round(time.Second))
	return code
}

// teardown stops every process (e may be nil, or have no cluster yet) and
// removes dir, unless GAVEL_E2E_KEEP is set.
func teardown(e *env, dir string) {
	if e != nil && e.Cluster != nil {
		e.Stop()
	}
	if os.Getenv("GAVEL_E2E_KEEP") == "" {
		_ = os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "e2e: logs kept in %s\n", dir)
	}
}

// kubeVersion and etcdVersion are the versions e2e/build.sh builds the
// servers at.
const (
	kubeVersion = "v1.37.2"
	etcdVersion = "v3.7.3"
)

// setup starts the control plane in dir, builds gavel's binary meanwhile,
// and installs the chart. The env it returns, even with an error, holds
// what was started.
func setup(ctx context.Context, dir string) (*env, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return nil, err
	}
	e := &env{root: root}
	// the servers, from the cache that e2e/build.sh fills
	build := exec.Command("bash", filepath.Join(root, "e2e", "build.sh"))
	build.Stderr = os.Stderr
	out, err := build.Output()
	if err != nil {
		return e, fmt.Errorf("e2e/build.sh: %w", err)
	}
	cache := strings.TrimSpace(string(out))

	// gavel's binary, built while the servers start
	e.binary = filepath.Join(dir, "gavel-cluster")
	gobuild := exec.Command("go", "build", "-o", e.binary, "./examples/webhook/cluster")
	gobuild.Dir = root
	gobuild.Stderr = os.Stderr
	if err := gobuild.Start(); err != nil {
		return e, err
	}
	defer func() {
		if gobuild.ProcessState == nil { // setup failed first
			_ = gobuild.Process.Kill()
			_ = gobuild.Wait()
		}
	}()

	if e.Cluster, err = testcluster.Start(ctx, testcluster.Options{
		Dir:      dir,
		Binaries: testcluster.FromCache(cache, kubeVersion, etcdVersion),
	}); err != nil {
		return e, err
	}
	if e.whCert, e.whKey, err = e.ServingCert("webhook"); err != nil {
		return e, err
	}

	// the chart, rendered by helm as a user installs it (the Deployment
	// stays without Pods: no kubelet runs; the suite runs gavel's
	// processes itself)
	e.helm = filepath.Join(cache, helmVersion, "helm")
	if err := e.namespaceObject("gavel"); err != nil {
		return e, err
	}
	if err := e.applyChart(ctx); err != nil {
		return e, err
	}
	if err := e.WaitCRDs(ctx, 30*time.Second); err != nil {
		return e, err
	}
	if err := gobuild.Wait(); err != nil {
		return e, fmt.Errorf("building the example: %w", err)
	}
	return e, nil
}

// helmVersion is the version e2e/build.sh builds helm at.
const helmVersion = "v3.22.0"

// renderChart renders charts/gavel with helm template, CRDs included, with
// extra arguments (--set ...).
func (e *env) renderChart(args ...string) ([]api.Document, error) {
	cmd := exec.Command(e.helm, append([]string{"template", "gavel", filepath.Join(e.root, "charts", "gavel"),
		"--namespace", "gavel", "--include-crds"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm template: %w: %s", err, stderr.String())
	}
	return api.ReadDocuments(bytes.NewReader(out), "helm template")
}

// applyChart applies the rendered chart, then does the work of the
// controller manager's ClusterRole aggregation, which the suite does not
// run (aggregate).
func (e *env) applyChart(ctx context.Context) error {
	docs, err := e.renderChart()
	if err != nil {
		return err
	}
	for _, d := range docs {
		if err := e.Apply(ctx, d.Object); err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
	}
	return e.aggregate("gavel")
}

// aggregate fills an aggregated ClusterRole with the rules of the
// ClusterRoles its aggregationRule selects, as the controller manager's
// clusterrole-aggregation controller does (a stand-in: the suite runs no
// controller manager).
func (e *env) aggregate(name string) error {
	ctx := context.Background()
	rbac := e.Kube.RbacV1().ClusterRoles()
	agg, err := rbac.Get(ctx, name, metav1.GetOptions{})
	if err != nil || agg.AggregationRule == nil {
		return err
	}
	var rules []rbacv1.PolicyRule
	seen := map[string]bool{}
	for _, sel := range agg.AggregationRule.ClusterRoleSelectors {
		s, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil {
			return err
		}
		l, err := rbac.List(ctx, metav1.ListOptions{LabelSelector: s.String()})
		if err != nil {
			return err
		}
		for _, cr := range l.Items {
			if seen[cr.Name] || cr.Name == name {
				continue
			}
			seen[cr.Name] = true
			rules = append(rules, cr.Rules...)
		}
	}
	agg.Rules = rules
	_, err = rbac.Update(ctx, agg, metav1.UpdateOptions{})
	return err
}

func (e *env) namespaceObject(name string) error {
	return e.Apply(context.Background(), map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}})
}

// gavel starts a process of the example with the suite's flags and extra
// ones, and waits for its readiness line.
func (e *env) gavel(t testing.TB, name string, args ...string) *testcluster.Proc {
	t.Helper()
	base := []string{"-kubeconfig", e.Kubeconfig(), "-namespace", "gavel", "-identity", name,
		"-tls-cert", e.whCert, "-tls-key", e.whKey,
		"-lease-duration", "8s", "-renew-deadline", "6s", "-retry-period", "1s",
		"-scan-interval", "2s", "-kube-api-qps", "500", "-metrics-listen", ""}
	if !slices.Contains(args, "-webhook-url") {
		// the test registers its webhooks itself (env.webhooks)
		base = append(base, "-manage-webhooks=false")
	}
	p, err := e.Spawn(name, exec.Command(e.binary, append(base, args...)...))
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, p, "msg=started")
	return p
}

// waitLog waits up to a minute for a line containing s in a process's log.
func waitLog(t testing.TB, p *testcluster.Proc, s string) {
	t.Helper()
	if err := p.WaitLog(context.Background(), s, 60*time.Second); err != nil {
		t.Fatal(err)
	}
}

// freePort returns a TCP port free on 127.0.0.1 at the time of the call.
func freePort() (int, error) { return testcluster.FreePort() }

func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
