package remote_test

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	ggcr "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/remote"
)

// echo answers with the request's method, path, a header and its body.
func echo(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/big" {
		fmt.Fprint(w, strings.Repeat("x", 4096))
		return
	}
	if strings.HasSuffix(r.URL.Path, "/redirect") {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
		return
	}
	if r.URL.Path == "/missing" {
		http.Error(w, `{"error": "nope"}`, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	fmt.Fprintf(w, `{"method": %q, "path": %q, "team": %q, "body": %q}`, r.Method, r.URL.Path, r.Header.Get("X-Team"), body)
}

func newHTTP(t *testing.T, opts ...remote.HTTPOption) *remote.HTTP {
	t.Helper()
	h, err := remote.NewHTTP(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHTTPRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(echo))
	defer srv.Close()
	h := newHTTP(t, remote.WithHTTPBlocklist(), remote.WithHTTPMaxBytes(1024))
	ctx := context.Background()
	resp, err := h.Do(ctx, cel.HTTPRequest{Method: "POST", URL: srv.URL + "/api", Headers: map[string]string{"X-Team": "blue"}, Body: []byte(`{"a":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"method": "POST", "path": "/api", "team": "blue", "body": "{\"a\":1}"}`; resp.StatusCode != 200 || string(resp.Body) != want {
		t.Fatalf("response %d %s", resp.StatusCode, resp.Body)
	}
	resp, err = h.Do(ctx, cel.HTTPRequest{Method: "GET", URL: srv.URL + "/missing"})
	if err != nil || resp.StatusCode != 404 {
		t.Fatalf("an error status is a response: %v %v", resp, err)
	}
	if _, err := h.Do(ctx, cel.HTTPRequest{Method: "GET", URL: srv.URL + "/big"}); err == nil || !strings.Contains(err.Error(), "larger than 1024 bytes") {
		t.Fatalf("size bound: %v", err)
	}
	if _, err := h.Do(ctx, cel.HTTPRequest{Method: "GET", URL: "://nope"}); err == nil {
		t.Fatal("a malformed URL is sent")
	}
}

func TestHTTPCABundle(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(echo))
	defer srv.Close()
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	h := newHTTP(t, remote.WithHTTPBlocklist())
	ctx := context.Background()
	if _, err := h.Do(ctx, cel.HTTPRequest{Method: "GET", URL: srv.URL}); err == nil {
		t.Fatal("the system's roots trust the test server")
	}
	resp, err := h.Do(ctx, cel.HTTPRequest{Method: "GET", URL: srv.URL, CABundle: ca})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("with the CA bundle: %v %v", resp, err)
	}
	if _, err := h.Do(ctx, cel.HTTPRequest{Method: "GET", URL: srv.URL, CABundle: "nope"}); err == nil || !strings.Contains(err.Error(), "failed to parse PEM CA bundle") {
		t.Fatalf("bad bundle: %v", err)
	}
}

func TestHTTPBlocklistAndAllowlist(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(echo))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	ctx := context.Background()
	get := func(h *remote.HTTP, url string) error {
		_, err := h.Do(ctx, cel.HTTPRequest{Method: "GET", URL: url})
		return err
	}
	// upstream's default blocks loopback, by address and resolved name
	def := newHTTP(t)
	for _, u := range []string{srv.URL, fmt.Sprintf("http://localhost:%d/", port), "http://169.254.169.254/latest/meta-data"} {
		if err := get(def, u); !errors.Is(err, remote.ErrHTTPBlocked) {
			t.Errorf("%s: %v, want blocked", u, err)
		}
	}
	// a blocked host name is refused before any resolution
	byName := newHTTP(t, remote.WithHTTPBlocklist("Metadata.Internal."))
	if err := get(byName, "http://metadata.internal/computeMetadata"); !errors.Is(err, remote.ErrHTTPBlocked) {
		t.Errorf("host name: %v", err)
	}
	allow := newHTTP(t, remote.WithHTTPBlocklist(), remote.WithHTTPAllowlist(srv.URL+"/api"))
	for u, ok := range map[string]bool{srv.URL + "/api": true, srv.URL + "/api/x": true, srv.URL + "/apix": false, srv.URL + "/other": false, srv.URL + "/api/../other": false,
		fmt.Sprintf("http://localhost:%d/api", port): false} {
		if err := get(allow, u); (err == nil) != ok {
			t.Errorf("allowlist %s: %v", u, err)
		}
	}
	// a redirect to a refused URL is refused
	if err := get(allow, srv.URL+"/api/redirect?to=/other"); err == nil {
		t.Error("a redirect leaves the allowlist")
	}
	for _, bad := range [][]remote.HTTPOption{{remote.WithHTTPBlocklist("10.0.0.0/33")}, {remote.WithHTTPAllowlist("api.example.com")}} {
		if _, err := remote.NewHTTP(bad...); err == nil {
			t.Error("a malformed list is accepted")
		}
	}
}

// TestHTTPThroughCEL evaluates the http library on the network host.
func TestHTTPThroughCEL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(echo))
	defer srv.Close()
	env, err := cel.NewEnv(cel.WithLibraries(cel.ValidatingPolicyLibraries))
	if err != nil {
		t.Fatal(err)
	}
	c := env.NewCompiler(false)
	p, err := c.Compile(`http.Post("`+srv.URL+`/api", {"n": 1}, {"X-Team": "red"})`, cel.Variable)
	if err != nil {
		t.Fatal(err)
	}
	in := &cel.Input{Libraries: &cel.Libraries{HTTP: newHTTP(t, remote.WithHTTPBlocklist())}}
	v, err := c.NewEvaluation(context.Background(), in, nil).Eval(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.ConvertToNative(mapType)
	if err != nil {
		t.Fatal(err)
	}
	m := got.(map[string]any)
	if m["team"] != "red" || m["body"] != "{\"n\":1}\n" || m["statusCode"] != 200 {
		t.Fatalf("response %#v", m)
	}
}

func TestRegistryImageMetadata(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(256, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(host + "/team/app:1.0")
	if err := ggcr.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	digest, _ := img.Digest()
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}})
	idxRef, _ := name.ParseReference(host + "/team/multi:2.0")
	if err := ggcr.WriteIndex(idxRef, idx); err != nil {
		t.Fatal(err)
	}
	idxDigest, _ := idx.Digest()
	r := remote.NewRegistry()
	ctx := context.Background()

	data, err := r.ImageMetadata(ctx, host+"/team/app:1.0")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"image": host + "/team/app:1.0", "registry": host, "repository": "team/app", "identifier": "1.0", "tag": "1.0",
		"digest": digest.String(), "resolvedImage": host + "/team/app:1.0@" + digest.String()}
	for k, v := range want {
		if data[k] != v {
			t.Errorf("%s = %v, want %v", k, data[k], v)
		}
	}
	if m := data["manifest"].(map[string]any); m["schemaVersion"] != float64(2) || len(m["layers"].([]any)) != 2 {
		t.Errorf("manifest %v", m)
	}
	if _, ok := data["config"].(map[string]any)["rootfs"]; !ok || data["imageIndex"] != nil {
		t.Errorf("config %v, index %v", data["config"], data["imageIndex"])
	}

	byDigest, err := r.ImageMetadata(ctx, host+"/team/app@"+digest.String())
	if err != nil || byDigest["tag"] != nil || byDigest["resolvedImage"] != host+"/team/app@"+digest.String() {
		t.Errorf("by digest: %v %v", byDigest, err)
	}

	multi, err := r.ImageMetadata(ctx, host+"/team/multi:2.0")
	if err != nil {
		t.Fatal(err)
	}
	if multi["digest"] != idxDigest.String() || multi["imageIndex"].(map[string]any)["manifests"] == nil {
		t.Errorf("index: digest %v, imageIndex %v", multi["digest"], multi["imageIndex"])
	}
	if len(multi["manifest"].(map[string]any)["layers"].([]any)) != 2 {
		t.Errorf("index: the platform image's manifest is missing: %v", multi["manifest"])
	}
	if _, err := r.ImageMetadata(ctx, host+"/team/none:1"); err == nil {
		t.Error("a missing image has metadata")
	}
}

var mapType = reflectTypeOfMap()
