package inmem_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/cel-go/common/types"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/internal/cel"
)

func celHosts() *cel.Libraries {
	cluster := inmem.New(
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "registries", "namespace": "kube-system"}, "data": map[string]any{"allowed": "ghcr.io"}},
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "namespace": "prod", "labels": map[string]any{"team": "blue"}}},
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "b", "namespace": "prod", "labels": map[string]any{"team": "red"}}},
		map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": map[string]any{"name": "deny", "namespace": "prod"}},
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "prod"}},
	)
	reg := inmem.NewRegistry()
	reg.Set("ghcr.io/team/app:1.0", map[string]any{
		"image": "ghcr.io/team/app:1.0", "resolvedImage": "ghcr.io/team/app@sha256:0123", "registry": "ghcr.io",
		"repository": "team/app", "identifier": "1.0", "manifest": map[string]any{"schemaVersion": 2.0},
		"configData": map[string]any{"architecture": "arm64"},
	})
	// metadata set as it is: nothing is derived from the reference
	reg.SetMetadata("ghcr.io/team/set:2", map[string]any{"image": "ghcr.io/team/set:2", "registry": "ghcr.io", "config": map[string]any{"os": "linux"}})
	gctx := inmem.NewGlobalContext()
	gctx.Set("limits", map[string]any{"maxReplicas": 5.0})
	h := inmem.NewHTTP()
	if err := respond(h, "GET", "https://api.test/teams/blue", map[string]any{"approved": true}); err != nil {
		panic(err)
	}
	h.Handle("", "https://api.test/echo", func(r cel.HTTPRequest) (cel.HTTPResponse, error) {
		return cel.HTTPResponse{StatusCode: 202, Body: r.Body}, nil
	})
	return &cel.Libraries{Resource: cluster, ImageData: reg, GlobalContext: gctx, HTTP: h}
}

func TestCELLibrariesOnTheInMemoryHosts(t *testing.T) {
	env, err := cel.NewEnv(cel.WithLibraries(cel.ValidatingPolicyLibraries))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ns, expr string
		want     bool
		err      string
	}{
		{expr: `resource.Get("v1", "configmaps", "kube-system", "registries").data.allowed == "ghcr.io"`, want: true},
		{expr: `dyn(resource.Get("v1", "configmaps", "kube-system", "nope")) == null`, want: true},
		{expr: `dyn(resource.Get("v1", "namespaces/status", "", "prod")).metadata.name == "prod"`, want: true},
		{expr: `resource.Get("v1", "pods/log", "prod", "x")`, err: `subresource "log" of pods is not supported`},
		{expr: `dyn(resource.List("v1", "configmaps", "").items).size() == 3`, want: true},
		{expr: `dyn(resource.List("v1", "configmaps", "prod", {"team": "red"}).items).map(c, c.metadata.name) == ["b"]`, want: true},
		{expr: `resource.List("networking.k8s.io/v1", "networkpolicies", "prod").kind == "NetworkPolicyList"`, want: true},
		{ns: "prod", expr: `dyn(resource.List("v1", "configmaps").items).size() == 2`, want: true},
		{expr: `dyn(resource.List(resource.ToGVR("networking.k8s.io/v1", "NetworkPolicy"), "prod").items).size() == 1`, want: true},
		{expr: `resource.Post("v1", "configmaps", "prod", {"metadata": {"name": "new"}}).metadata.namespace == "prod"`, want: true},
		{expr: `image.GetMetadata("ghcr.io/team/app:1.0").config.architecture == "arm64" && image.GetMetadata("ghcr.io/team/app:1.0").tag == "1.0" && image.GetMetadata("ghcr.io/team/app:1.0").digest == "sha256:0123"`, want: true},
		{expr: `image.GetMetadata("ghcr.io/team/set:2").config.os == "linux" && size(image.GetMetadata("ghcr.io/team/set:2")) == 3`, want: true},
		{expr: `image.GetMetadata("ghcr.io/team/other:1")`, err: "failed to get image data: image ghcr.io/team/other:1: not found"},
		{expr: `globalContext.Get("limits", "").maxReplicas == 5.0 && globalContext.Get("limits", "maxReplicas") == 5.0`, want: true},
		{expr: `globalContext.Get("absent", "") == null`, want: true},
		{expr: `globalContext.Get("limits", "minReplicas")`, err: `projection "minReplicas" not found in global context entry "limits"`},
		{expr: `http.Get("https://api.test/teams/blue").approved && http.Get("https://api.test/teams/blue").statusCode == 200`, want: true},
		{expr: `http.Post("https://api.test/echo", {"k": "v"}).k == "v"`, want: true},
		{expr: `http.Post("https://api.test/teams/blue", {"k": "v"})`, err: "request failed: in-memory HTTP: no response for POST https://api.test/teams/blue: not found"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			var opts []cel.CompilerOption
			if tt.ns != "" {
				opts = append(opts, cel.InNamespace(tt.ns))
			}
			c := env.NewCompiler(false, opts...)
			p, err := c.Compile(tt.expr, cel.Variable)
			if err != nil {
				t.Fatal(err)
			}
			v, err := c.NewEvaluation(context.Background(), &cel.Input{Libraries: celHosts()}, nil).Eval(p)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v != types.Bool(tt.want) {
				t.Fatalf("got %v", v)
			}
		})
	}
}

func TestHTTPNotFoundIsTyped(t *testing.T) {
	_, err := inmem.NewHTTP().Do(context.Background(), cel.HTTPRequest{Method: "GET", URL: "https://x"})
	if !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("error %v", err)
	}
}

// TestHTTPFallback: the handlers answer first (method-specific before any
// method); the fallback host gets the other requests, with the caller's
// context.
func TestHTTPFallback(t *testing.T) {
	type ctxKey struct{}
	net := inmem.NewHTTP()
	net.Handle("", "https://other.test/x", func(cel.HTTPRequest) (cel.HTTPResponse, error) {
		return cel.HTTPResponse{StatusCode: 503, Body: []byte(`{"from":"network"}`)}, nil
	})
	var seen any
	h := inmem.NewHTTP()
	h.SetFallback(fallbackFunc(func(ctx context.Context, req cel.HTTPRequest) (cel.HTTPResponse, error) {
		seen = ctx.Value(ctxKey{})
		return net.Do(ctx, req)
	}))
	if err := respond(h, "POST", "https://mock.test/x", map[string]any{"from": "post mock"}); err != nil {
		t.Fatal(err)
	}
	if err := respond(h, "", "https://mock.test/x", map[string]any{"from": "mock"}); err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), ctxKey{}, "caller")
	for _, tc := range []struct {
		method, url, body string
		status            int
	}{
		{"POST", "https://mock.test/x", `{"from":"post mock"}`, 200},
		{"GET", "https://mock.test/x", `{"from":"mock"}`, 200},
		{"GET", "https://other.test/x", `{"from":"network"}`, 503},
	} {
		resp, err := h.Do(ctx, cel.HTTPRequest{Method: tc.method, URL: tc.url})
		if err != nil || string(resp.Body) != tc.body || resp.StatusCode != tc.status {
			t.Errorf("%s %s = %d %s, %v; want %d %s", tc.method, tc.url, resp.StatusCode, resp.Body, err, tc.status, tc.body)
		}
	}
	if seen != "caller" {
		t.Errorf("the fallback got context value %v, want the caller's", seen)
	}
	if _, err := h.Do(ctx, cel.HTTPRequest{Method: "GET", URL: "https://nowhere.test"}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("a request nobody answers: %v, want ErrNotFound from the fallback", err)
	}
	h.SetFallback(nil)
	if _, err := h.Do(ctx, cel.HTTPRequest{Method: "GET", URL: "https://other.test/x"}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("without a fallback: %v, want ErrNotFound", err)
	}
}

type fallbackFunc func(context.Context, cel.HTTPRequest) (cel.HTTPResponse, error)

func (f fallbackFunc) Do(ctx context.Context, req cel.HTTPRequest) (cel.HTTPResponse, error) {
	return f(ctx, req)
}

// TestHTTPServiceCalls: Call answers apiCall service requests from the
// handlers Do uses: the body of a 2xx response, an error for another
// status or a URL without a handler (wrapping engine.ErrNotFound).
func TestHTTPServiceCalls(t *testing.T) {
	h := inmem.NewHTTP()
	if err := respond(h, "", "https://svc/any", map[string]any{"ok": true}); err != nil {
		t.Fatal(err)
	}
	h.Handle("POST", "https://svc/echo", func(req cel.HTTPRequest) (cel.HTTPResponse, error) {
		return cel.HTTPResponse{StatusCode: 201, Body: append([]byte(req.Headers["X-Id"]+":"), req.Body...)}, nil
	})
	h.Handle("GET", "https://svc/echo", func(req cel.HTTPRequest) (cel.HTTPResponse, error) {
		return cel.HTTPResponse{StatusCode: 200, Body: []byte("get")}, nil
	})
	h.Handle("", "https://svc/broken", func(cel.HTTPRequest) (cel.HTTPResponse, error) {
		return cel.HTTPResponse{StatusCode: 503, Body: []byte("down")}, nil
	})
	for _, tt := range []struct {
		name     string
		req      engine.ServiceRequest
		want     string
		err      string
		notFound bool
	}{
		{name: "any method", req: engine.ServiceRequest{URL: "https://svc/any"}, want: `{"ok":true}`},
		{name: "post", req: engine.ServiceRequest{URL: "https://svc/echo", Method: "POST", Headers: map[string]string{"X-Id": "7"}, Body: []byte(`{"a":1}`)}, want: `7:{"a":1}`},
		{name: "no method is GET", req: engine.ServiceRequest{URL: "https://svc/echo"}, want: "get"},
		{name: "error status", req: engine.ServiceRequest{URL: "https://svc/broken"}, err: "service https://svc/broken: HTTP 503"},
		{name: "no handler", req: engine.ServiceRequest{URL: "https://svc/none"}, notFound: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := h.Call(context.Background(), tt.req)
			switch {
			case tt.notFound:
				if !errors.Is(err, engine.ErrNotFound) {
					t.Errorf("err = %v, want engine.ErrNotFound", err)
				}
			case tt.err != "":
				if err == nil || err.Error() != tt.err {
					t.Errorf("err = %v, want %s", err, tt.err)
				}
			case err != nil || string(got) != tt.want:
				t.Errorf("Call = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// respond answers requests of method ("" for any) to url with status 200
// and the JSON of body.
func respond(h *inmem.HTTP, method, url string, body any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	h.Handle(method, url, func(cel.HTTPRequest) (cel.HTTPResponse, error) {
		return cel.HTTPResponse{StatusCode: 200, Body: data}, nil
	})
	return nil
}
