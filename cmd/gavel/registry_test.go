package main

import (
	"bytes"
	"encoding/base64"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	ggcr "github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestApplyRegistry: with --registry, imageRegistry context entries read
// a real registry with the local docker credentials (DOCKER_CONFIG);
// without it, gavel apply reaches no registry (the rule errors).
func TestApplyRegistry(t *testing.T) {
	const user, password = "robot", "t0ken"
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ref, err := name.ParseReference(host + "/shop/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := ggcr.Write(ref, img, ggcr.WithAuth(&authn.Basic{Username: user, Password: password})); err != nil {
		t.Fatal(err)
	}
	policy := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: image-schema
spec:
  validationFailureAction: Enforce
  rules:
  - name: schema
    match:
      any:
      - resources:
          kinds: [Pod]
    context:
    - name: imageData
      imageRegistry:
        reference: "{{ request.object.spec.containers[0].image }}"
    validate:
      message: "schema {{ imageData.manifest.schemaVersion }}"
      deny:
        conditions:
          any:
          - key: "{{ imageData.manifest.schemaVersion }}"
            operator: NotEquals
            value: 2
`
	dir := writeFiles(t, map[string]string{"policy.yaml": policy, "pod.yaml": pod("app", "team: a", host+"/shop/app:v1")})
	docker := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	if err := os.WriteFile(filepath.Join(docker, "config.json"), []byte(`{"auths":{"`+host+`":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{filepath.Join(dir, "policy.yaml"), "-r", filepath.Join(dir, "pod.yaml"), "--detailed-results"}

	t.Setenv("DOCKER_CONFIG", docker)
	code, out, stderr := applyRun(t, "", append(args, "--registry")...)
	if code != exitOK || !strings.Contains(out, "rule schema: pass") {
		t.Errorf("--registry with credentials: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = applyRun(t, "", args...)
	if code != exitFailed || !strings.Contains(out, "rule schema: error") {
		t.Errorf("without --registry: exit %d\n%s", code, out)
	}
	// gavel test --registry, on the same files
	testFile := "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: registry\npolicies: [policy.yaml]\nresources: [pod.yaml]\n" +
		"results:\n- policy: image-schema\n  rule: schema\n  resources: [app]\n  kind: Pod\n  result: pass\n"
	if err := os.WriteFile(filepath.Join(dir, "kyverno-test.yaml"), []byte(testFile), 0o644); err != nil {
		t.Fatal(err)
	}
	var tout, terr bytes.Buffer
	if code := run([]string{"test", dir, "--registry"}, nil, &tout, &terr); code != exitOK || !strings.Contains(tout.String(), "1 passed, 0 failed") {
		t.Errorf("test --registry: exit %d\n%s%s", code, tout.String(), terr.String())
	}
	tout.Reset()
	if code := run([]string{"test", dir}, nil, &tout, &terr); code != exitFailed {
		t.Errorf("test without --registry: exit %d\n%s", code, tout.String())
	}

	t.Setenv("DOCKER_CONFIG", t.TempDir())
	code, out, _ = applyRun(t, "", append(args, "--registry")...)
	if code != exitFailed || !strings.Contains(out, "rule schema: error") {
		t.Errorf("--registry without credentials: exit %d\n%s", code, out)
	}
}
