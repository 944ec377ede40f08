//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/gavelpolicy/gavel/api"
)

// env is the cluster the suite runs against: etcd and kube-apiserver on
// 127.0.0.1, and gavel's processes.
type env struct {
	dir       string
	root      string // the repository
	apiURL    string
	token     string
	caPEM     []byte
	cfg       *rest.Config
	kube      kubernetes.Interface
	dyn       dynamic.Interface
	mapper    meta.RESTMapper
	binary    string // gavel's cluster example
	helm      string
	whCert    string // webhook TLS files
	whKey     string
	procs     []*proc
	apiServer *exec.Cmd
}

var suite *env

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	start := time.Now()
	e, err := setup()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e setup: %v\n", err)
		if e != nil {
			e.teardown()
		}
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: servers up in %s\n", time.Since(start).Round(time.Millisecond))
	suite = e
	code := m.Run()
	e.teardown()
	fmt.Fprintf(os.Stderr, "e2e: total %s\n", time.Since(start).Round(time.Second))
	return code
}

func cacheDir() string {
	if d := os.Getenv("GAVEL_E2E_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "gavel-e2e")
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func setup() (*env, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return nil, err
	}
	e := &env{root: root}
	if e.dir, err = os.MkdirTemp("", "gavel-e2e-"); err != nil {
		return nil, err
	}
	// the servers, from the cache that e2e/build.sh fills
	build := exec.Command("bash", filepath.Join(root, "e2e", "build.sh"))
	build.Stderr = os.Stderr
	out, err := build.Output()
	if err != nil {
		return e, fmt.Errorf("e2e/build.sh: %w", err)
	}
	cache := strings.TrimSpace(string(out))
	etcdBin := filepath.Join(cache, "v3.7.3", "etcd")
	apiBin := filepath.Join(cache, "v1.37.2", "kube-apiserver")

	// gavel's binary, built while etcd starts
	e.binary = filepath.Join(e.dir, "gavel-cluster")
	gobuild := exec.Command("go", "build", "-o", e.binary, "./examples/webhook/cluster")
	gobuild.Dir = root
	gobuild.Stderr = os.Stderr
	if err := gobuild.Start(); err != nil {
		return e, err
	}

	if err := e.certs(); err != nil {
		return e, err
	}
	etcdPort, _ := freePort()
	peerPort, _ := freePort()
	etcd := exec.Command(etcdBin, "-data-dir", filepath.Join(e.dir, "etcd"),
		"-listen-client-urls", fmt.Sprintf("http://127.0.0.1:%d", etcdPort),
		"-listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peerPort))
	if _, err := e.start("etcd", etcd); err != nil {
		return e, err
	}
	if err := waitTCP(fmt.Sprintf("127.0.0.1:%d", etcdPort), 30*time.Second); err != nil {
		return e, fmt.Errorf("etcd: %w", err)
	}

	apiPort, _ := freePort()
	e.apiURL = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	api := exec.Command(apiBin,
		"--etcd-servers", fmt.Sprintf("http://127.0.0.1:%d", etcdPort),
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(apiPort),
		"--cert-dir", filepath.Join(e.dir, "apiserver"),
		"--tls-cert-file", filepath.Join(e.dir, "api.crt"),
		"--tls-private-key-file", filepath.Join(e.dir, "api.key"),
		"--client-ca-file", filepath.Join(e.dir, "ca.crt"),
		"--token-auth-file", filepath.Join(e.dir, "tokens.csv"),
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(e.dir, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(e.dir, "sa.key"),
		"--service-cluster-ip-range", "10.0.0.0/24",
		// no controller manager makes the default ServiceAccounts
		"--disable-admission-plugins", "ServiceAccount",
		"--anonymous-auth=false",
		// the kubernetes Service cannot point at a loopback address
		"--endpoint-reconciler-type", "none",
		"--profiling=false",
		"--max-requests-inflight", "1000", "--max-mutating-requests-inflight", "500",
	)
	e.apiServer = api
	if _, err := e.start("kube-apiserver", api); err != nil {
		return e, err
	}
	e.cfg = &rest.Config{Host: e.apiURL, BearerToken: e.token, TLSClientConfig: rest.TLSClientConfig{CAData: e.caPEM}, QPS: 200, Burst: 400}
	if err := e.waitReady(90 * time.Second); err != nil {
		return e, fmt.Errorf("kube-apiserver: %w", err)
	}
	e.kube = kubernetes.NewForConfigOrDie(e.cfg)
	e.dyn = dynamic.NewForConfigOrDie(e.cfg)
	if err := e.writeKubeconfig(); err != nil {
		return e, err
	}

	// the chart, rendered by helm as a user installs it (the Deployment
	// stays without Pods: no kubelet runs; the suite runs gavel's
	// processes itself)
	e.helm = filepath.Join(cache, helmVersion, "helm")
	if err := e.namespaceObject("gavel"); err != nil {
		return e, err
	}
	if err := e.applyChart(); err != nil {
		return e, err
	}
	if err := e.waitCRDs(); err != nil {
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
func (e *env) applyChart() error {
	docs, err := e.renderChart()
	if err != nil {
		return err
	}
	for _, d := range docs {
		if err := e.apply(d.Object); err != nil {
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
	rbac := e.kube.RbacV1().ClusterRoles()
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

// chartCRDs are the chart's CRD files.
func chartCRDs() []string {
	files, _ := filepath.Glob(filepath.Join("..", "charts", "gavel", "crds", "*.yaml"))
	return files
}

func (e *env) namespaceObject(name string) error {
	return e.apply(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}})
}

func (e *env) resetMapper() {
	disc := discovery.NewDiscoveryClientForConfigOrDie(e.cfg)
	e.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
}

func waitTCP(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (e *env) waitReady(d time.Duration) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.caPEM)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	deadline := time.Now().Add(d)
	for {
		req, _ := http.NewRequest("GET", e.apiURL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+e.token)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
			err = fmt.Errorf("readyz: %s", resp.Status)
		}
		if time.Now().After(deadline) {
			return err
		}
		if e.apiServer.ProcessState != nil {
			return fmt.Errorf("exited: %s (log %s)", e.apiServer.ProcessState, filepath.Join(e.dir, "kube-apiserver.log"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// proc is a process the suite started, logging to a file.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

func (e *env) start(name string, cmd *exec.Cmd) (*proc, error) {
	logf, err := os.Create(filepath.Join(e.dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	e.procs = append(e.procs, p)
	return p, nil
}

// kill ends the process at once (SIGKILL), as a crash would.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stop ends the process gracefully.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.kill()
	}
}

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (e *env) teardown() {
	for i := len(e.procs) - 1; i >= 0; i-- {
		if e.procs[i].running() {
			e.procs[i].stop()
		}
	}
	if os.Getenv("GAVEL_E2E_KEEP") == "" && e.dir != "" {
		_ = os.RemoveAll(e.dir)
	} else {
		fmt.Fprintf(os.Stderr, "e2e: logs kept in %s\n", e.dir)
	}
}

// certs writes a CA, the API server's and the webhook's serving
// certificates, the service account key and the token file.
func (e *env) certs() error {
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gavel-e2e-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	e.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := os.WriteFile(filepath.Join(e.dir, "ca.crt"), e.caPEM, 0o600); err != nil {
		return err
	}
	serving := func(name string, serial int64) error {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(e.dir, name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(e.dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)
	}
	if err := serving("api", 2); err != nil {
		return err
	}
	if err := serving("webhook", 3); err != nil {
		return err
	}
	e.whCert, e.whKey = filepath.Join(e.dir, "webhook.crt"), filepath.Join(e.dir, "webhook.key")
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, _ := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err := os.WriteFile(filepath.Join(e.dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(e.dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}), 0o600); err != nil {
		return err
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	e.token = fmt.Sprintf("%x", b)
	return os.WriteFile(filepath.Join(e.dir, "tokens.csv"), []byte(e.token+",admin,admin,system:masters\n"), 0o600)
}

func (e *env) writeKubeconfig() error {
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: e2e
  context: {cluster: e2e, user: admin}
current-context: e2e
`, e.apiURL, filepath.Join(e.dir, "ca.crt"), e.token)
	return os.WriteFile(e.kubeconfig(), []byte(kc), 0o600)
}

func (e *env) kubeconfig() string { return filepath.Join(e.dir, "kubeconfig") }

// applyFile creates (or updates) every object of a manifest file.
func (e *env) applyFile(path string) error {
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
		if err := e.apply(d.Object); err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
	}
	return nil
}

func (e *env) resource(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	if e.mapper == nil {
		e.resetMapper()
	}
	gvk := obj.GroupVersionKind()
	m, err := e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		e.resetMapper()
		if m, err = e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return nil, err
		}
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = "default"
		}
		return e.dyn.Resource(m.Resource).Namespace(ns), nil
	}
	return e.dyn.Resource(m.Resource), nil
}

// apply creates the object, or updates it over the current version.
func (e *env) apply(obj map[string]any) error {
	u := &unstructured.Unstructured{Object: obj}
	ri, err := e.resource(u)
	if err != nil {
		return err
	}
	ctx := context.Background()
	_, err = ri.Create(ctx, u, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cur, gerr := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		u.SetResourceVersion(cur.GetResourceVersion())
		_, err = ri.Update(ctx, u, metav1.UpdateOptions{})
	}
	return err
}

func (e *env) waitCRDs() error {
	gvr := crdResource
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err := e.dyn.Resource(gvr).List(context.Background(), metav1.ListOptions{})
		if err == nil {
			established := 0
			for _, c := range l.Items {
				conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
				for _, x := range conds {
					m := x.(map[string]any)
					if m["type"] == "Established" && m["status"] == "True" {
						established++
					}
				}
			}
			if established >= len(chartCRDs()) {
				e.resetMapper()
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CRDs not established: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// gavel starts a process of the example with the suite's flags and extra
// ones, and waits for its readiness line.
func (e *env) gavel(t testing.TB, name string, args ...string) *proc {
	t.Helper()
	base := []string{"-kubeconfig", e.kubeconfig(), "-namespace", "gavel", "-identity", name,
		"-tls-cert", e.whCert, "-tls-key", e.whKey,
		"-lease-duration", "8s", "-renew-deadline", "6s", "-retry-period", "1s",
		"-scan-interval", "2s", "-kube-api-qps", "500", "-metrics-listen", ""}
	if !slices.Contains(args, "-webhook-url") {
		// the test registers its webhooks itself (env.webhooks)
		base = append(base, "-manage-webhooks=false")
	}
	p, err := e.start(name, exec.Command(e.binary, append(base, args...)...))
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, e, name, "msg=started")
	return p
}

// waitLog waits for a line containing s in a process's log.
func waitLog(t testing.TB, e *env, name, s string) {
	t.Helper()
	eventually(t, 60*time.Second, name+" logs "+s, func() bool {
		data, _ := os.ReadFile(filepath.Join(e.dir, name+".log"))
		return strings.Contains(string(data), s)
	})
}

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

var logMu sync.Mutex
