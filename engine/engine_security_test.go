package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/internal/wildcard"
)

// rbHostile are values an attacker puts in the data a policy reads: if any
// of them were evaluated, the output would show "alice", "web" or the
// secret instead of the text itself.
var rbHostile = []string{
	"{{ request.userInfo.username }}",
	"prefix {{ request.object.metadata.name }} suffix",
	"{{- request.object.metadata.name }}",
	"{{ {{ request.object.metadata.name }} }}",
	`\{{ request.object.metadata.name }}`,
	"$(./../../metadata/name)",
	"$(request.object.metadata.name)",
	"{{ cm.data.secret }}",
	"{{ to_string(`1`) }} {{@}}",
}

// rbHostileData serves every hostile value from every host interface.
type rbHostileData struct{ value string }

func (h rbHostileData) GetConfigMap(_ context.Context, ns, name string) (map[string]any, error) {
	return map[string]any{"metadata": map[string]any{"name": name, "namespace": ns},
		"data": map[string]any{"hostile": h.value, "secret": "s3cret", h.value: "key"}}, nil
}

func (h rbHostileData) RawAbsPath(context.Context, string, string, []byte) ([]byte, error) {
	return json.Marshal(map[string]any{"hostile": h.value})
}

func (h rbHostileData) Call(context.Context, engine.ServiceRequest) ([]byte, error) {
	return json.Marshal(map[string]any{"hostile": h.value})
}

func (h rbHostileData) ImageData(_ context.Context, ref string, _ *api.ImageRegistryCredentials) (map[string]any, error) {
	return map[string]any{"image": ref, "configData": map[string]any{"hostile": h.value}}, nil
}

func (h rbHostileData) GlobalContextEntry(context.Context, string) (any, error) {
	return map[string]any{"hostile": h.value}, nil
}

const rbHostilePolicies = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: reads-data
spec:
  rules:
  - name: message
    match:
      any:
      - resources:
          kinds: [Pod]
    context:
    - name: cm
      configMap:
        name: settings
        namespace: default
    - name: api
      apiCall:
        urlPath: /api/v1/x
    - name: svc
      apiCall:
        service:
          url: https://svc.example
    - name: img
      imageRegistry:
        reference: nginx
    - name: glob
      globalReference:
        name: g
    - name: copied
      variable:
        value: "{{ request.object.metadata.annotations.hostile }}"
    validate:
      message: >-
        label={{ request.object.metadata.labels.hostile }}
        annotation={{ request.object.metadata.annotations.hostile }}
        cm={{ cm.data.hostile }} api={{ api.hostile }} svc={{ svc.hostile }}
        img={{ img.configData.hostile }} glob={{ glob.hostile }} var={{ copied }}
        element={{ request.object.spec.containers[0].env[0].value }}
      deny: {}
  - name: compare
    match:
      any:
      - resources:
          kinds: [Pod]
    context:
    - name: cm
      configMap:
        name: settings
        namespace: default
    validate:
      deny:
        conditions:
          any:
          - key: "{{ cm.data.hostile }}"
            operator: NotEquals
            value: "{{ request.object.metadata.labels.hostile }}"
          - key: "{{ request.object.metadata.annotations.hostile }}"
            operator: NotEquals
            value: "{{ request.object.metadata.labels.hostile }}"
  - name: foreach
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      foreach:
      - list: request.object.spec.containers[0].env
        deny:
          conditions:
            any:
            - key: "{{ element.value }}"
              operator: NotEquals
              value: "{{ request.object.metadata.labels.hostile }}"
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: copies-data
spec:
  rules:
  - name: sm
    match:
      any:
      - resources:
          kinds: [Pod]
    context:
    - name: cm
      configMap:
        name: settings
        namespace: default
    mutate:
      patchStrategicMerge:
        metadata:
          annotations:
            whole: "{{ request.object.metadata.labels.hostile }}"
            embedded: "x {{ request.object.metadata.labels.hostile }}"
            from-cm: "{{ cm.data.hostile }}"
  - name: json
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchesJson6902: |-
        - op: add
          path: /metadata/annotations/json
          value: "{{ request.object.metadata.annotations.hostile }}"
  - name: foreach
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      foreach:
      - list: request.object.spec.containers[0].env
        patchStrategicMerge:
          metadata:
            annotations:
              each: "{{ element.value }}"
`

// TestSecurityDataIsNotCode feeds hostile text through labels, annotations,
// list elements, ConfigMaps, API and service responses, registry data and
// global context entries into messages, conditions, foreach and patches:
// the text always comes out as it went in.
func TestSecurityDataIsNotCode(t *testing.T) {
	for i, hostile := range rbHostile {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			h := rbHostileData{value: hostile}
			set := rbCompile(t, rbHostilePolicies,
				engine.WithConfigMapResolver(h), engine.WithAPIClient(h), engine.WithServiceCaller(h),
				engine.WithRegistryClient(h), engine.WithGlobalContext(h))
			pod := rbObject(t, rbPod)
			md := pod["metadata"].(map[string]any)
			md["labels"].(map[string]any)["hostile"] = hostile
			md["annotations"] = map[string]any{"hostile": hostile}
			pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["env"] = []any{map[string]any{"name": "E", "value": hostile}}
			req := func() *engine.Request {
				return &engine.Request{Operation: api.Create, Object: rbDeepCopy(pod).(map[string]any),
					UserInfo: api.UserInfoData{Username: "alice"}}
			}
			resp, err := set.Validate(context.Background(), req())
			if err != nil {
				t.Fatal(err)
			}
			res := rbResults(resp)
			msg := res["reads-data/message"].Message
			for _, part := range []string{"label", "annotation", "cm", "api", "svc", "img", "glob", "var", "element"} {
				if !strings.Contains(msg, part+"="+hostile) {
					t.Errorf("message %q does not hold %s=%q", msg, part, hostile)
				}
			}
			for _, k := range []string{"reads-data/compare", "reads-data/foreach"} {
				if res[k].Status != engine.StatusPass {
					t.Errorf("%s = %s %q: data compared unequal to itself", k, res[k].Status, res[k].Message)
				}
			}
			mresp, err := set.Mutate(context.Background(), req())
			if err != nil {
				t.Fatal(err)
			}
			ann := mresp.Resource["metadata"].(map[string]any)["annotations"].(map[string]any)
			for k, want := range map[string]string{"whole": hostile, "embedded": "x " + hostile, "from-cm": hostile, "json": hostile, "each": hostile} {
				// a JSON patch is YAML text: a value that is not valid
				// inside its quotes makes the rule fail, never changes
				// the patch
				if k == "json" && ann[k] == nil && rbResults(mresp)["copies-data/json"].Status == engine.StatusError {
					continue
				}
				if ann[k] != want {
					t.Errorf("annotation %s = %q, want %q", k, ann[k], want)
				}
			}
		})
	}
}

// TestSecurityNoBypassBySpelling is a table of requests an attacker might
// shape to slip past a rule: each must still be matched (the rule denies
// everything it matches), as upstream matches them.
func TestSecurityNoBypassBySpelling(t *testing.T) {
	denyAll := func(match, exclude string) string {
		src := `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: deny
spec:
  background: false
  rules:
  - name: all
    match:
` + match
		if exclude != "" {
			src += "    exclude:\n" + exclude
		}
		return src + `    validate:
      deny: {}
`
	}
	resources := func(lines ...string) string {
		return "      any:\n      - resources:\n" + "          " + strings.Join(lines, "\n          ") + "\n"
	}
	deploy := `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: a
        image: nginx
`
	cronjob := `
apiVersion: batch/v1
kind: CronJob
metadata:
  name: web
  namespace: shop
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: a
            image: nginx
`
	type attempt struct {
		name    string
		policy  string
		object  string
		request func(*engine.Request)
	}
	podKinds := resources("kinds: [Pod]")
	for _, tc := range []attempt{
		{"request kind wins over the object's kind", podKinds, strings.Replace(rbPod, "kind: Pod", "kind: ConfigMap", 1),
			func(r *engine.Request) { r.Kind = schema.GroupVersionKind{Version: "v1", Kind: "Pod"} }},
		{"object without apiVersion and kind", podKinds, strings.Replace(strings.Replace(rbPod, "kind: Pod\n", "", 1), "apiVersion: v1\n", "", 1),
			func(r *engine.Request) { r.Kind = schema.GroupVersionKind{Version: "v1", Kind: "Pod"} }},
		{"ephemeral containers subresource", podKinds, rbPod,
			func(r *engine.Request) {
				r.SubResource = "ephemeralcontainers"
				r.Operation = api.Update
				r.OldObject = rbObject(t, rbPod)
			}},
		{"kind with version", resources("kinds: [v1/Pod]"), rbPod, nil},
		{"kind with any version", resources("kinds: [\"*/Pod\"]"), rbPod, nil},
		{"wildcard kind", resources("kinds: [\"*\"]"), rbPod, nil},
		{"wildcard in kind", resources("kinds: [\"Po?\"]"), rbPod, nil},
		{"kind with group", resources("kinds: [apps/v1/Deployment]"), deploy, nil},
		{"Deployment for a Pod rule (autogen)", podKinds, deploy, nil},
		{"CronJob for a Pod rule (autogen)", podKinds, cronjob, nil},
		{"UPDATE when no operations are listed", podKinds, rbPod,
			func(r *engine.Request) { r.Operation = api.Update; r.OldObject = rbObject(t, rbPod) }},
		{"UPDATE among listed operations", resources("kinds: [Pod]", "operations: [CREATE, UPDATE]"), rbPod,
			func(r *engine.Request) { r.Operation = api.Update; r.OldObject = rbObject(t, rbPod) }},
		{"background scan counts as CREATE", resources("kinds: [Pod]", "operations: [CREATE]"), rbPod,
			func(r *engine.Request) { r.Operation = ""; r.Background = true }},
		{"namespace from the request", resources("kinds: [Pod]", "namespaces: [shop]"), strings.Replace(rbPod, "  namespace: shop\n", "", 1),
			func(r *engine.Request) { r.Namespace = "shop" }},
		{"namespace wildcard", resources("kinds: [Pod]", "namespaces: [\"sh*\"]"), rbPod, nil},
		{"name wildcard", resources("kinds: [Pod]", "names: [\"w?b\"]"), rbPod, nil},
		{"not excluded: name prefix", podKinds + "", rbPod, nil},
		{"not excluded: similar name", podKinds, strings.Replace(rbPod, "name: web", "name: trusted-web", 1), nil},
		{"not excluded: name in another case", podKinds, strings.Replace(rbPod, "name: web", "name: Trusted", 1), nil},
		{"not excluded: similar namespace", podKinds, strings.Replace(rbPod, "namespace: shop", "namespace: kube-system-x", 1), nil},
		{"not excluded: annotation value case", podKinds, strings.Replace(rbPod, "  labels:", "  annotations:\n    skip: \"True\"\n  labels:", 1), nil},
		{"not excluded: similar user", podKinds, rbPod, func(r *engine.Request) { r.UserInfo.Username = "admin2" }},
		{"not excluded: user in another case", podKinds, rbPod, func(r *engine.Request) { r.UserInfo.Username = "Admin" }},
		{"not excluded: similar group", podKinds, rbPod, func(r *engine.Request) { r.UserInfo.Username = "bob"; r.UserInfo.Groups = []string{"system:masters-x"} }},
		{"not excluded: similar cluster role", podKinds, rbPod, func(r *engine.Request) { r.UserInfo.Username = "bob"; r.ClusterRoles = []string{"cluster-admin-lite"} }},
		{"not excluded: kind in another case", podKinds, rbPod, nil},
		{"not excluded: subresource exclusion", podKinds, rbPod, nil},
		{"not excluded: service account of another namespace", podKinds, rbPod, func(r *engine.Request) { r.UserInfo.Username = "system:serviceaccount:other:builder" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exclude := ""
			if strings.HasPrefix(tc.name, "not excluded") {
				exclude = `      any:
      - resources:
          names: [trusted]
      - resources:
          namespaces: [kube-system]
      - resources:
          annotations:
            skip: "true"
      - resources:
          kinds: [pod, Pod/status]
      - subjects:
        - kind: User
          name: admin
        - kind: Group
          name: system:masters
        - kind: ServiceAccount
          name: builder
          namespace: kube-system
      - clusterRoles: [cluster-admin]
`
			}
			src := denyAll(tc.policy, exclude)
			if strings.HasPrefix(tc.name, "background") {
				src = strings.Replace(src, "  background: false\n", "", 1)
			}
			set := rbCompile(t, src)
			req := rbRequest(t, tc.object)
			if tc.request != nil {
				tc.request(req)
			}
			resp, err := set.Validate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			matched := false
			for _, p := range resp.Policies {
				for _, r := range p.Rules {
					if r.Status == engine.StatusFail {
						matched = true
					}
				}
			}
			if !matched {
				t.Errorf("the rule did not apply: %+v", resp.Policies)
			}
		})
	}
}

// TestSecurityUndecodableObject: an object the engine cannot read is an
// error for the caller, never a request that no rule applies to.
func TestSecurityUndecodableObject(t *testing.T) {
	set := rbCompile(t, rbRule("    validate:\n      pattern:\n        spec:\n          replicas: \"<5\"\n"))
	for _, tc := range []struct {
		name string
		req  *engine.Request
	}{
		{"no object", &engine.Request{Operation: api.Create}},
		{"invalid number", &engine.Request{Operation: api.Create, Object: map[string]any{
			"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "x"},
			"spec": map[string]any{"replicas": json.Number("1e999")}}}},
		{"invalid number in the old object", &engine.Request{Operation: api.Update,
			Object:    map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "x"}},
			OldObject: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "x"}, "spec": map[string]any{"replicas": json.Number("x")}}}},
		{"no kind", &engine.Request{Operation: api.Create, Object: map[string]any{"apiVersion": "v1", "metadata": map[string]any{"name": "x"}}}},
		{"kind not a string", &engine.Request{Operation: api.Create, Object: map[string]any{"apiVersion": "v1", "kind": 7.0, "metadata": map[string]any{"name": "x"}}}},
		{"apiVersion not a string", &engine.Request{Operation: api.Create, Object: map[string]any{"apiVersion": []any{"v1"}, "kind": "Pod", "metadata": map[string]any{"name": "x"}}}},
		{"metadata not an object", &engine.Request{Operation: api.Create, Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": "x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, op := range []string{"validate", "mutate"} {
				var err error
				if op == "validate" {
					_, err = set.Validate(context.Background(), tc.req)
				} else {
					_, err = set.Mutate(context.Background(), tc.req)
				}
				if err == nil {
					t.Errorf("%s accepted the object", op)
				} else if !errors.Is(err, engine.ErrNoObject) && !errors.Is(err, engine.ErrInvalidObject) {
					t.Errorf("%s: error %v is neither ErrNoObject nor ErrInvalidObject", op, err)
				}
			}
		})
	}
}

// TestSecurityExceptionsGate: a PolicyException applies only when the host
// enabled exceptions, only from the namespaces the host accepts, never
// when exceptions are disabled, and only for the policy and rules it
// names exactly.
func TestSecurityExceptionsGate(t *testing.T) {
	const policies = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: deny
spec:
  rules:
  - name: all
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      deny: {}
---
apiVersion: kyverno.io/v1
kind: Policy
metadata:
  name: deny
  namespace: shop
spec:
  rules:
  - name: all
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      deny: {}
`
	exc := func(ns, policy, rule string) string {
		return fmt.Sprintf(`
apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: let-it-through
  namespace: %s
spec:
  exceptions:
  - policyName: %q
    ruleNames: [%q]
  match:
    any:
    - resources:
        kinds: [Pod]
`, ns, policy, rule)
	}
	compile := func(t *testing.T, src string, opts ...exceptions.Option) *exceptions.Set {
		xs, err := exceptions.Compile(rbExceptions(t, src), opts...)
		if err != nil {
			t.Fatal(err)
		}
		return xs
	}
	for _, tc := range []struct {
		name string
		opts func(t *testing.T) []engine.Option
		// want is the status of deny/all and shop/deny/all.
		want, wantNamespaced engine.Status
	}{
		{"exceptions not enabled", func(t *testing.T) []engine.Option { return nil }, engine.StatusFail, engine.StatusFail},
		{"enabled", func(t *testing.T) []engine.Option {
			return []engine.Option{engine.WithExceptions(compile(t, exc("kyverno", "deny", "all")))}
		}, engine.StatusSkip, engine.StatusFail},
		{"enabled for the namespaced policy", func(t *testing.T) []engine.Option {
			return []engine.Option{engine.WithExceptions(compile(t, exc("kyverno", "shop/deny", "all")))}
		}, engine.StatusFail, engine.StatusSkip},
		{"from an accepted namespace", func(t *testing.T) []engine.Option {
			return []engine.Option{engine.WithExceptions(compile(t, exc("kyverno", "deny", "all"), exceptions.Namespaces("kyverno")))}
		}, engine.StatusSkip, engine.StatusFail},
		{"from another namespace", func(t *testing.T) []engine.Option {
			return []engine.Option{engine.WithExceptions(compile(t, exc("shop", "deny", "all"), exceptions.Namespaces("kyverno")))}
		}, engine.StatusFail, engine.StatusFail},
		{"from a namespace that only looks accepted", func(t *testing.T) []engine.Option {
			return []engine.Option{engine.WithExceptions(compile(t, exc("kyverno-x", "deny", "all"), exceptions.Namespaces("kyverno")))}
		}, engine.StatusFail, engine.StatusFail},
		{"namespace wildcard: accepted", func(t *testing.T) []engine.Option {
			return []engine.Option{engine.WithExceptions(compile(t, exc("kyverno", "deny", "all"), exceptions.Namespaces("kyv*")))}
		}, engine.StatusSkip, engine.StatusFail},
		{"no exception source", func(t *testing.T) []engine.Option {
			return nil
		}, engine.StatusFail, engine.StatusFail},
		{"policy name in another case", func(t *testing.T) []engine.Option {
			return []engine.Option{engine.WithExceptions(compile(t, exc("kyverno", "Deny", "all")))}
		}, engine.StatusFail, engine.StatusFail},
		{"policy name as a wildcard", func(t *testing.T) []engine.Option {
			return []engine.Option{engine.WithExceptions(compile(t, exc("kyverno", "d*", "all")))}
		}, engine.StatusFail, engine.StatusFail},
		{"other rule", func(t *testing.T) []engine.Option {
			return []engine.Option{engine.WithExceptions(compile(t, exc("kyverno", "deny", "al")))}
		}, engine.StatusFail, engine.StatusFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := rbCompile(t, policies, tc.opts(t)...)
			// the exception also travels as the admitted object's neighbour:
			// data in a request never enables anything
			req := rbRequest(t, rbPod)
			req.Variables = map[string]any{"exceptions": exc("kyverno", "deny", "all")}
			resp, err := set.Validate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]engine.Status{}
			for _, p := range resp.Policies {
				for _, r := range p.Rules {
					got[p.Policy.Key()] = r.Status
				}
			}
			if got["deny"] != tc.want || got["shop/deny"] != tc.wantNamespaced {
				t.Errorf("deny = %s, shop/deny = %s; want %s, %s", got["deny"], got["shop/deny"], tc.want, tc.wantNamespaced)
			}
		})
	}
}

// rbNoNetwork fails the test on any use of the default HTTP transport or
// of the Go DNS resolver.
type rbNoNetwork struct{ t *testing.T }

func (n rbNoNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	n.t.Errorf("the library opened an HTTP connection to %s", r.URL)
	return nil, errors.New("network disabled by the test")
}

// TestSecurityNoHiddenIO evaluates policies that use every kind of context
// entry and function with network-looking inputs: the default HTTP
// transport and resolver are never used, and proxy or Kubernetes
// environment variables change nothing.
func TestSecurityNoHiddenIO(t *testing.T) {
	oldTransport, oldResolver := http.DefaultTransport, net.DefaultResolver
	http.DefaultTransport = rbNoNetwork{t}
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		t.Errorf("the library resolved a name through %s %s", network, address)
		return nil, errors.New("network disabled by the test")
	}}
	defer func() { http.DefaultTransport, net.DefaultResolver = oldTransport, oldResolver }()
	src := rbRule(`    context:
    - name: svc
      apiCall:
        service:
          url: https://example.com/api
    - name: kube
      apiCall:
        urlPath: /api/v1/namespaces
    - name: cm
      configMap:
        name: x
    - name: img
      imageRegistry:
        reference: ghcr.io/org/image:1
    - name: g
      globalReference:
        name: shared
    - name: fns
      variable:
        value:
          external: "{{ is_external_url('https://example.com') }}"
          internal: "{{ is_external_url('http://kubernetes.default.svc') }}"
          image: "{{ image_normalize('example.com/a/b') }}"
          now: "{{ time_now_utc() }}"
          random: "{{ length(random('[a-z]{8}')) }}"
    validate:
      message: "{{ to_string(fns) }}"
      deny: {}
`)
	run := func() string {
		set := rbCompile(t, src, engine.WithClock(rbClock), engine.WithUnconfiguredEntriesSkipped())
		resp, err := set.Validate(context.Background(), rbRequest(t, rbPod))
		if err != nil {
			t.Fatal(err)
		}
		return rbResults(resp)["bad/r"].Message
	}
	baseline := run()
	if !strings.Contains(baseline, `"external":true`) || !strings.Contains(baseline, `"internal":false`) {
		t.Fatalf("unexpected baseline %q", baseline)
	}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "HOME", "TZ", "FLAG_ENABLE_DEFAULT_REGISTRY_MUTATION", "KYVERNO_NAMESPACE", "JMESPATH_FUNCTIONS", "GODEBUG"} {
		t.Setenv(k, "http://127.0.0.1:1")
	}
	if got := run(); got != baseline {
		t.Errorf("environment changed the result:\n%s\n%s", baseline, got)
	}
}

// TestSecurityNoIOImports checks that the packages the engine evaluates
// with do not import the operating system or network packages: host I/O
// goes through the engine's interfaces only.
func TestSecurityNoIOImports(t *testing.T) {
	forbidden := map[string]bool{"os": true, "os/exec": true, "net": true, "net/http": true, "syscall": true,
		"io/ioutil": true, "os/user": true, "plugin": true, "unsafe": true, "log": true, "flag": true}
	for _, pkg := range []string{".", "../api", "../internal/autogen", "../internal/conditions", "../exceptions", "../internal/images", "../internal/jmespath",
		"../internal/match", "../internal/mutate", "../internal/patterns", "../internal/podsecurity", "../internal/variables"} {
		files, err := filepath.Glob(filepath.Join(pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range parsed.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if forbidden[p] {
					t.Errorf("%s imports %s", f, p)
				}
			}
		}
	}
}

// rbClock is a fixed clock.
func rbClock() time.Time { return time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC) }

// TestSecurityJSONPatchInjection: a JSON patch is YAML text in which
// variables are substituted as text, so data holding quotes and newlines
// could add operations of its own. Substituted data may fill values but
// never change the operations of the patch: such a rule fails.
func TestSecurityJSONPatchInjection(t *testing.T) {
	src := rbRule(`    mutate:
      patchesJson6902: |-
        - op: add
          path: /metadata/annotations
          value:
            note: "{{ request.object.metadata.labels.note }}"
`)
	flow := rbRule(`    mutate:
      patchesJson6902: '[{"op": "add", "path": "/metadata/annotations", "value": {"note": "{{ request.object.metadata.labels.note }}"}}]'
`)
	for _, tc := range []struct {
		name, policy, note string
		ok                 bool
	}{
		{"plain value", src, "hello", true},
		{"colon and hash", src, "a: b # c", true},
		{"value rendered as JSON", src, `{"a":1}`, false},
		{"extra operation", src, "x\"\n- op: add\n  path: /metadata/labels/pwned\n  value: \"yes", false},
		{"extra operation, flow style", flow, `x"}}, {"op": "add", "path": "/metadata/labels/pwned", "value": "yes`, false},
		{"other path, flow style", flow, `x"}, "path": "/metadata/labels/pwned", "x": {"a": "`, false},
		{"remove operation", src, "x\"\n- op: remove\n  path: /spec/containers\n- op: test\n  path: /kind\n  value: \"Pod", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := rbCompile(t, tc.policy)
			pod := rbObject(t, rbPod)
			pod["metadata"].(map[string]any)["labels"].(map[string]any)["note"] = tc.note
			resp, err := set.Mutate(context.Background(), &engine.Request{Operation: api.Create, Object: pod})
			if err != nil {
				t.Fatal(err)
			}
			got := rbResults(resp)["bad/r"]
			md := resp.Resource["metadata"].(map[string]any)
			if _, pwned := md["labels"].(map[string]any)["pwned"]; pwned {
				t.Fatalf("data added a patch operation: %s", resp.Patch)
			}
			if _, ok := resp.Resource["spec"].(map[string]any)["containers"]; !ok {
				t.Fatalf("data added a patch operation: %s", resp.Patch)
			}
			if tc.ok {
				if got.Status != engine.StatusPass || md["annotations"].(map[string]any)["note"] != tc.note {
					t.Errorf("got %s %q, annotations %v", got.Status, got.Message, md["annotations"])
				}
				return
			}
			if got.Status != engine.StatusError {
				t.Errorf("got %s %q, want an error", got.Status, got.Message)
			}
		})
	}
}

// TestSecurityJSONPatchTemplatesStillWork: templated JSON patches whose
// substituted values fill paths, keys and whole values keep working.
func TestSecurityJSONPatchTemplatesStillWork(t *testing.T) {
	set := rbCompile(t, rbRule(`    mutate:
      foreach:
      - list: request.object.spec.containers
        patchesJson6902: |-
          - op: add
            path: /spec/containers/{{ elementIndex }}/env
            value: [{"name": "IMAGE", "value": "{{ element.image }}"}]
          - op: add
            path: /metadata/labels/{{ element.name }}
            value: {{ length(request.object.spec.containers) }}
          - op: add
            path: /metadata/annotations
            value:
              "{{ element.name }}": "{{ element.image }}"
`))
	resp, err := set.Mutate(context.Background(), rbRequest(t, rbPod))
	if err != nil {
		t.Fatal(err)
	}
	if got := rbResults(resp)["bad/r"]; got.Status != engine.StatusPass {
		t.Fatalf("got %s %q", got.Status, got.Message)
	}
	md := resp.Resource["metadata"].(map[string]any)
	if md["labels"].(map[string]any)["b"] != 3.0 || md["annotations"].(map[string]any)["c"] != "nginx:3" {
		t.Errorf("metadata = %v", md)
	}
	c := resp.Resource["spec"].(map[string]any)["containers"].([]any)[1].(map[string]any)
	if fmt.Sprint(c["env"]) != "[map[name:IMAGE value:nginx:2]]" {
		t.Errorf("container = %v", c)
	}
}

// TestSecurityWildcardsArePolynomial: wildcard patterns that come from
// data (a substituted pattern or condition value) cannot make matching
// exponential.
func TestSecurityWildcardsArePolynomial(t *testing.T) {
	pattern := strings.Repeat("*a", 40) + "*b"
	subject := strings.Repeat("a", 20000)
	start := time.Now()
	if wildcard.Match(pattern, subject) {
		t.Fatal("matched")
	}
	set := rbCompile(t, rbRule(`    validate:
      foreach:
      - list: "[request.object.metadata.annotations]"
        deny:
          conditions:
            any:
            - key: "{{ element.subject }}"
              operator: Equals
              value: "{{ element.pattern }}"
            - key: "{{ element.subject }}"
              operator: AnyIn
              value: ["{{ element.pattern }}"]
`)+`---
`+strings.Replace(rbRule(`    validate:
      pattern:
        metadata:
          annotations:
            subject: "{{ request.object.metadata.annotations.pattern }}"
`), "name: bad", "name: bad2", 1))
	pod := rbObject(t, rbPod)
	pod["metadata"].(map[string]any)["annotations"] = map[string]any{"subject": subject, "pattern": pattern}
	resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("matching took %v", d)
	}
	res := rbResults(resp)
	if res["bad/r"].Status != engine.StatusPass || res["bad2/r"].Status != engine.StatusFail {
		t.Errorf("results %+v", res)
	}
}
