package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/cel-go/common/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gavelpolicy/gavel/api"
	pubcel "github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/internal/cel"
)

// kindClient addresses objects by kind only.
type kindClient struct{}

func (kindClient) Get(context.Context, string, string, string, string) (map[string]any, error) {
	return nil, ErrNotFound
}
func (kindClient) List(context.Context, string, string, string, *metav1.LabelSelector) ([]map[string]any, error) {
	return nil, nil
}
func (kindClient) Create(_ context.Context, o map[string]any) (map[string]any, error) { return o, nil }
func (kindClient) Update(_ context.Context, o map[string]any) (map[string]any, error) { return o, nil }
func (kindClient) Delete(context.Context, string, string, string, string) error       { return nil }

// resourceClient also addresses them by resource.
type resourceClient struct{ kindClient }

func (resourceClient) GetResource(_ context.Context, apiVersion, resource, namespace, name string) (map[string]any, error) {
	return map[string]any{"metadata": map[string]any{"name": name, "namespace": namespace}, "resource": apiVersion + "/" + resource}, nil
}
func (resourceClient) ListResources(context.Context, string, string, string, map[string]string) (map[string]any, error) {
	return map[string]any{"items": []any{}}, nil
}
func (resourceClient) PostResource(_ context.Context, _, _, _ string, o map[string]any) (map[string]any, error) {
	return o, nil
}
func (resourceClient) ToGVR(context.Context, string, string) (schema.GroupVersionResource, error) {
	return schema.GroupVersionResource{}, nil
}

type imageDataOnly struct{}

func (imageDataOnly) ImageData(_ context.Context, ref string, _ *api.ImageRegistryCredentials) (map[string]any, error) {
	if ref != "ghcr.io/a/b:1" {
		return nil, fmt.Errorf("image %s: %w", ref, ErrNotFound)
	}
	return map[string]any{"image": ref, "resolvedImage": "ghcr.io/a/b@sha256:42", "configData": map[string]any{"os": "linux"}}, nil
}

type entries map[string]any

func (e entries) GlobalContextEntry(_ context.Context, name string) (any, error) {
	v, ok := e[name]
	if !ok {
		return nil, fmt.Errorf("entry %s: %w", name, ErrNotFound)
	}
	return v, nil
}

func TestCELLibrariesFromEngineHosts(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	full, err := New(WithClient(resourceClient{}), WithRegistryClient(imageDataOnly{}), WithGlobalContext(entries{"e": map[string]any{"p": "v"}}),
		WithClock(func() time.Time { return at }))
	if err != nil {
		t.Fatal(err)
	}
	kindOnly, err := New(WithClient(kindClient{}))
	if err != nil {
		t.Fatal(err)
	}
	bare, err := New()
	if err != nil {
		t.Fatal(err)
	}
	env, err := cel.NewEnv(cel.WithLibraries(cel.GeneratingPolicyLibraries))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		e    *Engine
		expr string
		err  string // "" for true
	}{
		{full, `resource.Get("v1", "configmaps", "ns", "x").resource == "v1/configmaps"`, ""},
		{full, `image.GetMetadata("ghcr.io/a/b:1").config.os == "linux" && image.GetMetadata("ghcr.io/a/b:1").tag == "1" && image.GetMetadata("ghcr.io/a/b:1").digest == "sha256:42"`, ""},
		{full, `globalContext.Get("e", "p") == "v" && globalContext.Get("none", "") == null`, ""},
		{full, `globalContext.Get("e", "q") == "v"`, `projection "q" not found`},
		{full, `time.now() == timestamp("2025-03-04T05:06:07Z")`, ""},
		{full, `http.Get("https://x") != null`, "http library: no HTTP client (engine.WithCELLibraries): not configured"},
		{full, `generator.Apply("ns", [])`, "generator library: no generator"},
		{kindOnly, `resource.Get("v1", "configmaps", "ns", "x").size() > 0`, "the Client does not address objects by resource"},
		{bare, `resource.Get("v1", "configmaps", "ns", "x").size() > 0`, "resource library: no Client (engine.WithClient)"},
		{bare, `image.GetMetadata("x") != null`, "no RegistryClient"},
		{bare, `globalContext.Get("x", "") != null`, "no GlobalContext"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			c := env.NewCompiler(false)
			p, err := c.Compile("dyn("+tt.expr+")", cel.Variable)
			if err != nil {
				t.Fatal(err)
			}
			v, err := c.NewEvaluation(context.Background(), &cel.Input{Libraries: tt.e.cfg.celLibraries()}, nil).Eval(p)
			if tt.err == "" {
				if err != nil || v != types.True {
					t.Fatalf("%v %v", v, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v, want %q", err, tt.err)
			}
			if strings.Contains(tt.err, "no ") && !errors.Is(err, ErrNotConfigured) {
				t.Fatalf("error %v does not match ErrNotConfigured", err)
			}
		})
	}
}

func TestCELLibrariesOption(t *testing.T) {
	h := celUnconfigured("mine")
	e, err := New(WithCELLibraries(pubcel.Libraries{HTTP: h, HostCallTimeout: time.Second, AllowHTTPInNamespacedPolicies: true}))
	if err != nil {
		t.Fatal(err)
	}
	l := e.cfg.celLibraries()
	if l.HTTP != h || l.HostCallTimeout != time.Second || !l.AllowHTTPInNamespacedPolicies || l.Now == nil {
		t.Fatalf("libraries %+v", l)
	}
	def, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if l := def.cfg.celLibraries(); l.HostCallTimeout != DefaultLimits().HostCallTimeout {
		t.Fatalf("host call timeout %v", l.HostCallTimeout)
	}
}
