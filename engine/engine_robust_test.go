package engine_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/jmespath"
	"github.com/gavelpolicy/gavel/loader"
)

// Helpers of the robustness and security tests carry an "rb" prefix so
// that they do not clash with the helpers of other test files.

// rbPolicies decodes the policies of a YAML stream.
func rbPolicies(t testing.TB, src string) []api.PolicyObject {
	t.Helper()
	docs, err := api.ReadDocuments(strings.NewReader(src), "policy.yaml")
	if err != nil {
		t.Fatalf("read policies: %v", err)
	}
	var out []api.PolicyObject
	for _, d := range docs {
		if !isPolicyDoc(d) {
			continue
		}
		p, err := api.DecodePolicy(d)
		if err != nil {
			t.Fatalf("decode policy: %v", err)
		}
		out = append(out, p)
	}
	return out
}

// rbExceptions decodes the PolicyExceptions of a YAML stream.
func rbExceptions(t testing.TB, src string) []*api.PolicyException {
	t.Helper()
	docs, err := api.ReadDocuments(strings.NewReader(src), "exceptions.yaml")
	if err != nil {
		t.Fatalf("read exceptions: %v", err)
	}
	var out []*api.PolicyException
	for _, d := range docs {
		obj, err := api.DecodeObject(d)
		x, ok := obj.(*api.PolicyException)
		if err != nil || !ok {
			t.Fatalf("decode exception: %v (%T)", err, obj)
		}
		out = append(out, x)
	}
	return out
}

// rbCompile builds an engine with opts and compiles the policies of src.
func rbCompile(t testing.TB, src string, opts ...engine.Option) *engine.PolicySet {
	t.Helper()
	eng, err := engine.New(opts...)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	set, err := eng.Compile(rbPolicies(t, src)...)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return set
}

// rbObject decodes one YAML document.
func rbObject(t testing.TB, src string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(src), &m); err != nil {
		t.Fatalf("object: %v", err)
	}
	return m
}

// rbResults indexes the rule results of a response by "policy/rule".
func rbResults(resp *engine.Response) map[string]engine.RuleResult {
	out := map[string]engine.RuleResult{}
	if resp == nil {
		return out
	}
	for _, p := range resp.Policies {
		for _, r := range p.Rules {
			out[p.Policy.Source().GetName()+"/"+r.Name] = r
		}
	}
	return out
}

// rbDeepCopy copies a JSON-like tree.
func rbDeepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = rbDeepCopy(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = rbDeepCopy(x)
		}
		return out
	}
	return v
}

const rbPod = `
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
  labels:
    app: web
spec:
  containers:
  - name: a
    image: nginx:1
  - name: b
    image: nginx:2
  - name: c
    image: nginx:3
`

// rbRequest is a CREATE request for a fresh copy of obj.
func rbRequest(t testing.TB, obj string) *engine.Request {
	return &engine.Request{Operation: api.Create, Object: rbObject(t, obj)}
}

// rbHost implements every host interface; each method runs fn when set
// (fn may panic, block or fail) and otherwise returns a small value.
type rbHost struct {
	fn    func(ctx context.Context, what string) error
	calls atomic.Int64
}

func (h *rbHost) do(ctx context.Context, what string) error {
	h.calls.Add(1)
	if h.fn != nil {
		return h.fn(ctx, what)
	}
	return nil
}

func (h *rbHost) GetConfigMap(ctx context.Context, ns, name string) (map[string]any, error) {
	if err := h.do(ctx, "configMap"); err != nil {
		return nil, err
	}
	return map[string]any{"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"k": "v"}}, nil
}

func (h *rbHost) RawAbsPath(ctx context.Context, path, method string, body []byte) ([]byte, error) {
	if err := h.do(ctx, "apiCall"); err != nil {
		return nil, err
	}
	return []byte(`{"items":[]}`), nil
}

func (h *rbHost) Call(ctx context.Context, req engine.ServiceRequest) ([]byte, error) {
	if err := h.do(ctx, "service"); err != nil {
		return nil, err
	}
	return []byte(`{"ok":true}`), nil
}

func (h *rbHost) ImageData(ctx context.Context, ref string, _ *api.ImageRegistryCredentials) (map[string]any, error) {
	if err := h.do(ctx, "imageRegistry"); err != nil {
		return nil, err
	}
	return map[string]any{"image": ref}, nil
}

func (h *rbHost) NamespaceLabels(ctx context.Context, ns string) (map[string]string, error) {
	if err := h.do(ctx, "namespaceLabels"); err != nil {
		return nil, err
	}
	return map[string]string{"env": "prod"}, nil
}

func (h *rbHost) GlobalContextEntry(ctx context.Context, name string) (any, error) {
	if err := h.do(ctx, "globalContext"); err != nil {
		return nil, err
	}
	return map[string]any{"name": name}, nil
}

func (h *rbHost) Exceptions(ctx context.Context) (*exceptions.Set, error) {
	if err := h.do(ctx, "exceptions"); err != nil {
		return nil, err
	}
	return exceptions.Compile(nil)
}

func (h *rbHost) RuleValues(policy, rule string) map[string]any {
	_ = h.do(context.Background(), "values")
	return nil
}

// options wires every host interface of h into an engine.
func (h *rbHost) options() []engine.Option {
	return []engine.Option{
		engine.WithConfigMapResolver(h), engine.WithAPIClient(h), engine.WithServiceCaller(h),
		engine.WithRegistryClient(h), engine.WithNamespaceLabeler(h), engine.WithGlobalContext(h),
		engine.WithExceptions(h), engine.WithContextValues(h),
	}
}

// rbContextPolicy is a policy whose first rule reads a context entry of
// the given YAML (indented for a list item under context:) and whose other
// rules do not touch the host. The rule's deny condition names the entry:
// entries load when an expression first reads them, as upstream's.
func rbContextPolicy(name, entry, matchExtra string) string {
	entryName := regexp.MustCompile(`name: (\S+)`).FindStringSubmatch(entry)[1]
	return fmt.Sprintf(`
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: %[1]s
spec:
  rules:
  - name: uses-host
    match:
      any:
      - resources:
          kinds: [Pod]%[3]s
    context:
%[2]s
    validate:
      deny:
        conditions:
          any:
          - key: "{{ request.object.metadata.name }}"
            operator: Equals
            value: never
          - key: "{{ to_string(%[4]s) }}"
            operator: Equals
            value: never
  - name: plain
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      pattern:
        metadata:
          name: "?*"
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: %[1]s-other
spec:
  rules:
  - name: plain
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      pattern:
        metadata:
          name: "?*"
`, name, entry, matchExtra, entryName)
}

// rbHostCases are context entries (or match blocks) that call each host
// interface.
var rbHostCases = []struct {
	name, entry, match string
}{
	{"configMap", "    - name: cm\n      configMap:\n        name: settings\n        namespace: default", ""},
	{"apiCall", "    - name: pods\n      apiCall:\n        urlPath: /api/v1/namespaces/default/pods", ""},
	{"service", "    - name: svc\n      apiCall:\n        service:\n          url: https://svc.example/check", ""},
	{"imageRegistry", "    - name: img\n      imageRegistry:\n        reference: nginx:1", ""},
	{"globalContext", "    - name: g\n      globalReference:\n        name: shared", ""},
	{"namespaceLabels", "    - name: v\n      variable:\n        value: x", "\n          namespaceSelector:\n            matchLabels:\n              env: prod"},
	{"exceptions", "    - name: v\n      variable:\n        value: x", ""},
	{"values", "    - name: v\n      variable:\n        value: x", ""},
}

// TestRobustHostPanicIsRuleError forces a panic in every host interface: the
// rule that called it reports an error naming the panic, the other rules and
// policies still run, and the process survives.
func TestRobustHostPanicIsRuleError(t *testing.T) {
	for _, tc := range rbHostCases {
		t.Run(tc.name, func(t *testing.T) {
			h := &rbHost{fn: func(_ context.Context, what string) error {
				if what == tc.name {
					panic("host exploded in " + what)
				}
				return nil
			}}
			set := rbCompile(t, rbContextPolicy("p", tc.entry, tc.match), h.options()...)
			resp, err := set.Validate(context.Background(), rbRequest(t, rbPod))
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			res := rbResults(resp)
			got := res["p/uses-host"]
			if got.Status != engine.StatusError || !strings.Contains(got.Message, "host exploded in "+tc.name) {
				t.Errorf("p/uses-host = %s %q, want an error naming the panic", got.Status, got.Message)
			}
			// exceptions and values are consulted by every rule: all of them
			// fail, but each one separately.
			wantOthers := engine.StatusPass
			if tc.name == "exceptions" || tc.name == "values" {
				wantOthers = engine.StatusError
			}
			for _, k := range []string{"p/plain", "p-other/plain"} {
				if res[k].Status != wantOthers {
					t.Errorf("%s = %s %q, want %s", k, res[k].Status, res[k].Message, wantOthers)
				}
			}
		})
	}
}

// TestRobustPanicInMutateKeepsObject checks that a rule that panics half
// way leaves the object as the previous rule left it.
func TestRobustPanicInMutateKeepsObject(t *testing.T) {
	h := &rbHost{fn: func(_ context.Context, what string) error { panic("boom") }}
	set := rbCompile(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: m
spec:
  rules:
  - name: first
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            first: "yes"
  - name: panics
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      foreach:
      - list: request.object.spec.containers
        context:
        - name: cm
          configMap:
            name: "{{ element.name }}"
        patchStrategicMerge:
          metadata:
            labels:
              second: "{{ cm.data.v || 'yes' }}"
  - name: last
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            last: "yes"
`, engine.WithConfigMapResolver(h))
	req := rbRequest(t, rbPod)
	before := rbDeepCopy(req.Object)
	resp, err := set.Mutate(context.Background(), req)
	if err != nil {
		t.Fatalf("Mutate: %v", err)
	}
	if !reflect.DeepEqual(before, req.Object) {
		t.Fatalf("request object modified")
	}
	res := rbResults(resp)
	if res["m/panics"].Status != engine.StatusError || !strings.Contains(res["m/panics"].Message, "boom") {
		t.Errorf("m/panics = %+v", res["m/panics"])
	}
	labels := resp.Resource["metadata"].(map[string]any)["labels"].(map[string]any)
	want := map[string]any{"app": "web", "first": "yes", "last": "yes"}
	if !reflect.DeepEqual(labels, want) {
		t.Errorf("labels = %v, want %v", labels, want)
	}
}

// rbNestedForeach is a validate rule nesting foreach levels deep.
func rbNestedForeach(levels int) string {
	var b strings.Builder
	b.WriteString(`
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: nested
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
`)
	indent := "      "
	for i := 0; i < levels; i++ {
		b.WriteString(indent + "foreach:\n")
		b.WriteString(indent + "- list: request.object.spec.containers\n")
		indent += "  "
	}
	b.WriteString(indent + "deny:\n" + indent + "  conditions:\n" + indent + "    any:\n" +
		indent + "    - key: \"{{ element.name }}\"\n" + indent + "      operator: Equals\n" + indent + "      value: forbidden\n")
	return b.String()
}

// rbNestedForeachMutate is a mutate rule nesting foreach levels deep.
func rbNestedForeachMutate(levels int) string {
	var b strings.Builder
	b.WriteString(`
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: nested
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
`)
	indent := "      "
	for i := 0; i < levels; i++ {
		b.WriteString(indent + "foreach:\n")
		b.WriteString(indent + "- list: request.object.spec.containers\n")
		indent += "  "
	}
	b.WriteString(indent + "patchStrategicMerge:\n" + indent + "  metadata:\n" + indent + "    labels:\n" + indent + "      seen: \"yes\"\n")
	return b.String()
}

// rbCheckLimit checks that a result was stopped by the named limit: its Err
// matches ErrLimitExceeded and is a *LimitError naming the limit.
func rbCheckLimit(t *testing.T, got engine.RuleResult, limit string) {
	t.Helper()
	var le *engine.LimitError
	if !errors.Is(got.Err, engine.ErrLimitExceeded) || !errors.As(got.Err, &le) || le.Limit != limit {
		t.Errorf("Err = %v (%T), want a *LimitError for %s", got.Err, got.Err, limit)
		return
	}
	if got.Status != engine.StatusError || !strings.Contains(got.Message, got.Err.Error()) {
		t.Errorf("result %s %q does not report %q", got.Status, got.Message, got.Err)
	}
}

// TestRobustLimits checks that every engine.Limits field is enforced with
// an error that says which limit was exceeded.
func TestRobustLimits(t *testing.T) {
	ctx := context.Background()
	t.Run("MaxForeachElements/validate", func(t *testing.T) {
		set := rbCompile(t, rbNestedForeach(1), engine.WithLimits(engine.Limits{MaxForeachElements: 2}))
		resp, err := set.Validate(ctx, rbRequest(t, rbPod))
		if err != nil {
			t.Fatal(err)
		}
		got := rbResults(resp)["nested/r"]
		if got.Status != engine.StatusError || !strings.Contains(got.Message, "has 3 elements, more than the limit of 2") {
			t.Errorf("got %s %q", got.Status, got.Message)
		}
		rbCheckLimit(t, got, "MaxForeachElements")
		// at the limit the rule runs
		set = rbCompile(t, rbNestedForeach(1), engine.WithLimits(engine.Limits{MaxForeachElements: 3}))
		resp, _ = set.Validate(ctx, rbRequest(t, rbPod))
		if got := rbResults(resp)["nested/r"]; got.Status != engine.StatusPass {
			t.Errorf("at the limit: got %s %q", got.Status, got.Message)
		}
	})
	t.Run("MaxForeachElements/mutate", func(t *testing.T) {
		set := rbCompile(t, rbNestedForeachMutate(1), engine.WithLimits(engine.Limits{MaxForeachElements: 2}))
		req := rbRequest(t, rbPod)
		resp, err := set.Mutate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		got := rbResults(resp)["nested/r"]
		if got.Status != engine.StatusError || !strings.Contains(got.Message, "has 3 elements, more than the limit of 2") {
			t.Errorf("got %s %q", got.Status, got.Message)
		}
		rbCheckLimit(t, got, "MaxForeachElements")
		if !reflect.DeepEqual(resp.Resource, req.Object) || resp.Patch != nil {
			t.Errorf("object patched although the rule failed: %v", resp.Resource)
		}
	})
	t.Run("MaxForeachElements/nested", func(t *testing.T) {
		// 3 x 3 elements: each level is within the limit of 3
		set := rbCompile(t, rbNestedForeach(2), engine.WithLimits(engine.Limits{MaxForeachElements: 3}))
		resp, _ := set.Validate(ctx, rbRequest(t, rbPod))
		if got := rbResults(resp)["nested/r"]; got.Status != engine.StatusPass {
			t.Errorf("got %s %q", got.Status, got.Message)
		}
	})
	for _, kind := range []string{"validate", "mutate"} {
		gen := rbNestedForeach
		if kind == "mutate" {
			gen = rbNestedForeachMutate
		}
		t.Run("MaxForeachDepth/"+kind, func(t *testing.T) {
			eng, err := engine.New(engine.WithLimits(engine.Limits{MaxForeachDepth: 2}))
			if err != nil {
				t.Fatal(err)
			}
			for levels := 1; levels <= 2; levels++ {
				if _, err := eng.Compile(rbPolicies(t, gen(levels))...); err != nil {
					t.Errorf("%d levels within the limit of 2: %v", levels, err)
				}
			}
			_, err = eng.Compile(rbPolicies(t, gen(3))...)
			var ce *engine.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("3 levels: got %v, want a *CompileError", err)
			}
			want := "spec.rules[0]." + kind + ".foreach[0].foreach[0].foreach: Invalid value"
			if ce.Policy != "nested" || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "foreach nesting exceeds 2") {
				t.Errorf("3 levels: got %v, want policy nested, field %s", err, want)
			}
		})
	}
	t.Run("MaxForeachDepth/default", func(t *testing.T) {
		eng, _ := engine.New()
		if _, err := eng.Compile(rbPolicies(t, rbNestedForeach(engine.DefaultLimits().MaxForeachDepth))...); err != nil {
			t.Errorf("default depth: %v", err)
		}
		if _, err := eng.Compile(rbPolicies(t, rbNestedForeach(engine.DefaultLimits().MaxForeachDepth+1))...); err == nil {
			t.Errorf("default depth + 1 compiled")
		}
	})
	t.Run("MaxContextBytes", func(t *testing.T) {
		big := strings.Repeat("x", 600)
		cms := rbConfigMaps{"default/big": {"blob": big}, "default/small": {"k": "v"}}
		api := rbAPIResponses{"/big": []byte(`{"blob":"` + big + `"}`), "/small": []byte(`{"k":"v"}`)}
		opts := []engine.Option{
			engine.WithLimits(engine.Limits{MaxContextBytes: 512}),
			engine.WithConfigMapResolver(cms), engine.WithAPIClient(api), engine.WithServiceCaller(api),
		}
		for _, tc := range []struct{ name, entry, want string }{
			{"configMap", "    - name: e\n      configMap:\n        name: big\n        namespace: default", "value of 6"},
			{"apiCall", "    - name: e\n      apiCall:\n        urlPath: /big", "response of 6"},
			{"service", "    - name: e\n      apiCall:\n        service:\n          url: /big", "response of 6"},
			{"variable", "    - name: e\n      variable:\n        jmesPath: join('', [request.object.metadata.name, '" + big + "'])", "value of 6"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				set := rbCompile(t, rbContextPolicy("p", tc.entry, ""), opts...)
				resp, err := set.Validate(ctx, rbRequest(t, rbPod))
				if err != nil {
					t.Fatal(err)
				}
				got := rbResults(resp)["p/uses-host"]
				if got.Status != engine.StatusError || !strings.Contains(got.Message, "exceeds the limit of 512") || !strings.Contains(got.Message, tc.want) {
					t.Errorf("got %s %q", got.Status, got.Message)
				}
				rbCheckLimit(t, got, "MaxContextBytes")
				small := strings.ReplaceAll(strings.ReplaceAll(tc.entry, "big", "small"), big, "y")
				set = rbCompile(t, rbContextPolicy("p", small, ""), opts...)
				resp, _ = set.Validate(ctx, rbRequest(t, rbPod))
				if got := rbResults(resp)["p/uses-host"]; got.Status != engine.StatusPass {
					t.Errorf("small entry: got %s %q", got.Status, got.Message)
				}
			})
		}
	})
	t.Run("MaxSubstitutionDepth", func(t *testing.T) {
		nested := func(levels int) string {
			expr := "request.object.metadata.name"
			for i := 1; i < levels; i++ {
				expr = "to_string('{{ " + expr + " }}')"
			}
			return rbContextPolicy("p", "    - name: v\n      variable:\n        value: \"{{ "+expr+" }}\"", "")
		}
		eng, err := engine.New(engine.WithLimits(engine.Limits{MaxSubstitutionDepth: 3}))
		if err != nil {
			t.Fatal(err)
		}
		set, err := eng.Compile(rbPolicies(t, nested(3))...)
		if err != nil {
			t.Fatalf("3 levels within the limit of 3: %v", err)
		}
		resp, _ := set.Validate(ctx, rbRequest(t, rbPod))
		if got := rbResults(resp)["p/uses-host"]; got.Status != engine.StatusPass {
			t.Errorf("3 levels: got %s %q", got.Status, got.Message)
		}
		_, err = eng.Compile(rbPolicies(t, nested(4))...)
		if err == nil || !strings.Contains(err.Error(), "spec.rules[0].context[0].variable.value: Invalid value") || !strings.Contains(err.Error(), "nested deeper than 3 levels") {
			t.Errorf("4 levels: got %v, want an error naming the field", err)
		}
	})
	t.Run("MaxJMESPathResultBytes", func(t *testing.T) {
		// a flattening that doubles forty times, a padding of 100 GB and a
		// value whose JSON text doubles forty times: each is an error
		// result, found before the memory is used, and the other rules run
		doubling := "request.object.metadata.name" + strings.Repeat(" | [@, @][]", 40)
		shared := "request.object.metadata" + strings.Repeat(" | [@, @]", 40)
		for _, tc := range []struct{ name, expr, want string }{
			{"flatten", doubling, "flattening gives more than"},
			{"pad_left", "pad_left('a', `100000000000`)", "JMESPath function 'pad_left': result of 100000000000 bytes exceeds the limit of 8388608 bytes"},
			{"to_string", "to_string(" + shared + ")", "JMESPath function 'to_string'"},
			{"result", "length(" + shared + ")", ""},
			{"doubled value", shared, "value exceeds the JMESPath size limit"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				src := rbContextPolicy("p", "    - name: v\n      variable:\n        jmesPath: \""+strings.ReplaceAll(tc.expr, `"`, `\"`)+"\"", "")
				set := rbCompile(t, src)
				start := time.Now()
				resp, err := set.Validate(ctx, rbRequest(t, rbPod))
				if err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("took %v", d)
				}
				got := rbResults(resp)["p/uses-host"]
				if tc.want == "" {
					if got.Status != engine.StatusPass {
						t.Errorf("got %s %q, want pass (length reads the value without building it)", got.Status, got.Message)
					}
					return
				}
				if got.Status != engine.StatusError || !strings.Contains(got.Message, tc.want) {
					t.Errorf("got %s %q, want an error containing %q", got.Status, got.Message, tc.want)
				}
				rbCheckLimit(t, got, "MaxJMESPathResultBytes")
				if !errors.Is(got.Err, jmespath.ErrTooLarge) {
					t.Errorf("Err = %v, want it to wrap jmespath.ErrTooLarge", got.Err)
				}
			})
		}
		// a lower limit applies
		set := rbCompile(t, rbContextPolicy("p", "    - name: v\n      variable:\n        jmesPath: \"pad_left('a', `2000`)\"", ""),
			engine.WithLimits(engine.Limits{MaxJMESPathResultBytes: 1000}))
		resp, _ := set.Validate(ctx, rbRequest(t, rbPod))
		if got := rbResults(resp)["p/uses-host"]; got.Status != engine.StatusError || !strings.Contains(got.Message, "limit of 1000 bytes") {
			t.Errorf("limit 1000: got %s %q", got.Status, got.Message)
		}
	})
}

// rbConfigMaps serves ConfigMaps by "namespace/name".
type rbConfigMaps map[string]map[string]any

func (c rbConfigMaps) GetConfigMap(_ context.Context, ns, name string) (map[string]any, error) {
	d, ok := c[ns+"/"+name]
	if !ok {
		return nil, fmt.Errorf("configmap %s/%s: %w", ns, name, engine.ErrNotFound)
	}
	return map[string]any{"metadata": map[string]any{"name": name, "namespace": ns}, "data": d}, nil
}

// rbAPIResponses serves API paths.
type rbAPIResponses map[string][]byte

// Call serves service URLs from the same table.
func (a rbAPIResponses) Call(ctx context.Context, req engine.ServiceRequest) ([]byte, error) {
	return a.RawAbsPath(ctx, req.URL, req.Method, req.Body)
}

func (a rbAPIResponses) RawAbsPath(_ context.Context, path, _ string, _ []byte) ([]byte, error) {
	raw, ok := a[path]
	if !ok {
		return nil, fmt.Errorf("GET %s: %w", path, engine.ErrNotFound)
	}
	return raw, nil
}

// rbBlockUntilDone is a host function that waits for the context.
func rbBlockUntilDone(ctx context.Context, _ string) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(30 * time.Second):
		return errors.New("host was never cancelled")
	}
}

// TestRobustHostTimeout checks that slow apiCall, service, ConfigMap and
// registry hosts are bounded by the caller's context: the rule reports the
// deadline and the call returns promptly.
func TestRobustHostTimeout(t *testing.T) {
	for _, tc := range rbHostCases[:5] {
		t.Run(tc.name, func(t *testing.T) {
			h := &rbHost{fn: rbBlockUntilDone}
			set := rbCompile(t, rbContextPolicy("p", tc.entry, tc.match), h.options()...)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			start := time.Now()
			resp, err := set.Validate(ctx, rbRequest(t, rbPod))
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("Validate took %v", d)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Validate error = %v, want the deadline", err)
			}
			got := rbResults(resp)["p/uses-host"]
			if got.Status != engine.StatusError || !strings.Contains(got.Message, "context deadline exceeded") {
				t.Errorf("p/uses-host = %s %q", got.Status, got.Message)
			}
			// the caller's deadline is not one of the engine's limits
			if errors.Is(got.Err, engine.ErrLimitExceeded) || !errors.Is(got.Err, context.DeadlineExceeded) {
				t.Errorf("Err = %v, want the caller's deadline only", got.Err)
			}
		})
	}
}

// TestRobustHostCallTimeout checks the per-call limit: without a deadline
// from the caller, a host that never answers (context entries, namespace
// labels, exceptions) costs HostCallTimeout, the rule reports the deadline
// and the request's other rules still run.
func TestRobustHostCallTimeout(t *testing.T) {
	for _, tc := range rbHostCases[:7] {
		t.Run(tc.name, func(t *testing.T) {
			// only the interface of the case blocks
			h := &rbHost{fn: func(ctx context.Context, what string) error {
				if what != tc.name {
					return nil
				}
				return rbBlockUntilDone(ctx, what)
			}}
			opts := append(h.options(), engine.WithLimits(engine.Limits{HostCallTimeout: 30 * time.Millisecond}))
			set := rbCompile(t, rbContextPolicy("p", tc.entry, tc.match), opts...)
			start := time.Now()
			resp, err := set.Validate(context.Background(), rbRequest(t, rbPod))
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("Validate took %v", d)
			}
			if err != nil {
				t.Fatalf("Validate error = %v, want none (the request's context is live)", err)
			}
			got := rbResults(resp)
			if r := got["p/uses-host"]; r.Status != engine.StatusError || !strings.Contains(r.Message, "context deadline exceeded") {
				t.Errorf("p/uses-host = %s %q", r.Status, r.Message)
			}
			rbCheckLimit(t, got["p/uses-host"], "HostCallTimeout")
			if !errors.Is(got["p/uses-host"].Err, context.DeadlineExceeded) {
				t.Errorf("Err = %v, want it to wrap context.DeadlineExceeded", got["p/uses-host"].Err)
			}
			// the exceptions are read for every rule: there the other
			// rules fail the same way
			if r := got["p/plain"]; tc.name != "exceptions" && r.Status != engine.StatusPass {
				t.Errorf("p/plain = %s %q, want pass", r.Status, r.Message)
			}
		})
	}
	if got := engine.DefaultLimits().HostCallTimeout; got != 10*time.Second {
		t.Errorf("default HostCallTimeout = %v", got)
	}
}

// TestRobustCancellation checks that a cancelled context stops evaluation
// between rules, between policies and inside foreach, and that the caller
// is told (an incomplete response is never a silent pass).
func TestRobustCancellation(t *testing.T) {
	const policies = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: p1
spec:
  rules:
  - name: cancels
    match:
      any:
      - resources:
          kinds: [Pod]
    context:
    - name: cm
      configMap:
        name: x
        namespace: default
    validate:
      pattern:
        metadata:
          name: "{{ cm.data.name || '?*' }}"
  - name: after
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      pattern:
        metadata:
          name: "?*"
`
	for _, op := range []string{"validate", "mutate"} {
		t.Run("between rules/"+op, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// the host cancels the request and answers normally
			h := &rbHost{fn: func(context.Context, string) error { cancel(); return nil }}
			src := policies
			if op == "mutate" {
				src = strings.ReplaceAll(src, `validate:
      pattern:
        metadata:
          name: "{{ cm.data.name || '?*' }}"`, `mutate:
      patchStrategicMerge:
        metadata:
          labels:
            x: "{{ cm.data.x || 'y' }}"`)
				src = strings.ReplaceAll(src, `validate:
      pattern:
        metadata:
          name: "?*"`, `mutate:
      patchStrategicMerge:
        metadata:
          labels:
            x: "y"`)
			}
			set := rbCompile(t, src, engine.WithConfigMapResolver(h))
			var resp *engine.Response
			var err error
			if op == "mutate" {
				resp, err = set.Mutate(ctx, rbRequest(t, rbPod))
			} else {
				resp, err = set.Validate(ctx, rbRequest(t, rbPod))
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("error = %v, want context.Canceled", err)
			}
			if r, ok := rbResults(resp)["p1/after"]; ok {
				t.Errorf("rule after the cancellation ran: %+v", r)
			}
		})
	}
	t.Run("between policies", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h := &rbHost{fn: func(context.Context, string) error { cancel(); return nil }}
		set := rbCompile(t, rbContextPolicy("p", rbHostCases[0].entry, ""), engine.WithConfigMapResolver(h))
		resp, err := set.Validate(ctx, rbRequest(t, rbPod))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v, want context.Canceled", err)
		}
		if r, ok := rbResults(resp)["p-other/plain"]; ok {
			t.Errorf("policy after the cancellation ran: %+v", r)
		}
	})
	for _, op := range []string{"validate", "mutate"} {
		t.Run("inside foreach/"+op, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var calls atomic.Int64
			h := &rbHost{fn: func(ctx context.Context, _ string) error {
				if calls.Add(1) == 3 {
					cancel()
				}
				time.Sleep(time.Millisecond)
				return ctx.Err()
			}}
			body := `validate:
      foreach:
      - list: request.object.spec.containers
        context:
        - name: cm
          configMap:
            name: "{{ element.name }}"
            namespace: default
        deny:
          conditions:
            any:
            - key: "{{ cm.data.k }}"
              operator: Equals
              value: forbidden`
			if op == "mutate" {
				body = `mutate:
      foreach:
      - list: request.object.spec.containers
        context:
        - name: cm
          configMap:
            name: "{{ element.name }}"
            namespace: default
        patchStrategicMerge:
          metadata:
            labels:
              "{{ element.name }}": "{{ cm.data.label || 'seen' }}"`
			}
			src := `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: loop
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
    ` + body
			set := rbCompile(t, src, engine.WithConfigMapResolver(h), engine.WithLimits(engine.Limits{MaxForeachElements: 100000}))
			pod := rbObject(t, rbPod)
			var containers []any
			for i := 0; i < 1000; i++ {
				containers = append(containers, map[string]any{"name": fmt.Sprintf("c%d", i), "image": "nginx"})
			}
			pod["spec"] = map[string]any{"containers": containers}
			req := &engine.Request{Operation: api.Create, Object: pod}
			var resp *engine.Response
			var err error
			if op == "mutate" {
				resp, err = set.Mutate(ctx, req)
			} else {
				resp, err = set.Validate(ctx, req)
			}
			if n := calls.Load(); n > 4 {
				t.Errorf("host called %d times after the cancellation", n)
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("error = %v, want context.Canceled", err)
			}
			got := rbResults(resp)["loop/r"]
			if got.Status != engine.StatusError {
				t.Errorf("loop/r = %s %q, want error", got.Status, got.Message)
			}
			if op == "mutate" && resp.Patch != nil {
				t.Errorf("cancelled mutation produced a patch: %s", resp.Patch)
			}
		})
	}
}

// rbRule wraps a rule body (indented for the rule's fields) in a policy.
func rbRule(body string) string {
	return `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: bad
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
` + body
}

// TestRobustBadPolicies: every malformed policy is refused at load or
// compile time with an error naming the file, the policy, the field and
// the reason.
func TestRobustBadPolicies(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		// want are substrings of the error.
		want []string
	}{
		{"malformed YAML", "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: bad\n spec: [\n",
			[]string{"bad.yaml[0]", "yaml: line 4"}},
		{"JSON syntax", `{"apiVersion":"kyverno.io/v1","kind":"ClusterPolicy",`,
			[]string{"bad.yaml[0]"}},
		{"not an object", "- a\n- b\n", []string{"bad.yaml[0]", "not an object"}},
		{"unknown field", rbRule("    validate:\n      patern: {}\n"),
			[]string{"bad.yaml[0] ClusterPolicy/bad", "spec.rules[0].validate.patern", `unknown field "patern"`}},
		{"unknown field in match", rbRule("    validate:\n      pattern: {}\n    exclude:\n      any:\n      - resource:\n          kinds: [Pod]\n"),
			[]string{"ClusterPolicy/bad", "spec.rules[0].exclude.any[0].resource", "unknown field"}},
		{"wrong type", strings.Replace(rbRule("    validate:\n      pattern: {}\n"), "kinds: [Pod]", "kinds: Pod", 1),
			[]string{"ClusterPolicy/bad", "spec.rules[0].match.any[0].resources.kinds", "cannot use a string as []string"}},
		{"wrong type of rules", "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: bad\nspec:\n  rules: oops\n",
			[]string{"ClusterPolicy/bad", "spec.rules", "cannot use a string"}},
		{"unsupported apiVersion", "apiVersion: kyverno.io/v9\nkind: ClusterPolicy\nmetadata:\n  name: bad\nspec: {}\n",
			[]string{"bad.yaml[0]", "ClusterPolicy/bad", `unsupported apiVersion "kyverno.io/v9"`}},
		{"exception unknown field", "apiVersion: kyverno.io/v2\nkind: PolicyException\nmetadata:\n  name: x\n  namespace: y\nspec:\n  exceptions: []\n  match: {}\n  conditons: {}\n",
			[]string{"bad.yaml[0] PolicyException/x", "spec.conditons", "unknown field"}},
		{"no rules", "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: bad\nspec:\n  rules: []\n",
			[]string{"policy bad", "spec.rules", "at least one rule"}},
		{"invalid JMESPath in a condition", rbRule(`    validate:
      deny:
        conditions:
          any:
          - key: "{{ request.object.metadata.name | | }}"
            operator: Equals
            value: x
`), []string{"policy bad", "spec.rules[0].validate.deny.conditions.any[0].key", "invalid JMESPath expression"}},
		{"invalid JMESPath in a message", rbRule(`    validate:
      message: "{{ request.object.( }}"
      pattern: {}
`), []string{"policy bad", "spec.rules[0].validate.message", "invalid JMESPath expression"}},
		{"invalid foreach list", rbRule(`    validate:
      foreach:
      - list: "request.object.spec.containers[?"
        deny: {}
`), []string{"policy bad", "spec.rules[0].validate.foreach[0].list", "invalid JMESPath expression"}},
		{"unknown JMESPath function", rbRule(`    validate:
      message: "{{ nope(@) }}"
      pattern: {}
`), []string{"policy bad", "spec.rules[0].validate.message", `rule r: invalid JMESPath expression "nope(@)": unknown function: nope`}},
		{"JMESPath function arity in a precondition", rbRule(`    preconditions:
      all:
      - key: "{{ to_upper(request.object.metadata.name, 'x') }}"
        operator: Equals
        value: X
    validate:
      pattern: {}
`), []string{"policy bad", "spec.rules[0].preconditions.all[0].key", "invalid arity, the function 'to_upper'"}},
		{"JMESPath literal argument type in a foreach list", rbRule(`    validate:
      foreach:
      - list: "split(request.object.metadata.name, ` + "`1`" + `)"
        deny: {}
`), []string{"policy bad", "spec.rules[0].validate.foreach[0].list", "argument #2 is not of type string (got number)"}},
		{"unknown JMESPath function in a context entry", rbRule(`    context:
    - name: v
      variable:
        jmesPath: "nope(request.object)"
    validate:
      pattern: {}
`), []string{"policy bad", "spec.rules[0].context[0].variable.jmesPath", "unknown function: nope"}},
		{"missing foreach list", rbRule(`    validate:
      foreach:
      - deny: {}
`), []string{"policy bad", "spec.rules[0].validate.foreach[0].list", "foreach list is required"}},
		{"invalid context jmesPath", rbRule(`    context:
    - name: v
      variable:
        jmesPath: "a.["
    validate:
      pattern: {}
`), []string{"policy bad", "spec.rules[0].context[0].variable.jmesPath", "invalid JMESPath expression"}},
		{"invalid operator", rbRule(`    validate:
      deny:
        conditions:
          all:
          - key: a
            operator: Equalz
            value: a
`), []string{"policy bad", "spec.rules[0].validate.deny.conditions.all[0].operator", "Equalz"}},
		{"conditions neither any nor all", rbRule(`    preconditions:
      some:
      - key: a
        operator: Equals
        value: a
    validate:
      pattern: {}
`), []string{"policy bad", "spec.rules[0].preconditions.some", "only any and all"}},
		{"invalid reference in a pattern", rbRule(`    validate:
      pattern:
        spec:
          x: "$(./../nothere)"
`), []string{"policy bad", "spec.rules[0].validate.pattern", "$(./../nothere)"}},
		{"pattern too deep", rbRule("    validate:\n      pattern: " + strings.Repeat("{a: ", 1100) + "x" + strings.Repeat("}", 1100) + "\n"),
			[]string{"policy bad", "spec.rules[0].validate.pattern", "deeper than"}},
		{"anyPattern not a list", rbRule("    validate:\n      anyPattern: {a: b}\n"),
			[]string{"policy bad", "spec.rules[0].validate.anyPattern", "must be a list"}},
		{"two validations", rbRule("    validate:\n      pattern: {}\n      deny: {}\n"),
			[]string{"policy bad", "spec.rules[0].validate", "exactly one of"}},
		{"no operation", rbRule(""), []string{"policy bad", "spec.rules[0]", "No operation defined"}},
		{"invalid JSON patch", rbRule("    mutate:\n      patchesJson6902: \"- op: explode\\n  path: /a\\n\"\n"),
			[]string{"policy bad", "spec.rules[0].mutate"}},
		{"invalid apiCall method", rbRule(`    context:
    - name: x
      apiCall:
        method: DELETE
        urlPath: /api/v1/pods
    validate:
      pattern: {}
`), []string{"policy bad", "spec.rules[0].context[0].apiCall.method", "DELETE"}},
		{"context entry of two kinds", rbRule(`    context:
    - name: x
      configMap:
        name: a
      variable:
        value: b
    validate:
      pattern: {}
`), []string{"policy bad", "spec.rules[0].context[0]", "exactly one of"}},
		{"variables in match", strings.Replace(rbRule("    validate:\n      pattern: {}\n"), "kinds: [Pod]", "kinds: [Pod]\n          names: [\"{{ request.object.metadata.name }}\"]", 1),
			[]string{"policy bad", "spec.rules[0].match", "variables are not allowed"}},
		{"invalid failure action", strings.Replace(rbRule("    validate:\n      pattern: {}\n"), "spec:\n", "spec:\n  validationFailureAction: Block\n", 1),
			[]string{"policy bad", "spec.validationFailureAction", "Block"}},
		{"duplicate rule names", strings.Replace(rbRule("    validate:\n      pattern: {}\n"), "  rules:\n", "  rules:\n  - name: r\n    match:\n      any:\n      - resources:\n          kinds: [Pod]\n    validate:\n      pattern: {}\n", 1),
			[]string{"policy bad", "spec.rules[1].name", "Duplicate rule name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &loader.Set{}
			err := s.Read(strings.NewReader(tc.src), "bad.yaml")
			if err == nil {
				eng, _ := engine.New()
				_, err = eng.Compile(s.Policies...)
			}
			if err == nil {
				t.Fatalf("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestRobustEvaluationFailures: what goes wrong while a rule is evaluated
// (absent host interfaces, failing lookups, unresolved variables, bad
// values) gives an error or, as upstream, a skip with the reason: never a
// silent pass.
func TestRobustEvaluationFailures(t *testing.T) {
	failing := &rbHost{fn: func(_ context.Context, what string) error { return fmt.Errorf("%s: connection refused", what) }}
	for _, tc := range []struct {
		name   string
		body   string
		opts   []engine.Option
		status engine.Status
		want   string
	}{
		{"configMap without resolver", `    context:
    - name: cm
      configMap:
        name: settings
        namespace: default
    validate:
      deny:
        conditions:
          any:
          - key: "{{ cm.data.k }}"
            operator: Equals
            value: forbidden
`, nil, engine.StatusError, `context entry cm: configMap needs a ConfigMapResolver (engine.WithConfigMapResolver): not configured`},
		{"apiCall without client", `    context:
    - name: pods
      apiCall:
        urlPath: /api/v1/pods
        jmesPath: items | length(@)
    validate:
      deny:
        conditions:
          any:
          - key: "{{ pods }}"
            operator: GreaterThan
            value: 10
`, nil, engine.StatusError, `context entry pods: apiCall needs an APIClient (engine.WithAPIClient): not configured`},
		{"failing configMap lookup", `    context:
    - name: cm
      configMap:
        name: settings
        namespace: default
    validate:
      deny:
        conditions:
          any:
          - key: "{{ to_string(cm) }}"
            operator: Equals
            value: never
`, []engine.Option{engine.WithConfigMapResolver(failing)}, engine.StatusError, "failed to retrieve config map for context entry cm: configMap: connection refused"},
		{"failing apiCall", `    context:
    - name: pods
      apiCall:
        urlPath: /api/v1/pods
    validate:
      deny:
        conditions:
          any:
          - key: "{{ to_string(pods) }}"
            operator: Equals
            value: never
`, []engine.Option{engine.WithAPIClient(failing)}, engine.StatusError, "failed to execute APICall for context entry pods: apiCall: connection refused"},
		{"failing service call", `    context:
    - name: svc
      apiCall:
        service:
          url: https://checker.example
    validate:
      deny:
        conditions:
          any:
          - key: "{{ to_string(svc) }}"
            operator: Equals
            value: never
`, []engine.Option{engine.WithServiceCaller(failing)}, engine.StatusError, "failed to execute HTTP request for context entry svc: service: connection refused"},
		{"failing registry", `    context:
    - name: img
      imageRegistry:
        reference: nginx
    validate:
      deny:
        conditions:
          any:
          - key: "{{ to_string(img) }}"
            operator: Equals
            value: never
`, []engine.Option{engine.WithRegistryClient(failing)}, engine.StatusError, "failed to fetch image descriptor for context entry img: imageRegistry: connection refused"},
		{"failing namespace labels", `    validate:
      pattern:
        metadata:
          name: "?*"
`, []engine.Option{engine.WithNamespaceLabeler(failing)}, engine.StatusError, "namespaceLabels: connection refused"},
		{"failing exception source", `    validate:
      pattern:
        metadata:
          name: "?*"
`, []engine.Option{engine.WithExceptions(failing)}, engine.StatusError, "failed to evaluate policy exceptions: exceptions: connection refused"},
		{"API response is not JSON", `    context:
    - name: x
      apiCall:
        urlPath: /text
    validate:
      deny:
        conditions:
          any:
          - key: "{{ to_string(x) }}"
            operator: Equals
            value: never
`, []engine.Option{engine.WithAPIClient(rbAPIResponses{"/text": []byte("<html>")})}, engine.StatusError, "failed to decode the response of context entry x"},
		{"unresolved variable in a pattern", `    validate:
      pattern:
        metadata:
          name: "{{ request.object.spec.nothing }}"
`, nil, engine.StatusError, "request.object.spec.nothing"},
		{"unresolved variable in preconditions", `    preconditions:
      all:
      - key: "{{ request.object.spec.nothing }}"
        operator: Equals
        value: x
    validate:
      pattern:
        metadata:
          name: "?*"
`, nil, engine.StatusError, "failed to evaluate preconditions"},
		{"function error in deny", `    validate:
      deny:
        conditions:
          any:
          - key: "{{ divide(` + "`1`" + `, ` + "`0`" + `) }}"
            operator: Equals
            value: 1
`, nil, engine.StatusError, "Zero divisor passed"},
		{"variable evaluating to null", `    context:
    - name: v
      variable:
        jmesPath: request.object.spec.nothing
    validate:
      deny:
        conditions:
          any:
          - key: "{{ to_string(v) }}"
            operator: Equals
            value: never
`, nil, engine.StatusError, "unable to add context entry for variable v since it evaluated to nil"},
		{"elementScope on scalars", `    validate:
      foreach:
      - list: request.object.spec.containers[].name
        elementScope: true
        pattern:
          x: y
`, nil, engine.StatusError, "cannot use elementScope=true"},
		{"mutate patch on a wrong type", `    mutate:
      patchesJson6902: |-
        - op: add
          path: /metadata/name/x
          value: y
`, nil, engine.StatusError, "failed to patch resource"},
		{"mutate unresolved variable", `    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            x: "{{ request.object.spec.nothing }}"
`, nil, engine.StatusError, "variable substitution failed"},
		// validation of a Pod that no verifyImages mutation pinned
		{"verifyImages without digests", `    verifyImages:
    - imageReferences: ["*"]
`, nil, engine.StatusFail, "missing digest for docker.io/nginx:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := rbCompile(t, rbRule(tc.body), tc.opts...)
			req := rbRequest(t, rbPod)
			if tc.name == "failing namespace labels" {
				set = rbCompile(t, strings.Replace(rbRule(tc.body), "kinds: [Pod]", "kinds: [Pod]\n          namespaceSelector:\n            matchLabels:\n              env: prod", 1), tc.opts...)
			}
			var resp *engine.Response
			var err error
			if strings.Contains(tc.body, "mutate:") {
				resp, err = set.Mutate(context.Background(), req)
			} else {
				resp, err = set.Validate(context.Background(), req)
			}
			if err != nil {
				t.Fatal(err)
			}
			got, ok := rbResults(resp)["bad/r"]
			if !ok {
				t.Fatalf("no result for the rule: a silent pass")
			}
			if got.Status != tc.status || !strings.Contains(got.Message, tc.want) {
				t.Errorf("got %s %q, want %s containing %q", got.Status, got.Message, tc.status, tc.want)
			}
			if got.Status == engine.StatusError && got.Err == nil {
				t.Errorf("error result without Err")
			}
			if notConfigured := strings.HasSuffix(tc.want, "not configured"); errors.Is(got.Err, engine.ErrNotConfigured) != notConfigured {
				t.Errorf("errors.Is(Err, ErrNotConfigured) = %v, want %v", !notConfigured, notConfigured)
			}
		})
	}
}

// TestRobustMutateIsAtomic: a rule that fails part way (a later foreach
// element, a later JSON patch operation, a nested foreach) leaves the
// object exactly as the previous rule left it; rules before and after it
// keep their effect; the caller's object is never modified.
func TestRobustMutateIsAtomic(t *testing.T) {
	const first = `
  - name: first
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            first: "yes"
`
	const last = `
  - name: last
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            last: "yes"
`
	for _, tc := range []struct{ name, rule, want string }{
		{"foreach fails on a later element", `
  - name: failing
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      foreach:
      - list: request.object.spec.containers
        order: Ascending
        patchesJson6902: |-
          - op: add
            path: /metadata/labels/{{ element.name }}
            value: seen
          - op: test
            path: /spec/containers/{{ elementIndex }}/image
            value: nginx:1
`, "failed to mutate elements"},
		{"JSON patch fails on a later operation", `
  - name: failing
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchesJson6902: |-
        - op: add
          path: /metadata/labels/partial
          value: "yes"
        - op: test
          path: /metadata/name
          value: other
`, "failed to patch resource"},
		{"nested foreach fails deep inside", `
  - name: failing
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      foreach:
      - list: request.object.spec.containers
        foreach:
        - list: request.object.spec.containers
          patchStrategicMerge:
            metadata:
              labels:
                "{{ element0.name }}-{{ element1.name }}": "{{ element1.missing }}"
`, "failed to mutate elements"},
		{"second foreach entry fails", `
  - name: failing
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      foreach:
      - list: request.object.spec.containers
        patchStrategicMerge:
          metadata:
            labels:
              "{{ element.name }}": seen
      - list: request.object.spec.containers
        patchesJson6902: |-
          - op: replace
            path: /spec/nothing/{{ elementIndex }}
            value: x
`, "failed to mutate elements"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: m\nspec:\n  rules:" + first + tc.rule + last
			set := rbCompile(t, src)
			req := rbRequest(t, rbPod)
			orig := rbDeepCopy(req.Object)
			resp, err := set.Mutate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(orig, req.Object) {
				t.Fatalf("request object modified")
			}
			res := rbResults(resp)
			if got := res["m/failing"]; got.Status != engine.StatusError || !strings.Contains(got.Message, tc.want) {
				t.Errorf("m/failing = %s %q, want error containing %q", got.Status, got.Message, tc.want)
			}
			if res["m/first"].Status != engine.StatusPass || res["m/last"].Status != engine.StatusPass {
				t.Errorf("other rules: first %+v, last %+v", res["m/first"], res["m/last"])
			}
			want := rbDeepCopy(orig).(map[string]any)
			labels := want["metadata"].(map[string]any)["labels"].(map[string]any)
			labels["first"], labels["last"] = "yes", "yes"
			if !reflect.DeepEqual(resp.Resource, want) {
				got, _ := yaml.Marshal(resp.Resource)
				t.Errorf("resource after a failed rule:\n%s", got)
			}
			// the policy's patched resource and the response patch agree
			if pr := resp.Policies[0].PatchedResource; !reflect.DeepEqual(pr, want) {
				t.Errorf("PatchedResource differs from the response resource")
			}
			if !strings.Contains(string(resp.Patch), "first") || strings.Contains(string(resp.Patch), "seen") || strings.Contains(string(resp.Patch), "partial") {
				t.Errorf("patch = %s", resp.Patch)
			}
		})
	}
}

const rbConcurrentPolicies = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: validate-all
spec:
  validationFailureAction: Enforce
  rules:
  - name: pattern
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      pattern:
        metadata:
          labels:
            app: "?*"
  - name: deny-context
    match:
      any:
      - resources:
          kinds: [Pod]
    context:
    - name: cm
      configMap:
        name: settings
        namespace: default
    - name: count
      variable:
        jmesPath: length(request.object.spec.containers)
    validate:
      deny:
        conditions:
          any:
          - key: "{{ count }}"
            operator: GreaterThan
            value: "{{ cm.data.max }}"
  - name: foreach
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      foreach:
      - list: request.object.spec.containers
        pattern:
          image: "!*:latest"
  - name: psa
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      podSecurity:
        level: baseline
        version: latest
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: mutate-all
spec:
  rules:
  - name: sm
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            +(team): "{{ request.object.metadata.name }}"
  - name: json
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchesJson6902: |-
        - op: add
          path: /metadata/annotations
          value:
            seen: "{{ length(request.object.spec.containers) }}"
  - name: foreach
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      foreach:
      - list: request.object.spec.containers
        patchStrategicMerge:
          spec:
            containers:
            - name: "{{ element.name }}"
              imagePullPolicy: Always
`

// TestRobustConcurrentEvaluation runs validate and mutate of one PolicySet
// from many goroutines (run it with -race) and checks that every result is
// the one a lone evaluation gives.
func TestRobustConcurrentEvaluation(t *testing.T) {
	excs := rbExceptions(t, `
apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: skip-psa-for-db
  namespace: kyverno
spec:
  exceptions:
  - policyName: validate-all
    ruleNames: [psa]
  match:
    any:
    - resources:
        kinds: [Pod]
        names: [db-*]
`)
	xs, err := exceptions.Compile(excs)
	if err != nil {
		t.Fatal(err)
	}
	set := rbCompile(t, rbConcurrentPolicies,
		engine.WithConfigMapResolver(rbConfigMaps{"default/settings": {"max": "2"}}),
		engine.WithExceptions(xs))
	pods := []string{rbPod,
		strings.Replace(rbPod, "name: web", "name: db-1", 1),
		strings.Replace(rbPod, "image: nginx:2", "image: nginx:latest", 1),
		strings.Replace(strings.Replace(rbPod, "labels:\n    app: web\n", "", 1), "spec:\n", "spec:\n  hostNetwork: true\n", 1),
	}
	type outcome struct {
		validate, mutate map[string]engine.RuleResult
		patched          map[string]any
		patch            string
	}
	run := func(i int) (outcome, error) {
		ctx := context.Background()
		v, err := set.Validate(ctx, rbRequest(t, pods[i%len(pods)]))
		if err != nil {
			return outcome{}, err
		}
		m, err := set.Mutate(ctx, rbRequest(t, pods[i%len(pods)]))
		if err != nil {
			return outcome{}, err
		}
		return outcome{rbResults(v), rbResults(m), m.Resource, string(m.Patch)}, nil
	}
	want := make([]outcome, len(pods))
	for i := range pods {
		o, err := run(i)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = o
	}
	if want[0].validate["validate-all/deny-context"].Status != engine.StatusFail || want[1].validate["validate-all/psa"].Status != engine.StatusSkip {
		t.Fatalf("unexpected baseline: %+v", want[:2])
	}
	const workers, rounds = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				i := w + r
				got, err := run(i)
				if err != nil {
					errs <- err
					return
				}
				if !reflect.DeepEqual(got, want[i%len(pods)]) {
					errs <- fmt.Errorf("worker %d round %d: results differ from a lone evaluation", w, r)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// isPolicyDoc reports whether a document is a policy of a kind gavel
// decodes, or fails to decode (so that DecodePolicy reports the error).
func isPolicyDoc(d api.Document) bool {
	obj, err := api.DecodeObject(d)
	switch obj.(type) {
	case *api.PolicyException, *api.CELPolicyException:
		return false
	}
	_, ok := obj.(api.PolicyObject)
	return ok || err != nil
}
