package cel_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gavelpolicy/gavel/internal/cel"
)

var (
	libEnvOnce sync.Once
	libEnvV    *cel.Env
	libEnvErr  error
)

// libEnv is an environment with every library.
func libEnv(t testing.TB) *cel.Env {
	t.Helper()
	libEnvOnce.Do(func() {
		libEnvV, libEnvErr = cel.NewEnv(cel.WithLibraries(cel.ValidatingPolicyLibraries | cel.GeneratorLibrary))
	})
	if libEnvErr != nil {
		t.Fatal(libEnvErr)
	}
	return libEnvV
}

// fakeResources is a resource host: objects by "apiVersion/resource",
// namespace and name.
type fakeResources struct {
	mu      sync.Mutex
	objects map[string][]map[string]any
	posted  []string
	calls   int
	ctxSeen []context.Context
	err     error
}

func (f *fakeResources) note(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.ctxSeen = append(f.ctxSeen, ctx)
	return f.err
}

func meta(o map[string]any) (string, string, map[string]any) {
	m, _ := o["metadata"].(map[string]any)
	ns, _ := m["namespace"].(string)
	name, _ := m["name"].(string)
	labels, _ := m["labels"].(map[string]any)
	return ns, name, labels
}

func (f *fakeResources) GetResource(ctx context.Context, apiVersion, resource, namespace, name string) (map[string]any, error) {
	if err := f.note(ctx); err != nil {
		return nil, err
	}
	for _, o := range f.objects[apiVersion+"/"+resource] {
		if ns, n, _ := meta(o); ns == namespace && n == name {
			return o, nil
		}
	}
	return nil, nil
}

func (f *fakeResources) ListResources(ctx context.Context, apiVersion, resource, namespace string, labels map[string]string) (map[string]any, error) {
	if err := f.note(ctx); err != nil {
		return nil, err
	}
	items := []any{}
	for _, o := range f.objects[apiVersion+"/"+resource] {
		ns, _, l := meta(o)
		if namespace != "" && ns != namespace {
			continue
		}
		ok := true
		for k, v := range labels {
			ok = ok && l[k] == v
		}
		if ok {
			items = append(items, o)
		}
	}
	return map[string]any{"apiVersion": apiVersion, "kind": "List", "metadata": map[string]any{}, "items": items}, nil
}

func (f *fakeResources) PostResource(ctx context.Context, apiVersion, resource, namespace string, obj map[string]any) (map[string]any, error) {
	if err := f.note(ctx); err != nil {
		return nil, err
	}
	f.posted = append(f.posted, apiVersion+"/"+resource+"@"+namespace)
	if resource == "subjectaccessreviews" {
		out := map[string]any{}
		for k, v := range obj {
			out[k] = v
		}
		out["status"] = map[string]any{"allowed": true}
		return out, nil
	}
	return obj, nil
}

func (f *fakeResources) ToGVR(ctx context.Context, apiVersion, kind string) (schema.GroupVersionResource, error) {
	if err := f.note(ctx); err != nil {
		return schema.GroupVersionResource{}, err
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	if kind != "Deployment" && kind != "ConfigMap" {
		return schema.GroupVersionResource{}, fmt.Errorf("no matches for kind %q in version %q", kind, apiVersion)
	}
	return gv.WithResource(strings.ToLower(kind) + "s"), nil
}

func cm(ns, name string, labels map[string]any, data map[string]any) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": labels}, "data": data}
}

func newResources() *fakeResources {
	return &fakeResources{objects: map[string][]map[string]any{
		"v1/configmaps": {
			cm("kube-system", "allowed-registry", nil, map[string]any{"registry": "ghcr.io/"}),
			cm("prod", "a", map[string]any{"env": "prod"}, nil),
			cm("prod", "b", map[string]any{"env": "dev"}, nil),
			cm("dev", "c", map[string]any{"env": "dev"}, nil),
		},
		"apps/v1/deployments": {
			{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "prod"}, "spec": map[string]any{"replicas": float64(4)}},
		},
	}}
}

// fakeHTTP answers by method and URL.
type fakeHTTP struct {
	mu   sync.Mutex
	reqs []cel.HTTPRequest
}

func (f *fakeHTTP) Do(ctx context.Context, req cel.HTTPRequest) (cel.HTTPResponse, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	switch req.Method + " " + req.URL {
	case "GET https://api.test/health":
		return cel.HTTPResponse{StatusCode: 200, Body: []byte(`{"status": "ok", "count": 3}`)}, nil
	case "GET https://api.test/list":
		return cel.HTTPResponse{StatusCode: 200, Body: []byte(`[1, 2]`)}, nil
	case "GET https://api.test/missing":
		return cel.HTTPResponse{StatusCode: 404, Body: []byte(`not found`)}, nil
	case "GET https://api.test/slow":
		<-ctx.Done()
		return cel.HTTPResponse{}, ctx.Err()
	case "POST https://api.test/echo":
		return cel.HTTPResponse{StatusCode: 201, Body: []byte(`{"received": ` + string(bytes.TrimSpace(req.Body)) + `}`)}, nil
	case "GET https://api.test/headers":
		return cel.HTTPResponse{StatusCode: 200, Body: []byte(fmt.Sprintf(`{"team": %q, "ca": %v}`, req.Headers["X-Team"], req.CABundle != ""))}, nil
	}
	return cel.HTTPResponse{}, errors.New("connection refused")
}

type fakeImages map[string]map[string]any

func (f fakeImages) ImageMetadata(_ context.Context, ref string) (map[string]any, error) {
	d, ok := f[ref]
	if !ok {
		return nil, fmt.Errorf("image %s: not found", ref)
	}
	return d, nil
}

type fakeGlobal map[string]any

func (f fakeGlobal) GlobalReference(_ context.Context, name, projection string) (any, error) {
	v, ok := f[name]
	if !ok {
		return nil, nil
	}
	if projection == "" {
		return v, nil
	}
	m, _ := v.(map[string]any)
	p, ok := m[projection]
	if !ok {
		return nil, fmt.Errorf("projection %q not found", projection)
	}
	return p, nil
}

type fakeGenerator struct {
	got map[string][]map[string]any
}

func (f *fakeGenerator) GenerateResources(_ context.Context, namespace string, objects []map[string]any) error {
	if f.got == nil {
		f.got = map[string][]map[string]any{}
	}
	f.got[namespace] = append(f.got[namespace], objects...)
	return nil
}

func testLibraries() *cel.Libraries {
	return &cel.Libraries{
		Resource: newResources(),
		HTTP:     &fakeHTTP{},
		ImageData: fakeImages{"ghcr.io/kyverno/kyverno:latest": {
			"image": "ghcr.io/kyverno/kyverno:latest", "resolvedImage": "ghcr.io/kyverno/kyverno:latest@sha256:6aefddb645ee6963afd681b1845c661d0ea4c3b20ab9db86d9e753b203d385f2",
			"manifest": map[string]any{"schemaVersion": float64(2), "layers": []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip"}}},
			"config":   map[string]any{"architecture": "amd64", "os": "linux"},
		}},
		GlobalContext: fakeGlobal{"team-values": map[string]any{"someValue": "enabled", "count": float64(2)}},
		Generator:     &fakeGenerator{},
		Now:           func() time.Time { return time.Date(2025, 1, 2, 15, 30, 0, 0, time.UTC) },
		Random:        bytes.NewReader(bytes.Repeat([]byte{7}, 1024)),
	}
}

// evalLib compiles expr as a variable's expression (of any type) in the
// library environment and evaluates it.
func evalLib(t *testing.T, ns, expr string, libs *cel.Libraries) (ref.Val, error) {
	t.Helper()
	var opts []cel.CompilerOption
	if ns != "" {
		opts = append(opts, cel.InNamespace(ns))
	}
	c := libEnv(t).NewCompiler(false, opts...)
	p, err := c.Compile(expr, cel.Variable)
	if err != nil {
		return nil, err
	}
	return c.NewEvaluation(context.Background(), &cel.Input{Object: pod(), Libraries: libs}, nil).Eval(p)
}

// literal evaluates a CEL literal for comparisons.
func literal(t *testing.T, expr string) ref.Val {
	t.Helper()
	c := libEnv(t).NewCompiler(false)
	p, err := c.Compile(expr, cel.Variable)
	if err != nil {
		t.Fatalf("literal %s: %v", expr, err)
	}
	v, err := c.NewEvaluation(context.Background(), &cel.Input{}, nil).Eval(p)
	if err != nil {
		t.Fatalf("literal %s: %v", expr, err)
	}
	return v
}

type libCase struct {
	name string
	ns   string // namespace of a namespaced policy
	expr string
	// want is a CEL expression of the expected value (same type, equal).
	want string
	// err is a substring of the evaluation's error; compileErr of the
	// compilation's.
	err, compileErr string
	errIs           error
	libs            func(*cel.Libraries)
}

func runLibCases(t *testing.T, cases []libCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			libs := testLibraries()
			if tt.libs != nil {
				tt.libs(libs)
			}
			got, err := evalLib(t, tt.ns, tt.expr, libs)
			var ce *cel.CompileError
			switch {
			case tt.compileErr != "":
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.compileErr) {
					t.Fatalf("error %v, want a compile error with %q", err, tt.compileErr)
				}
				return
			case errors.As(err, &ce):
				t.Fatalf("compile: %v", err)
			case tt.err != "" || tt.errIs != nil:
				if err == nil {
					t.Fatalf("value %v, want an error %q", got, tt.err)
				}
				if !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %q, want it to contain %q", err, tt.err)
				}
				if tt.errIs != nil && !errors.Is(err, tt.errIs) {
					t.Fatalf("error %v does not match %v", err, tt.errIs)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			want := literal(t, tt.want)
			if got.Type() != want.Type() || got.Equal(want) != types.True {
				t.Fatalf("got %v (%s), want %v (%s)", got, got.Type().TypeName(), want, want.Type().TypeName())
			}
		})
	}
}

func TestResourceLibrary(t *testing.T) {
	forbidden := func(l *cel.Libraries) {
		l.Resource.(*fakeResources).err = apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("no RBAC"))
	}
	runLibCases(t, []libCase{
		{name: "get", expr: `resource.Get("v1", "configmaps", "kube-system", "allowed-registry").data["registry"]`, want: `"ghcr.io/"`},
		{name: "get camelCase", expr: `resource.get("v1", "configmaps", "kube-system", "allowed-registry").data.registry`, want: `"ghcr.io/"`},
		{name: "get missing is null", expr: `resource.Get("v1", "configmaps", "kube-system", "nope")`, want: `null`},
		{name: "list all namespaces", expr: `resource.List("v1", "configmaps", "").items.size()`, want: `4`},
		{name: "list namespace", expr: `dyn(resource.List("v1", "configmaps", object.metadata.namespace).items).map(c, c.metadata.name)`, want: `["a", "b"]`},
		{name: "list labels", expr: `dyn(resource.List("v1", "configmaps", "prod", {"env": "dev"}).items).map(c, c.metadata.name)`, want: `["b"]`},
		{name: "items are any, as upstream", expr: `resource.List("v1", "configmaps", "").items.map(c, c)`, compileErr: "expression of type 'any' cannot be range of a comprehension"},
		{name: "list empty", expr: `resource.list("apps/v1", "statefulsets", "prod").items.size() == 0`, want: `true`},
		{name: "objects' integers are ints", expr: `dyn(resource.List("apps/v1", "deployments", "prod").items).exists(d, d.spec.replicas > 3 && type(d.spec.replicas) == int)`, want: `true`},
		{name: "post subjectaccessreview", expr: `resource.Post("authorization.k8s.io/v1", "subjectaccessreviews", {"kind": dyn("SubjectAccessReview"), "apiVersion": dyn("authorization.k8s.io/v1"), "spec": dyn({"user": "alice"})}).status.allowed`, want: `true`},
		{name: "post namespaced", expr: `resource.Post("v1", "configmaps", "prod", {"metadata": dyn({"name": "x"}), "data": dyn({"n": 1})}).data.n`, want: `1`},
		{name: "toGVR", expr: `resource.ToGVR("apps/v1", "Deployment") == resource.toGVR("apps/v1", "Deployment")`, want: `true`},
		{name: "list by gvr", expr: `resource.List(resource.ToGVR("apps/v1", "Deployment"), "prod").items[0].metadata.name`, want: `"web"`},
		{name: "get by gvr", expr: `resource.Get(resource.ToGVR("v1", "ConfigMap"), "prod", "a").metadata.labels.env`, want: `"prod"`},
		{name: "toGVR unknown kind", expr: `resource.ToGVR("v1", "Nope")`, err: `failed to map kind to resource: no matches for kind "Nope"`},
		{name: "forbidden list", expr: `resource.List("v1", "configmaps", "")`, libs: forbidden, err: "failed to list resource: permission denied: configmaps is forbidden"},
		{name: "forbidden get", expr: `resource.Get("v1", "configmaps", "a", "b")`, libs: forbidden, err: "failed to get resource: permission denied"},
		{name: "forbidden post", expr: `resource.Post("v1", "configmaps", {"a": dyn(1)})`, libs: forbidden, err: "failed to create resource: permission denied"},
		{name: "host error", expr: `resource.Get("v1", "configmaps", "a", "b")`, libs: func(l *cel.Libraries) { l.Resource.(*fakeResources).err = errors.New("etcd down") }, err: "failed to get resource: etcd down"},
		{name: "not configured", expr: `resource.Get("v1", "configmaps", "a", "b")`, libs: func(l *cel.Libraries) { l.Resource = nil }, err: "failed to get resource: resource library: not configured", errIs: cel.ErrNotConfigured},
		{name: "namespaced get", ns: "kube-system", expr: `resource.Get("v1", "configmaps", "allowed-registry").data.registry`, want: `"ghcr.io/"`},
		{name: "namespaced list", ns: "prod", expr: `resource.List("v1", "configmaps").items.size()`, want: `2`},
		{name: "namespaced list labels", ns: "prod", expr: `resource.list("v1", "configmaps", {"env": "prod"}).items[0].metadata.name`, want: `"a"`},
		{name: "namespaced no namespace argument", ns: "prod", expr: `resource.List("v1", "configmaps", "dev")`, compileErr: "found no matching overload for 'List'"},
		{name: "cluster needs a namespace", expr: `resource.Get("v1", "configmaps", "x")`, compileErr: "found no matching overload for 'Get'"},
		{name: "unknown function", expr: `resource.Fetch("v1", "configmaps")`, compileErr: "undeclared reference to 'Fetch'"},
	})
}

func TestHTTPLibrary(t *testing.T) {
	pemBundle, err := os.ReadFile("testdata/kyverno-svc.pem")
	if err != nil {
		t.Fatal(err)
	}
	runLibCases(t, []libCase{
		{name: "get object", expr: `http.Get("https://api.test/health")`, want: `{"status": dyn("ok"), "count": dyn(3.0), "statusCode": dyn(200)}`},
		{name: "numbers are doubles", expr: `type(http.get("https://api.test/health").count) == double`, want: `true`},
		{name: "get array", expr: `http.Get("https://api.test/list")`, want: `{"body": dyn([1.0, 2.0]), "statusCode": dyn(200)}`},
		{name: "get not JSON", expr: `http.Get("https://api.test/missing")`, want: `{"body": dyn(null), "statusCode": dyn(404)}`},
		{name: "get headers", expr: `http.Get("https://api.test/headers", {"X-Team": "blue"}).team`, want: `"blue"`},
		{name: "post", expr: `http.Post("https://api.test/echo", {"labels": object.metadata.labels.app}, {"Content-Type": "application/json"})`, want: `{"received": dyn({"labels": "web"}), "statusCode": dyn(201)}`},
		{name: "post camelCase", expr: `http.post("https://api.test/echo", [1, 2]).received`, want: `[1.0, 2.0]`},
		{name: "client with CA", expr: `http.Client("` + strings.ReplaceAll(string(pemBundle), "\n", `\n`) + `").Get("https://api.test/headers").ca`, want: `true`},
		{name: "client without CA", expr: `http.client("").get("https://api.test/headers").ca`, want: `false`},
		{name: "client bad CA", expr: `http.Client("nope")`, err: "request failed: failed to parse PEM CA bundle for APICall"},
		{name: "transport error", expr: `http.Get("https://elsewhere.test/")`, err: "request failed: connection refused"},
		{name: "timeout", expr: `http.Get("https://api.test/slow")`, libs: func(l *cel.Libraries) { l.HostCallTimeout = 10 * time.Millisecond }, errIs: context.DeadlineExceeded},
		{name: "namespaced refused", ns: "prod", expr: `http.Get("https://api.test/health")`, errIs: cel.ErrHTTPInNamespacedPolicy, err: "http calls are not allowed in namespaced policies"},
		{name: "namespaced allowed", ns: "prod", expr: `http.Get("https://api.test/health").status`, want: `"ok"`,
			libs: func(l *cel.Libraries) { l.AllowHTTPInNamespacedPolicies = true }},
		{name: "not configured", expr: `http.Get("https://api.test/health")`, libs: func(l *cel.Libraries) { l.HTTP = nil }, errIs: cel.ErrNotConfigured},
		{name: "wrong argument type", expr: `http.Get(1)`, compileErr: "found no matching overload for 'Get'"},
	})
}

func TestHTTPPostBody(t *testing.T) {
	libs := testLibraries()
	if _, err := evalLib(t, "", `http.Post("https://api.test/echo", {"a": dyn("<b>"), "n": dyn(1), "l": dyn([dyn(true), dyn(null)])})`, libs); err != nil {
		t.Fatal(err)
	}
	reqs := libs.HTTP.(*fakeHTTP).reqs
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	// protobuf's JSON mapping of the value, as encoding/json writes it
	// (keys sorted, HTML escaped, a final newline)
	if got, want := string(reqs[0].Body), `{"a":"\u003cb\u003e","l":[true,null],"n":1}`+"\n"; got != want {
		t.Fatalf("body %q, want %q", got, want)
	}
	if reqs[0].Method != "POST" || len(reqs[0].Headers) != 0 {
		t.Fatalf("request %+v", reqs[0])
	}
}

// TestHTTPRequestNamespace: the host learns the calling policy's
// namespace, so that a host allowing namespaced policies' calls can still
// refuse some of them (the CLI answers their mocked requests only).
func TestHTTPRequestNamespace(t *testing.T) {
	for _, ns := range []string{"", "prod"} {
		libs := testLibraries()
		libs.AllowHTTPInNamespacedPolicies = true
		if _, err := evalLib(t, ns, `http.Get("https://api.test/health")`, libs); err != nil {
			t.Fatal(err)
		}
		if reqs := libs.HTTP.(*fakeHTTP).reqs; len(reqs) != 1 || reqs[0].Namespace != ns {
			t.Errorf("namespace %q: requests %+v", ns, reqs)
		}
	}
}

func TestImageLibraries(t *testing.T) {
	const digest = "sha256:6aefddb645ee6963afd681b1845c661d0ea4c3b20ab9db86d9e753b203d385f2"
	runLibCases(t, []libCase{
		{name: "registry", expr: `parseImageReference("registry.k8s.io/kube-apiserver-arm64").registry()`, want: `"registry.k8s.io"`},
		{name: "docker hub", expr: `[image("nginx:latest").registry(), image("nginx:latest").repository()]`, want: `["index.docker.io", "library/nginx"]`},
		{name: "repository", expr: `parseImageReference("registry.k8s.io/kube-apiserver-arm64").repository()`, want: `"kube-apiserver-arm64"`},
		{name: "default tag", expr: `[image("registry.k8s.io/x").tag(), image("registry.k8s.io/x").identifier()]`, want: `["latest", "latest"]`},
		{name: "tag", expr: `parseImageReference("registry.k8s.io/x:testtag").tag()`, want: `"testtag"`},
		{name: "digest", expr: `parseImageReference("registry.k8s.io/x@` + digest + `").digest()`, want: `"` + digest + `"`},
		{name: "tag and digest", expr: `[image("registry.k8s.io/x:latest@` + digest + `").identifier(), image("registry.k8s.io/x:latest@` + digest + `").tag()]`, want: `["` + digest + `", ""]`},
		{name: "contains digest", expr: `[image("x").containsDigest(), image("x:1").containsDigest(), image("x@` + digest + `").containsDigest()]`, want: `[false, false, true]`},
		{name: "no digest", expr: `image("registry.k8s.io/x:testtag").digest()`, want: `""`},
		{name: "equal", expr: `image("nginx") == image("index.docker.io/library/nginx:latest")`, want: `false`},
		{name: "isImage", expr: `[isImage("registry.k8s.io/kube-apiserver-arm64:latest"), isImage("registry.k8s.io/kube-apiserver-arm64:@")]`, want: `[true, false]`},
		{name: "parse error", expr: `parseImageReference("registry.k8s.io/kube-apiserver-arm64:@")`, err: "could not parse reference: registry.k8s.io/kube-apiserver-arm64:@"},
		{name: "all from ghcr", expr: `object.spec.containers.map(c, image(c.image)).map(i, i.registry()).all(r, r == "ghcr.io")`, want: `false`},
		{name: "isImage wants a string", expr: `isImage(0)`, compileErr: "found no matching overload for 'isImage'"},
		{name: "metadata", expr: `image.GetMetadata("ghcr.io/kyverno/kyverno:latest").config.architecture`, want: `"amd64"`},
		{name: "metadata camelCase", expr: `image.getMetadata("ghcr.io/kyverno/kyverno:latest").manifest.schemaVersion == 2`, want: `true`},
		{name: "metadata layers", expr: `image.GetMetadata("ghcr.io/kyverno/kyverno:latest").manifest.layers.all(l, l.mediaType.startsWith("application/vnd.oci"))`, want: `true`},
		{name: "metadata error", expr: `image.GetMetadata("nginx")`, err: "failed to get image data: image nginx: not found"},
		{name: "metadata not configured", expr: `image.GetMetadata("nginx")`, libs: func(l *cel.Libraries) { l.ImageData = nil }, errIs: cel.ErrNotConfigured},
		{name: "image variable and function", expr: `image(image.GetMetadata("ghcr.io/kyverno/kyverno:latest").resolvedImage).digest()`, want: `"sha256:6aefddb645ee6963afd681b1845c661d0ea4c3b20ab9db86d9e753b203d385f2"`},
	})
}

func TestGlobalContextAndGeneratorLibraries(t *testing.T) {
	runLibCases(t, []libCase{
		{name: "get", expr: `globalContext.Get("team-values", "").someValue`, want: `"enabled"`},
		{name: "get without projection", expr: `globalContext.get("team-values").count`, want: `2.0`},
		{name: "projection", expr: `globalContext.Get("team-values", "someValue")`, want: `"enabled"`},
		{name: "missing entry is null", expr: `globalContext.Get("nope", "")`, want: `null`},
		{name: "unknown projection", expr: `globalContext.Get("team-values", "nope")`, err: `failed to get global reference: projection "nope" not found`},
		{name: "not configured", expr: `globalContext.Get("x", "")`, libs: func(l *cel.Libraries) { l.GlobalContext = nil }, errIs: cel.ErrNotConfigured},
		{name: "apply", expr: `generator.Apply("prod", [{"kind": dyn("ConfigMap"), "metadata": dyn({"name": "x"})}])`, want: `true`},
		{name: "apply in own namespace", ns: "prod", expr: `generator.apply("prod", [{"kind": dyn("ConfigMap")}])`, want: `true`},
		{name: "apply in another namespace", ns: "prod", expr: `generator.Apply("dev", [{"kind": dyn("ConfigMap")}])`, err: `a policy of namespace "prod" cannot generate resources in namespace "dev"`},
		{name: "apply wants objects", expr: `generator.Apply("prod", ["x"])`, compileErr: "found no matching overload for 'Apply'"},
	})
}

func TestGeneratorGetsObjects(t *testing.T) {
	libs := testLibraries()
	if _, err := evalLib(t, "", `generator.Apply(object.metadata.namespace, [{"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"), "metadata": dyn({"name": object.metadata.name}), "data": dyn({"n": 3})}])`, libs); err != nil {
		t.Fatal(err)
	}
	got := libs.Generator.(*fakeGenerator).got["prod"]
	if len(got) != 1 || got[0]["kind"] != "ConfigMap" || got[0]["metadata"].(map[string]any)["name"] != "web" || got[0]["data"].(map[string]any)["n"] != float64(3) {
		t.Fatalf("generated %v", got)
	}
}

func TestPureLibraries(t *testing.T) {
	runLibCases(t, []libCase{
		{name: "service account", expr: `type(parseServiceAccount("system:serviceaccount:kube-system:replicaset-controller")) == user.ServiceAccount`, want: `true`},
		{name: "service account fields", expr: `[user.parseServiceAccount("system:serviceaccount:system:my-sa").Name, parseServiceAccount("system:serviceaccount:system:my-sa").Namespace]`, want: `["my-sa", "system"]`},
		{name: "not a service account", expr: `parseServiceAccount("alice").Name`, want: `""`},
		{name: "md5", expr: `md5("nginx:latest")`, want: `"403554a5dfea78d1ca4a8ff5830ac2ae"`},
		{name: "sha1", expr: `hash.sha1("somestring")`, want: `"da63fb69aeb03c776bd23e91e2c1cb3df30135d3"`},
		{name: "sha256", expr: `sha256("abc")`, want: `"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"`},
		{name: "round 2", expr: `math.round(10.125, 2)`, want: `10.13`},
		{name: "round 0", expr: `math.round(10.125, 0)`, want: `10.0`},
		{name: "round -2", expr: `math.round(12345.6789, -2)`, want: `12300.0`},
		{name: "cel-go round", expr: `math.round(2.5)`, want: `3.0`},
		{name: "json unmarshal", expr: `json.unmarshal('{"key": "value", "count": 5}')`, want: `{"key": dyn("value"), "count": dyn(5.0)}`},
		{name: "json array", expr: `json.unmarshal('[1, 2, 3]')`, want: `[1.0, 2.0, 3.0]`},
		{name: "json error", expr: `json.unmarshal('{')`, err: "unexpected end of JSON input"},
		{name: "json not a string", expr: `json.unmarshal(1)`, err: "unsupported type conversion from 'int' to string"},
		{name: "json marshal", expr: `json.marshal({"key": "value"})`, want: `'{"key":"value"}'`},
		{name: "json marshal list", expr: `json.marshal([1, 2, 3])`, want: `"[1,2,3]"`},
		{name: "json round trip", expr: `json.marshal(json.unmarshal("{\"a\":\"b\"}"))`, want: `'{"a":"b"}'`},
		{name: "json marshal object", expr: `json.marshal(object.metadata.labels)`, want: `'{"app":"web"}'`},
		{name: "yaml", expr: `yaml.parse("items:\n- a\n- b\n- c")`, want: `{"items": ["a", "b", "c"]}`},
		{name: "yaml count", expr: `yaml.parse('count: 42').count`, want: `42.0`},
		{name: "yaml error", expr: `yaml.parse("a: [")`, err: "yaml"},
		{name: "truncate", expr: `time.truncate(timestamp("2025-01-02T03:45:27Z"), duration("1h"))`, want: `timestamp("2025-01-02T03:00:00Z")`},
		{name: "toCron", expr: `time.toCron(timestamp("2025-01-02T15:30:00Z"))`, want: `"30 15 2 1 4"`},
		{name: "now", expr: `time.now()`, want: `timestamp("2025-01-02T15:30:00Z")`},
		{name: "now minus", expr: `time.now() - duration("24h")`, want: `timestamp("2025-01-01T15:30:00Z")`},
		{name: "listObjToMap", expr: `listObjToMap([{"name": "app1"}], [{"version": "v1"}], "name", "version")`, want: `{"app1": "v1"}`},
		{name: "listObjToMap numbers", expr: `listObjToMap([{"id": "x"}, {"id": "y"}], [{"val": 1}, {"val": 2}], "id", "val")`, want: `{"x": 1, "y": 2}`},
		{name: "listObjToMap containers", expr: `transform.listObjToMap(object.spec.containers.map(c, {"name": c.name}), object.spec.containers.map(c, {"image": c.image}), "name", "image")`, want: `{"a": "nginx:1.25", "b": "busybox"}`},
		{name: "listObjToMap env", expr: `listObjToMap(object.spec.containers, object.spec.containers, "name", "image")["b"]`, want: `"busybox"`},
		{name: "listObjToMap missing value", expr: `listObjToMap([{"k": "a"}], [{"x": 1}], "k", "v")`, want: `{"a": null}`},
		{name: "listObjToMap lengths", expr: `listObjToMap([{"k": "a"}], [], "k", "v")`, err: "listObjToMap must take lists of equal length. list1: 1, list2: 0"},
		{name: "listObjToMap key not a string", expr: `listObjToMap([{"k": 1}], [{"v": 1}], "k", "v")`, err: "the passed key name cannot be handled as a string in the key object list"},
		{name: "listObjToMap not objects", expr: `listObjToMap([1], [2], "k", "v")`, err: "cannot be handled as a map"},
		{name: "gzip round trip", expr: `gzip.decompress(gzip.compress("hello"))`, want: `"hello"`},
		{name: "gzip deterministic", expr: `base64.encode(gzip.compress("hello"))`, want: `"H4sIAAAAAAAA/8pIzcnJBwQAAP//hqYQNgUAAAA="`},
		{name: "gzip bad input", expr: `gzip.decompress(b"nope")`, err: "unexpected EOF"},
		{name: "random default", expr: `random().matches("^[0-9a-z]{8}$")`, want: `true`},
		{name: "random pattern", expr: `random("[A-Z0-9]{8}-[A-Z0-9]{4}").matches("^[A-Z0-9]{8}-[A-Z0-9]{4}$")`, want: `true`},
		{name: "random prefixed", expr: `random.random("[a-f0-9]{32}").size()`, want: `32`},
		{name: "random bad pattern", expr: `random("[")`, err: "missing closing ]"},
		{name: "cel.bind", expr: `cel.bind(x, 2, x * x)`, want: `4`},
		{name: "base64", expr: `string(base64.decode("aGk="))`, want: `"hi"`},
		{name: "regex extension", expr: `regex.replace("abc", "b", "x")`, want: `"axc"`},
	})
}

func TestX509Decode(t *testing.T) {
	raw, err := os.ReadFile("testdata/kyverno-svc.pem")
	if err != nil {
		t.Fatal(err)
	}
	pemText := strings.ReplaceAll(string(raw), "\n", `\n`)
	// the values upstream's documentation shows for this certificate
	runLibCases(t, []libCase{
		{name: "fields", expr: `[x509.decode("` + pemText + `").IsCA, x509.decode("` + pemText + `").BasicConstraintsValid]`, want: `[true, true]`},
		{name: "issuer", expr: `x509.decode("` + pemText + `").Issuer.CommonName`, want: `"*.kyverno.svc"`},
		{name: "validity", expr: `[x509.decode("` + pemText + `").NotBefore, x509.decode("` + pemText + `").NotAfter]`, want: `["2022-10-10T11:46:32Z", "2023-10-10T12:46:32Z"]`},
		{name: "key usage", expr: `x509.decode("` + pemText + `").KeyUsage`, want: `37.0`},
		{name: "public key", expr: `x509.decode("` + pemText + `").PublicKey.E`, want: `65537.0`},
		{name: "extensions", expr: `x509.decode("` + pemText + `").Extensions.map(e, e.Value)`, want: `["AwICpA==", "MAMBAf8=", "BBSWivt1n53+61ZGAczAi0mleejTKg=="]`},
		{name: "expiry", expr: `timestamp(x509.decode("` + pemText + `").NotAfter) - time.now() > duration("168h")`, want: `false`},
		{name: "not PEM", expr: `x509.decode("nope")`, err: "failed to decode PEM block"},
		{name: "other block", expr: `x509.decode("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")`, err: "PEM block neither contains a CERTIFICATE or CERTIFICATE REQUEST"},
	})
	// the whole value, against the golden file
	got, err := evalLib(t, "", `json.marshal(x509.decode("`+pemText+`"))`, testLibraries())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/x509-decode.json", []byte(got.Value().(string)+"\n"))
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if os.Getenv("GAVEL_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (GAVEL_UPDATE_GOLDEN=1 writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs:\n got %s\nwant %s", path, got, want)
	}
}

// TestLibraryBindingPerEvaluation: one program, Evaluations with different
// Libraries, policies' namespaces and contexts.
func TestLibraryBindingPerEvaluation(t *testing.T) {
	e := libEnv(t)
	c := e.NewCompiler(false)
	now, err := c.Compile(`string(time.now())`, cel.MessageExpression)
	if err != nil {
		t.Fatal(err)
	}
	rnd, err := c.Compile(`random("[a-z]{12}")`, cel.MessageExpression)
	if err != nil {
		t.Fatal(err)
	}
	at := func(ts time.Time, seed byte) *cel.Input {
		return &cel.Input{Libraries: &cel.Libraries{Now: func() time.Time { return ts }, Random: bytes.NewReader(bytes.Repeat([]byte{seed}, 64))}}
	}
	eval := func(p *cel.Program, in *cel.Input) string {
		v, err := c.NewEvaluation(context.Background(), in, nil).Eval(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(v.(types.String))
	}
	t1, t2 := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := eval(now, at(t1, 1)); got != "2024-05-06T07:08:09Z" {
		t.Fatalf("now %s", got)
	}
	if got := eval(now, at(t2, 1)); got != "2030-01-01T00:00:00Z" {
		t.Fatalf("now %s", got)
	}
	a, b, a2 := eval(rnd, at(t1, 1)), eval(rnd, at(t1, 2)), eval(rnd, at(t1, 1))
	if a != a2 || a == b {
		t.Fatalf("random: same randomness %q, %q; other %q", a, a2, b)
	}
	// inside a comprehension, the binding is still found
	comp, err := c.Compile(`[1, 2].map(i, string(time.now()))`, cel.Variable)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.NewEvaluation(context.Background(), at(t1, 1), nil).Eval(comp)
	if err != nil || v.Equal(literal(t, `["2024-05-06T07:08:09Z", "2024-05-06T07:08:09Z"]`)) != types.True {
		t.Fatalf("comprehension: %v %v", v, err)
	}
	// without Libraries: the default clock
	before := time.Now().Add(-time.Second)
	got, err := time.Parse(time.RFC3339, eval(now, &cel.Input{}))
	if err != nil || got.Before(before.Truncate(time.Second)) {
		t.Fatalf("default clock: %v %v", got, err)
	}
}

type ctxKey struct{}

func TestLibraryContextAndNamespaces(t *testing.T) {
	res := newResources()
	libs := &cel.Libraries{Resource: res}
	in := &cel.Input{Object: pod(), Libraries: libs}
	scope := new(cel.Scope)
	ctx := context.WithValue(context.Background(), ctxKey{}, "request-1")
	names := map[string]string{}
	for _, ns := range []string{"prod", "dev"} {
		c := libEnv(t).NewCompiler(false, cel.InNamespace(ns))
		// the same variable in two policies of two namespaces, on one
		// Input and Scope: never shared, it reads each policy's namespace
		if _, err := c.AddVariable("cms", `dyn(resource.List("v1", "configmaps").items).map(c, c.metadata.name)`); err != nil {
			t.Fatal(err)
		}
		p, err := c.Compile(`variables.cms.join(",")`, cel.MessageExpression)
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.NewEvaluation(ctx, in, scope).Eval(p)
		if err != nil {
			t.Fatal(err)
		}
		names[ns] = string(v.(types.String))
	}
	if names["prod"] != "a,b" || names["dev"] != "c" {
		t.Fatalf("lists %v", names)
	}
	if res.calls != 2 {
		t.Fatalf("%d host calls, want 2", res.calls)
	}
	for _, seen := range res.ctxSeen {
		if seen.Value(ctxKey{}) != "request-1" {
			t.Fatal("the host did not get the evaluation's context")
		}
	}
}

func TestLibraryCompileErrors(t *testing.T) {
	tests := []struct{ expr, want string }{
		{`md5(1)`, "found no matching overload for 'md5'"},
		{`math.round(1.5, 1, 2)`, "found no matching overload for 'math.round'"},
		{`time.nowish()`, "undeclared reference to 'time'"},
		{`json.unmarshal()`, "found no matching overload for 'unmarshal'"},
		{`x509.decode()`, "found no matching overload for 'x509.decode'"},
		{`random(1)`, "found no matching overload for 'random'"},
		{`listObjToMap([], [], "a")`, "found no matching overload for 'listObjToMap'"},
		{`gzip.decompress("x")`, "found no matching overload for 'gzip.decompress'"},
		{`parseServiceAccount("x").Email`, "undefined field 'Email'"},
		{`globalContext.Get()`, "found no matching overload for 'Get'"},
		{`image.GetMetadata()`, "found no matching overload for 'GetMetadata'"},
		{`http.Post("u")`, "found no matching overload for 'Post'"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			_, err := libEnv(t).NewCompiler(false).Compile(tt.expr, cel.Variable)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestEnvWithoutLibraries: the validate.cel environment has none of them.
func TestEnvWithoutLibraries(t *testing.T) {
	for _, expr := range []string{`md5("x")`, `resource.Get("v1", "configmaps", "a", "b")`, `time.now()`, `image("nginx")`, `base64.encode(b"x")`} {
		if _, err := env(t).NewCompiler(false).Compile(expr, cel.Variable); err == nil {
			t.Errorf("%s compiles without the libraries", expr)
		}
	}
}

func TestLibrarySets(t *testing.T) {
	for name, set := range map[string]cel.LibrarySet{
		"validating": cel.ValidatingPolicyLibraries, "mutating": cel.MutatingPolicyLibraries,
		"generating": cel.GeneratingPolicyLibraries, "deleting": cel.DeletingPolicyLibraries,
		"image validating": cel.ImageValidatingPolicyLibraries,
	} {
		e, err := cel.NewEnv(cel.WithLibraries(set))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		has := func(expr string) bool {
			_, err := e.NewCompiler(false).Compile(expr, cel.Variable)
			return err == nil
		}
		if got, want := has(`generator.Apply("a", [])`), set&cel.GeneratorLibrary != 0; got != want {
			t.Errorf("%s: generator %v", name, got)
		}
		if got, want := has(`x509.decode("")`), set&cel.X509Library != 0; got != want {
			t.Errorf("%s: x509 %v", name, got)
		}
		if got, want := has(`parseServiceAccount("")`), set&cel.UserLibrary != 0; got != want {
			t.Errorf("%s: user %v", name, got)
		}
		if !has(`resource.Get("v1", "configmaps", "a", "b").size() >= 0 && sha256("") != ""`) {
			t.Errorf("%s: resource and hash missing", name)
		}
	}
	if _, err := cel.NewEnv(cel.WithLibraries(1 << 30)); err == nil {
		t.Fatal("an unknown library is accepted")
	}
}

// TestLibraryCallsAreNotShared: a variable calling a host is evaluated
// by each Evaluation of a Scope.
func TestLibraryCallsAreNotShared(t *testing.T) {
	res := newResources()
	in := &cel.Input{Object: pod(), Libraries: &cel.Libraries{Resource: res}}
	scope := new(cel.Scope)
	for i := 0; i < 3; i++ {
		c := libEnv(t).NewCompiler(false)
		if _, err := c.AddVariable("cm", `resource.Get("v1", "configmaps", "prod", "a")`); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AddVariable("h", `sha256(object.metadata.name)`); err != nil {
			t.Fatal(err)
		}
		p, err := c.Compile(`variables.cm.metadata.name == "a" && variables.h.size() == 64`, cel.Validation)
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.NewEvaluation(context.Background(), in, scope).Eval(p)
		if err != nil || v != types.True {
			t.Fatalf("%v %v", v, err)
		}
	}
	if res.calls != 3 {
		t.Fatalf("%d host calls, want 3", res.calls)
	}
}

// TestDocumentedPolicies evaluates the variables and validations of the
// sample policies of upstream's CEL libraries documentation.
func TestDocumentedPolicies(t *testing.T) {
	type check struct {
		expr string
		want bool
	}
	tests := []struct {
		name        string
		vars        [][2]string
		object      map[string]any
		request     map[string]any
		validations []check
	}{{
		name: "restrict-image-registries",
		vars: [][2]string{
			{"allContainers", `object.spec.containers + object.spec.?initContainers.orValue([]) + object.spec.?ephemeralContainers.orValue([])`},
			{"cm", `resource.Get("v1", "configmaps", "kube-system", "allowed-registry")`},
			{"allowedRegistry", `variables.cm.data[?'registry'].orValue('')`},
		},
		object: map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"image": "ghcr.io/a:1"}}, "initContainers": []any{map[string]any{"image": "nginx"}}}},
		validations: []check{
			{`variables.allContainers.all(c, c.image.startsWith(variables.allowedRegistry))`, false},
			{`variables.allContainers.exists(c, c.image.startsWith(variables.allowedRegistry))`, true},
			{`"image must be from registry: " + string(variables.allowedRegistry) == "image must be from registry: ghcr.io/"`, true},
		},
	}, {
		name: "check-subjectaccessreview",
		vars: [][2]string{
			{"res", `{"kind": dyn("SubjectAccessReview"), "apiVersion": dyn("authorization.k8s.io/v1"), "spec": dyn({"resourceAttributes": dyn({"resource": "namespaces", "namespace": string(object.metadata.namespace), "verb": "delete", "group": ""}), "user": dyn(request.userInfo.username)})}`},
			{"subjectaccessreview", `resource.Post("authorization.k8s.io/v1", "subjectaccessreviews", variables.res)`},
		},
		object:      map[string]any{"metadata": map[string]any{"name": "c", "namespace": "prod"}},
		request:     map[string]any{"userInfo": map[string]any{"username": "alice"}},
		validations: []check{{`has(variables.subjectaccessreview.status) && variables.subjectaccessreview.status.allowed == true`, true}},
	}, {
		name:    "restrict-pod-creation",
		vars:    [][2]string{{"sa", `parseServiceAccount(request.userInfo.username)`}},
		request: map[string]any{"userInfo": map[string]any{"username": "system:serviceaccount:kube-system:replicaset-controller"}},
		validations: []check{
			{`variables.sa.Namespace == "kube-system"`, true},
			{`variables.sa.Name in ["replicaset-controller", "deployment-controller", "daemonset-controller"]`, true},
		},
	}, {
		name:        "check-hash",
		vars:        [][2]string{{"expectedHash", `"403554a5dfea78d1ca4a8ff5830ac2ae"`}, {"md5sum", `md5(object.spec.template.spec.containers[0].image)`}, {"accept", `variables.md5sum == variables.expectedHash`}},
		object:      map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"image": "nginx:latest"}}}}}},
		validations: []check{{`variables.accept`, true}},
	}, {
		name: "validate-cpu-precision",
		vars: [][2]string{
			{"containers", `object.spec.containers + object.spec.?initContainers.orValue([])`},
			{"cpuRequests", `variables.containers.map(c, has(c.resources.requests) && has(c.resources.requests.cpu) ? double(c.resources.requests.cpu.replace('m', '')) / 1000.0 : 0.0)`},
		},
		object: map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "250m"}}},
			map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "1255m"}}},
		}}},
		validations: []check{{`variables.cpuRequests.all(cpu, cpu == 0.0 || math.round(cpu, 2) == cpu)`, false}, {`variables.cpuRequests.all(cpu, cpu <= 8.0)`, true}},
	}, {
		name:        "require-key",
		vars:        [][2]string{{"envMap", `listObjToMap(object.spec.containers[0].env, object.spec.containers[0].env, "name", "value")`}},
		object:      map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"env": []any{map[string]any{"name": "KEY", "value": "89383938"}, map[string]any{"name": "endpoint", "value": "licensing.corp.org"}}}}}},
		validations: []check{{`variables.envMap["KEY"] == "123-456-789"`, false}, {`variables.envMap["endpoint"] == "licensing.corp.org"`, true}},
	}, {
		name:        "require-security-approval",
		vars:        [][2]string{{"approval", `json.unmarshal(object.metadata.annotations["security.approval"])`}},
		object:      map[string]any{"metadata": map[string]any{"annotations": map[string]any{"security.approval": `{"approved": false, "reviewedBy": "platform-security"}`}}},
		validations: []check{{`variables.approval.approved == true`, false}},
	}, {
		name:        "check-goodboi",
		vars:        [][2]string{{"pets", `yaml.parse(object.metadata.annotations.pets)`}},
		object:      map[string]any{"metadata": map[string]any{"annotations": map[string]any{"pets": "species:\n  dog: lab\n  isGoodBoi: false\n  snacks:\n  - chimken\n"}}},
		validations: []check{{`variables.pets.species.isGoodBoi == true`, false}, {`variables.pets.species.snacks[0] == "chimken"`, true}},
	}, {
		name:        "check-images",
		vars:        [][2]string{{"images", `object.spec.containers.map(e, parseImageReference(e.image)) + object.spec.?initContainers.orValue([]).map(e, parseImageReference(e.image))`}},
		object:      map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"image": "nginx@sha256:6aefddb645ee6963afd681b1845c661d0ea4c3b20ab9db86d9e753b203d385f2"}}}},
		validations: []check{{`variables.images.map(i, i.containsDigest()).all(e, e)`, true}},
	}, {
		name:        "cpol-apicall-correct",
		vars:        [][2]string{{"dcount", `globalContext.Get("team-values", "")`}},
		validations: []check{{`variables.dcount != 0`, true}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := libEnv(t).NewCompiler(false)
			for _, v := range tt.vars {
				if _, err := c.AddVariable(v[0], v[1]); err != nil {
					t.Fatalf("variable %s: %v", v[0], err)
				}
			}
			in := &cel.Input{Object: tt.object, Request: tt.request, Libraries: testLibraries()}
			ev := c.NewEvaluation(context.Background(), in, nil)
			for _, v := range tt.validations {
				p, err := c.Compile(v.expr, cel.Validation)
				if err != nil {
					t.Fatal(err)
				}
				got, err := ev.Eval(p)
				if err != nil || got != types.Bool(v.want) {
					t.Errorf("%s: %v %v, want %v", v.expr, got, err, v.want)
				}
			}
		})
	}
}

// TestLibrariesConcurrent: one program, Evaluations in many goroutines,
// each Input with its own clock and a shared host.
func TestLibrariesConcurrent(t *testing.T) {
	c := libEnv(t).NewCompiler(false, cel.InNamespace("prod"))
	p, err := c.Compile(`string(time.now().getFullYear()) + ":" + dyn(resource.List("v1", "configmaps").items).map(c, c.metadata.name).join(",")`, cel.MessageExpression)
	if err != nil {
		t.Fatal(err)
	}
	res := newResources()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			year := 2000 + g
			libs := &cel.Libraries{Resource: res, Now: func() time.Time { return time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC) }}
			for range 50 {
				v, err := c.NewEvaluation(context.Background(), &cel.Input{Libraries: libs}, nil).Eval(p)
				if want := fmt.Sprintf("%d:a,b", year); err != nil || v != types.String(want) {
					errs <- fmt.Errorf("got %v %v, want %s", v, err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestX509Requests(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "team.example"}, DNSNames: []string{"a.example"}}, rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	csr := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "ec"}, NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1e9, 0)}
	certDER, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &ecKey.PublicKey, ecKey)
	if err != nil {
		t.Fatal(err)
	}
	ecCert := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certDER}))
	esc := func(s string) string { return strings.ReplaceAll(s, "\n", `\n`) }
	runLibCases(t, []libCase{
		{name: "request subject", expr: `x509.decode("` + esc(csr) + `").Subject.CommonName`, want: `"team.example"`},
		{name: "request names", expr: `x509.decode("` + esc(csr) + `").DNSNames`, want: `["a.example"]`},
		{name: "request key", expr: `x509.decode("` + esc(csr) + `").PublicKey.E`, want: `65537.0`},
		{name: "ECDSA certificate", expr: `x509.decode("` + esc(ecCert) + `")`, err: "certificate should use rsa algorithm"},
	})
}

func TestGzipBound(t *testing.T) {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(make([]byte, 40<<20)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	c := libEnv(t).NewCompiler(false)
	p, err := c.Compile(`gzip.decompress(base64.decode(object.s)).size()`, cel.Variable)
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"s": base64.StdEncoding.EncodeToString(buf.Bytes())}
	if _, err := c.NewEvaluation(context.Background(), &cel.Input{Object: obj}, nil).Eval(p); err == nil || !strings.Contains(err.Error(), "output larger than 33554432 bytes") {
		t.Fatalf("a 40 MiB output: %v", err)
	}
}
