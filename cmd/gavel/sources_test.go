package main

import (
	"bytes"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitServer serves the bare repositories under root over HTTP with git's
// own http-backend; with a user, it asks for that user and password.
func gitServer(t *testing.T, root, user, password string) *httptest.Server {
	t.Helper()
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skip("git not installed:", err)
	}
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user != "" {
			if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// gitRepo makes the bare repository root/owner/repo with a branch per
// entry of branches, each holding its files.
func gitRepo(t *testing.T, root string, branches map[string]map[string]string) {
	t.Helper()
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=gavel", "-c", "user.email=gavel@example.com", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	bare := filepath.Join(root, "owner", "repo")
	if err := os.MkdirAll(bare, 0o755); err != nil {
		t.Fatal(err)
	}
	git(bare, "init", "--quiet", "--bare")
	for branch, files := range branches {
		work := t.TempDir()
		git(work, "init", "--quiet")
		git(work, "checkout", "--quiet", "-b", branch)
		for name, text := range files {
			p := filepath.Join(work, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		git(work, "add", ".")
		git(work, "commit", "--quiet", "-m", "files")
		git(work, "push", "--quiet", bare, branch)
	}
}

// TestGitSources: policy and test paths that are git URLs are cloned
// with the branch of --git-branch or of the URL, with credentials when
// given, as upstream reads them.
func TestGitSources(t *testing.T) {
	root := t.TempDir()
	testFile := `apiVersion: cli.kyverno.io/v1alpha1
kind: Test
metadata:
  name: team
policies: [../policies/enforce.yaml]
resources: [resources.yaml]
results:
- policy: require-team
  rule: team
  resources: [good]
  kind: Pod
  result: pass
- policy: require-team
  rule: team
  resources: [noteam]
  kind: Pod
  result: fail
`
	gitRepo(t, root, map[string]map[string]string{
		"main": {
			"policies/enforce.yaml":    flagFiles["enforce.yaml"],
			"tests/kyverno-test.yaml":  testFile,
			"tests/resources.yaml":     flagFiles["good.yaml"] + "---\n" + flagFiles["noteam.yaml"],
			"README.md":                "not a manifest\n",
			"other/policies/mode.yaml": flagFiles["mode.yaml"],
		},
		"release": {"policies/audit.yaml": flagFiles["audit.yaml"]},
	})
	open := gitServer(t, root, "", "")
	locked := gitServer(t, root, "alice", "s3cret")
	resources := writeFiles(t, map[string]string{"latest.yaml": flagFiles["latest.yaml"]})
	latest := filepath.Join(resources, "latest.yaml")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
	}{
		{"branch flag, folder", []string{open.URL + "/owner/repo/policies", "-b", "main", "-r", latest}, 0, []string{"pass: 1, fail: 0"}},
		{"branch flag, whole repository", []string{open.URL + "/owner/repo", "--git-branch", "main", "-r", latest, "-s", "request.mode=dev"}, 0, []string{"pass: 2, fail: 0"}},
		{"branch in the URL", []string{open.URL + "/owner/repo/release", "-r", latest}, 1, []string{"policy disallow-latest", "fail: 1"}},
		{"missing branch", []string{open.URL + "/owner/repo", "-b", "nope", "-r", latest}, 1, nil},
		{"missing folder", []string{open.URL + "/owner/repo/nowhere", "-b", "main", "-r", latest}, 1, nil},
		{"credentials", []string{locked.URL + "/owner/repo/policies", "-b", "release", "--username", "alice", "--password", "s3cret", "-r", latest, "--audit-warn"}, 0, []string{"warn: 1"}},
		{"wrong password", []string{locked.URL + "/owner/repo/policies", "-b", "release", "--username", "alice", "--password", "guess", "-r", latest}, 1, nil},
		{"no credentials", []string{locked.URL + "/owner/repo/policies", "-b", "release", "-r", latest}, 1, nil},
		{"invalid URL path", []string{open.URL + "/owner", "-r", latest}, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := applyRun(t, "", tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			if strings.Contains(stderr, "s3cret") || strings.Contains(stdout, "s3cret") {
				t.Errorf("the password is printed:\n%s%s", stdout, stderr)
			}
		})
	}
	t.Run("test", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := run([]string{"test", open.URL + "/owner/repo/tests", "-b", "main", "--fail-only=false"}, nil, &out, &errOut)
		if code != exitOK || !strings.Contains(out.String(), "2 passed, 0 failed") {
			t.Errorf("exit %d\n%s%s", code, out.String(), errOut.String())
		}
	})
}

func TestParseGitURL(t *testing.T) {
	tests := []struct {
		url, branch string
		want        gitSource
	}{
		{"https://github.com/kyverno/policies/openshift/", "main", gitSource{"https://github.com/kyverno/policies", "main", "/openshift"}},
		{"https://github.com/kyverno/policies/pod-security/restricted", "release-1.6", gitSource{"https://github.com/kyverno/policies", "release-1.6", "/pod-security/restricted"}},
		{"https://github.com/kyverno/policies/release-1.6", "", gitSource{"https://github.com/kyverno/policies", "release-1.6", "/"}},
		{"https://github.com/kyverno/policies", "", gitSource{"https://github.com/kyverno/policies", "main", "/"}},
	}
	for _, tt := range tests {
		got, err := parseGitURL(tt.url, tt.branch)
		if err != nil || got != tt.want {
			t.Errorf("%s -b %q: %+v, %v; want %+v", tt.url, tt.branch, got, err, tt.want)
		}
	}
	if _, err := parseGitURL("https://github.com/kyverno", ""); err == nil {
		t.Error("a URL without a repository is accepted")
	}
}

// TestApplyResourceURL: a resource path that is an http(s) URL is
// downloaded, as upstream reads resources from URLs.
func TestApplyResourceURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/pods.yaml":
			w.Write([]byte(flagFiles["good.yaml"] + "---\n" + flagFiles["noteam.yaml"]))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dir := writeFiles(t, map[string]string{"enforce.yaml": flagFiles["enforce.yaml"]})
	code, out, stderr := applyRun(t, "", filepath.Join(dir, "enforce.yaml"), "-r", srv.URL+"/pods.yaml")
	if code != exitFailed || !strings.Contains(out, "pass: 1, fail: 1") || !strings.Contains(out, "shop/Pod/noteam") {
		t.Errorf("exit %d\n%s%s", code, out, stderr)
	}
	code, _, stderr = applyRun(t, "", filepath.Join(dir, "enforce.yaml"), "-r", srv.URL+"/missing.yaml")
	if code != exitUsage || !strings.Contains(stderr, "404") {
		t.Errorf("missing: exit %d, %s", code, stderr)
	}
}
