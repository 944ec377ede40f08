//go:build e2e

package chainsaw

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/e2e/internal/testcluster"
)

const (
	kubeVersion     = "v1.37.2"
	etcdVersion     = "v3.7.3"
	chainsawVersion = "v0.2.12"
	helmVersion     = "v3.22.0"
)

// controllers are the controllers of kube-controller-manager each shard
// runs: what upstream's kind cluster does that the tests rely on and a
// bare API server lacks. The namespace controller empties and removes
// the namespaces chainsaw deletes after each test; the ServiceAccount
// controller makes the default ServiceAccount the ServiceAccount
// admission plugin gives every Pod; the root CA publisher the ConfigMap
// its token volume mounts; the CSR signer signs the certificates of the
// users some tests make; the ClusterRole aggregation controller fills
// the ClusterRoles that aggregate others (upstream's convention for
// granting Kyverno rights); the garbage collector deletes what the owner
// references of deleted objects point to; the ResourceQuota controller
// computes the quotas that generate rules create, without which the
// quota admission plugin refuses every Pod of their namespace; the
// protection controllers remove the finalizers the API server puts on
// PersistentVolumeClaims and PersistentVolumes, without which neither
// they nor their namespace are ever deleted; the workload controllers
// make the Pods of Deployments, StatefulSets, DaemonSets, Jobs and
// CronJobs, as on kind (they stay Pending: no scheduler, no kubelet).
var controllers = []string{
	"namespace-controller",
	"serviceaccount-controller",
	"root-ca-certificate-publisher-controller",
	"certificatesigningrequest-signing-controller",
	"clusterrole-aggregation-controller",
	"garbage-collector-controller",
	"resourcequota-controller",
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller",
	"deployment-controller",
	"replicaset-controller",
	"statefulset-controller",
	"daemonset-controller",
	"job-controller",
	"cronjob-controller",
}

// apiServerArgs are kube-apiserver's flags as kind sets them, where they
// differ from the e2e suite's: privileged containers allowed, and webhooks
// called through their Service's endpoints (the judge's EndpointSlice
// points at gavel's process on this host).
var apiServerArgs = []string{
	"--allow-privileged=true",
	"--enable-aggregator-routing=true",
}

// kindAdmin and kindAdmins are the user of kind's kubeconfig and its
// group (kubeadm's), which a ClusterRoleBinding binds to cluster-admin:
// the tests run as this user, and policies that exclude the cluster-admin
// ClusterRole exclude it, as on kind.
const (
	kindAdmin  = "kubernetes-admin"
	kindAdmins = "kubeadm:cluster-admins"
)

// adminKubeconfig binds kind's admin group to cluster-admin and writes a
// kubeconfig of kind's admin.
func adminKubeconfig(ctx context.Context, c *testcluster.Cluster) (string, error) {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: kindAdmins},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: kindAdmins}},
	}
	if _, err := c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	path := filepath.Join(c.Dir, "kind-admin.kubeconfig")
	return path, c.WriteKubeconfig(path, kindAdmin, c.UserToken(kindAdmin))
}

// judge is the setting of a run.
type judge struct {
	root        string // the repository
	conformance string
	cache       string // e2e/build.sh's binaries
	gavel       string // the cluster example's binary
	cli         string // gavel's CLI, the tests' kyverno CLI
	keep        bool
	// knownTimeout is chainsaw's timeouts for the known failures
	knownTimeout string
}

func TestJudge(t *testing.T) {
	j := setupJudge(t)
	tests, err := Discover(j.conformance, Suites)
	if err != nil {
		t.Fatal(err)
	}
	skips, err := ReadListFile("skip.txt", false)
	if err != nil {
		t.Fatal(err)
	}
	known, err := ReadListFile("failing.txt", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckList(skips, tests, "skip.txt"); err != nil {
		t.Fatal(err)
	}
	if err := CheckList(known, tests, "failing.txt"); err != nil {
		t.Fatal(err)
	}
	printSkips(t, skips)

	run, err := selected(tests, skips, os.Getenv("GAVEL_JUDGE_RUN"))
	if err != nil {
		t.Fatal(err)
	}
	n := 4
	if v := os.Getenv("GAVEL_JUDGE_SHARDS"); v != "" {
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("GAVEL_JUDGE_SHARDS=%q: want a positive number", v)
		}
	}
	// the tests expected to pass first, then the known failures: Shard
	// deals them in turn, so each shard gets its part of both
	knownSet := map[string]bool{}
	for _, e := range known {
		knownSet[e.Test] = true
	}
	slices.SortStableFunc(run, func(a, b Test) int {
		switch {
		case knownSet[a.Name] == knownSet[b.Name]:
			return 0
		case knownSet[b.Name]:
			return -1
		}
		return 1
	})
	shards := Shard(run, n)
	t.Logf("running %d tests of %d in %d shards", len(run), len(tests), len(shards))

	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Minute))
		defer cancel()
	}
	runs := make([]shardRun, len(shards))
	var wg sync.WaitGroup
	for i, sh := range shards {
		wg.Go(func() { runs[i] = j.runShard(ctx, t, i, sh, knownSet) })
	}
	wg.Wait()

	var all []Result
	for i, sh := range shards {
		all = append(all, complete(sh, runs[i].results, runs[i].started)...)
	}
	sum := Summarize(tests, all, skips, known)
	var out bytes.Buffer
	sum.Write(&out, known)
	t.Logf("chainsaw judge:\n%s", out.String())
	// the failures, then what became of each shard: CI shows the end of
	// the output, which then says why tests are missing
	missing := 0
	for _, r := range sum.Unexpected {
		if r.Outcome == Missing {
			missing++
			if missing > 10 {
				continue
			}
		}
		t.Errorf("%s: %s: %s", r.Test, r.Outcome, r.Failure)
	}
	if missing > 10 {
		t.Errorf("... and %d more tests missing", missing-10)
	}
	for i, r := range runs {
		if r.err != nil {
			t.Errorf("shard %d, after %s: %v", i, r.took.Round(time.Second), r.err)
		} else {
			t.Logf("shard %d: done in %s", i, r.took.Round(time.Second))
		}
	}
}

// shardRun is what became of a shard.
type shardRun struct {
	results []Result
	// started are the tests chainsaw started (a test missing from the
	// results was unfinished when its pass ended)
	started map[string]bool
	took    time.Duration
	err     error
}

func setupJudge(t *testing.T) *judge {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	shared := os.Getenv("SHARED")
	if shared == "" {
		shared = filepath.Join(root, "..", "shared")
	}
	j := &judge{root: root, conformance: filepath.Join(shared, "conformance"), keep: os.Getenv("GAVEL_E2E_KEEP") != "",
		knownTimeout: "20s"}
	if v := os.Getenv("GAVEL_JUDGE_KNOWN_TIMEOUT"); v != "" {
		if _, err := time.ParseDuration(v); err != nil {
			t.Fatalf("GAVEL_JUDGE_KNOWN_TIMEOUT: %v", err)
		}
		j.knownTimeout = v
	}
	if _, err := os.Stat(j.conformance); err != nil {
		t.Fatalf("the conformance corpus: %v (set SHARED)", err)
	}
	build := exec.Command("bash", filepath.Join(root, "e2e", "build.sh"), "--judge")
	build.Stderr = os.Stderr
	out, err := build.Output()
	if err != nil {
		t.Fatalf("e2e/build.sh --judge: %v", err)
	}
	j.cache = strings.TrimSpace(string(out))
	bin := t.TempDir()
	j.gavel, j.cli = filepath.Join(bin, "gavel-cluster"), filepath.Join(bin, "gavel")
	for pkg, out := range map[string]string{"./examples/webhook/cluster": j.gavel, "./cmd/gavel": j.cli} {
		gobuild := exec.Command("go", "build", "-o", out, pkg)
		gobuild.Dir = root
		gobuild.Stderr = os.Stderr
		if err := gobuild.Run(); err != nil {
			t.Fatalf("building %s: %v", pkg, err)
		}
	}
	return j
}

func printSkips(t *testing.T, skips []Entry) {
	var b strings.Builder
	for _, e := range skips {
		fmt.Fprintf(&b, "  %s: %s\n", e.Test, e.Reason)
	}
	t.Logf("skipped (skip.txt), %d tests:\n%s", len(skips), b.String())
}

// runShard starts a control plane, installs gavel and runs chainsaw on
// the shard's tests: first those expected to pass, with upstream's
// settings, then the known failures with short timeouts (they fail
// sooner; one that passes is reported).
func (j *judge) runShard(ctx context.Context, t *testing.T, i int, tests []Test, known map[string]bool) (run shardRun) {
	start := time.Now()
	run.started = map[string]bool{}
	run.results, run.err = j.runPasses(ctx, t, i, tests, known, run.started)
	run.took = time.Since(start)
	return run
}

// runPasses runs a shard's control plane and chainsaw's two passes, adding
// the tests chainsaw starts to started.
func (j *judge) runPasses(ctx context.Context, t *testing.T, i int, tests []Test, known, started map[string]bool) ([]Result, error) {
	dir, err := os.MkdirTemp("", fmt.Sprintf("gavel-judge-%d-", i))
	if err != nil {
		return nil, err
	}
	defer func() {
		if j.keep {
			t.Logf("shard %d: logs kept in %s", i, dir)
		} else {
			_ = os.RemoveAll(dir)
		}
	}()
	start := time.Now()
	c, err := testcluster.Start(ctx, testcluster.Options{
		Dir:           dir,
		Binaries:      testcluster.FromCache(j.cache, kubeVersion, etcdVersion),
		APIServerArgs: apiServerArgs,
		Controllers:   controllers,
		Users:         []testcluster.User{{Name: kindAdmin, Groups: []string{kindAdmins}}},
	})
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	kubeconfig, err := adminKubeconfig(ctx, c)
	if err != nil {
		return nil, err
	}
	if err := installGavel(ctx, c, j.gavel, filepath.Join(j.cache, helmVersion, "helm"), filepath.Join(j.root, "charts", "gavel")); err != nil {
		return nil, fmt.Errorf("installing gavel: %w", err)
	}
	if err := kindStandIns(ctx, c); err != nil {
		return nil, fmt.Errorf("kind's stand-ins: %w", err)
	}
	if err := j.prepare(dir, tests); err != nil {
		return nil, err
	}
	t.Logf("shard %d: cluster and gavel up in %s, %d tests", i, time.Since(start).Round(time.Second), len(tests))
	var expected, failing []Test
	for _, tc := range tests {
		if known[tc.Name] {
			failing = append(failing, tc)
		} else {
			expected = append(expected, tc)
		}
	}
	sh := &shard{j: j, t: t, i: i, dir: dir, kubeconfig: kubeconfig, started: started}
	results, err := sh.chainsaw(ctx, "expected", expected)
	if err != nil {
		return results, err
	}
	more, err := sh.chainsaw(ctx, "known", failing, "--apply-timeout", j.knownTimeout, "--assert-timeout", j.knownTimeout,
		"--error-timeout", j.knownTimeout, "--exec-timeout", j.knownTimeout)
	return append(results, more...), err
}

// prepare copies the shard's tests into dir/tests (their scripts write
// files beside them), writes chainsaw's configuration and the scripts'
// bin folder: the kubectl built with the servers, and gavel's CLI as
// their kyverno CLI (kyverno jp query).
func (j *judge) prepare(dir string, tests []Test) error {
	for _, tc := range tests {
		if err := copyTree(filepath.Join(j.conformance, tc.Name), filepath.Join(dir, "tests", tc.Name)); err != nil {
			return err
		}
	}
	cfg, err := os.ReadFile(filepath.Join("testdata", "chainsaw.yaml"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "chainsaw.yaml"), cfg, 0o644); err != nil {
		return err
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	for name, target := range map[string]string{"kubectl": filepath.Join(j.cache, kubeVersion, "kubectl"), "kyverno": j.cli} {
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			return err
		}
	}
	return nil
}

// shard is a shard's control plane, ready for chainsaw.
type shard struct {
	j          *judge
	t          *testing.T
	i          int
	dir        string
	kubeconfig string
	started    map[string]bool // the tests chainsaw started
}

// chainsaw runs chainsaw on tests (the pass called name: its output is
// <name>.log, its report <name>.json) and reads its results.
func (sh *shard) chainsaw(ctx context.Context, name string, tests []Test, extra ...string) ([]Result, error) {
	if len(tests) == 0 {
		return nil, nil
	}
	work := filepath.Join(sh.dir, "tests")
	args := []string{"test", "--config", filepath.Join(sh.dir, "chainsaw.yaml"),
		"--report-format", "JSON", "--report-path", sh.dir, "--report-name", name, "--no-color"}
	args = append(args, extra...)
	for _, tc := range tests {
		args = append(args, "--test-dir", filepath.Join(tc.Name, TestDir))
	}
	logPath := filepath.Join(sh.dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, filepath.Join(sh.j.cache, chainsawVersion, "chainsaw"), args...)
	cmd.Dir = work
	bin := filepath.Join(sh.dir, "bin")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+sh.kubeconfig, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	progress := &lineLogger{t: sh.t, prefix: fmt.Sprintf("shard %d, %s: ", sh.i, name), total: len(tests), started: sh.started}
	cmd.Stdout = io.MultiWriter(logf, progress)
	cmd.Stderr = cmd.Stdout
	// chainsaw and what its scripts start are one process group: a
	// script's child left running (kubectl debug -it waits for a Pod to
	// run) ends with the pass
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	runErr := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	progress.flush()
	sh.t.Logf("shard %d, %s: chainsaw ran %d tests in %s (%v)", sh.i, name, len(tests), time.Since(start).Round(time.Second), runErr)
	out, err := os.Open(logPath)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	failed, err := FailedTests(out)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(sh.dir, name+".json"))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("chainsaw's %s pass stopped at the judge's deadline, %d of its %d tests started: no report", name, progress.n, len(tests))
		}
		return nil, fmt.Errorf("chainsaw (%v): no report: %w", runErr, err)
	}
	return ParseReport(data, work, failed)
}

// lineLogger logs the start of each test from chainsaw's output, and
// adds it to started (Go's testing prints the end of its parallel
// subtests only when all have ended).
type lineLogger struct {
	t       *testing.T
	prefix  string
	total   int
	n       int
	started map[string]bool
	buf     []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.line(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
}

func (l *lineLogger) line(s string) {
	if name, ok := strings.CutPrefix(strings.TrimSpace(s), "=== CONT  chainsaw/"); ok {
		l.n++
		l.started[outputName(name)] = true
		l.t.Logf("%s%d/%d %s", l.prefix, l.n, l.total, name)
	}
}

func (l *lineLogger) flush() {
	if len(l.buf) > 0 {
		l.line(string(l.buf))
		l.buf = nil
	}
}

// copyTree copies the folder src to dst, files writable and with their
// execute bits (tests run scripts of their folder).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm()|0o600)
	})
}
