package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/loader"
)

// decode reads policies, exceptions and resources from inline YAML; a host
// would use loader.Load on files and folders instead.
func decode(src string) *loader.Set {
	s := &loader.Set{}
	if err := s.Read(strings.NewReader(src), "example.yaml"); err != nil {
		panic(err)
	}
	return s
}

// object decodes one YAML document into a JSON-like map.
func object(src string) map[string]any {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(src), &m); err != nil {
		panic(err)
	}
	return m
}

const requireTeamLabel = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team-label
spec:
  validationFailureAction: Enforce
  rules:
  - name: check-team
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "label 'team' is required"
      pattern:
        metadata:
          labels:
            team: "?*"
`

const unlabelledPod = `
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
spec:
  containers:
  - name: nginx
    image: nginx:1.27
`

// Compile policies once, then validate any number of requests, from any
// goroutine. Response.Blocked tells an admission controller to deny.
func Example_validate() {
	eng, err := engine.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	set, err := eng.Compile(decode(requireTeamLabel).Policies...)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := set.Validate(context.Background(), &engine.Request{
		Operation: api.Create,
		Object:    object(unlabelledPod),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for p, r := range resp.Rules() {
		fmt.Printf("%s/%s: %s (%s)\n", p.Policy.Source().GetName(), r.Name, r.Status, p.FailureAction)
		fmt.Println(r.Message)
	}
	fmt.Println("blocked:", resp.Blocked())
	// Output:
	// require-team-label/check-team: fail (Enforce)
	// validation error: label 'team' is required. rule check-team failed at path /metadata/labels/
	// blocked: true
}

// Mutate returns the patched object and an RFC 6902 patch from the request
// object to it, ready for an AdmissionReview response.
func Example_mutate() {
	eng, err := engine.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	set, err := eng.Compile(decode(`
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: add-defaults
spec:
  rules:
  - name: default-team
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            +(team): platform
        spec:
          securityContext:
            +(runAsNonRoot): true
`).Policies...)
	if err != nil {
		fmt.Println(err)
		return
	}
	pod := object(unlabelledPod)
	resp, err := set.Mutate(context.Background(), &engine.Request{Operation: api.Create, Object: pod})
	if err != nil {
		fmt.Println(err)
		return
	}
	for p, r := range resp.Rules() {
		fmt.Printf("%s/%s: %s: %s\n", p.Policy.Source().GetName(), r.Name, r.Status, r.Message)
	}
	fmt.Println(string(resp.Patch))
	labels := resp.Resource["metadata"].(map[string]any)["labels"]
	fmt.Println("patched labels:", labels)
	_, touched := pod["metadata"].(map[string]any)["labels"]
	fmt.Println("input changed:", touched)
	// Output:
	// add-defaults/default-team: pass: mutated Pod/web in namespace shop
	// [{"op":"add","path":"/metadata/labels","value":{"team":"platform"}},{"op":"add","path":"/spec/securityContext","value":{"runAsNonRoot":true}}]
	// patched labels: map[team:platform]
	// input changed: false
}

// A PolicyException compiled with exceptions.Compile and handed to the
// engine turns the failing rule into a skip for the resources it matches.
func Example_exception() {
	xs := decode(`
apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: legacy-web
  namespace: shop
spec:
  exceptions:
  - policyName: require-team-label
    ruleNames: [check-team]
  match:
    any:
    - resources:
        kinds: [Pod]
        namespaces: [shop]
        names: ["web*"]
`)
	excs, err := exceptions.Compile(xs.Exceptions)
	if err != nil {
		fmt.Println(err)
		return
	}
	eng, err := engine.New(engine.WithExceptions(excs))
	if err != nil {
		fmt.Println(err)
		return
	}
	set, err := eng.Compile(decode(requireTeamLabel).Policies...)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := set.Validate(context.Background(), &engine.Request{Object: object(unlabelledPod)})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := resp.Policies[0].Rules[0]
	fmt.Println(r.Status, r.Exceptions)
	fmt.Println(r.Message)
	fmt.Println("blocked:", resp.Blocked())
	// Output:
	// skip [shop/legacy-web]
	// rule is skipped due to policy exception: shop/legacy-web
	// blocked: false
}

// configMaps is a ConfigMapResolver backed by a map, keyed "namespace/name".
// A real host would read an informer cache or call the API server.
type configMaps map[string]map[string]string

func (c configMaps) GetConfigMap(_ context.Context, namespace, name string) (map[string]any, error) {
	data, ok := c[namespace+"/"+name]
	if !ok {
		return nil, fmt.Errorf("configmap %s/%s: %w", namespace, name, engine.ErrNotFound)
	}
	d := make(map[string]any, len(data))
	for k, v := range data {
		d[k] = v
	}
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"data":       d,
	}, nil
}

// Rules with configMap context entries read them through the host's
// ConfigMapResolver, given with engine.WithConfigMapResolver.
func Example_configMapResolver() {
	eng, err := engine.New(engine.WithConfigMapResolver(configMaps{
		"platform/registries": {"allowed": "registry.example.com"},
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	set, err := eng.Compile(decode(`
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: allowed-registries
spec:
  validationFailureAction: Enforce
  rules:
  - name: check-registry
    match:
      any:
      - resources:
          kinds: [Pod]
    context:
    - name: registries
      configMap:
        name: registries
        namespace: platform
    validate:
      message: "images must come from {{ registries.data.allowed }}"
      foreach:
      - list: request.object.spec.containers
        deny:
          conditions:
            any:
            - key: "{{ element.image }}"
              operator: NotEquals
              value: "{{ registries.data.allowed }}/*"
`).Policies...)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, image := range []string{"registry.example.com/web:1.0", "nginx:1.27"} {
		pod := object(unlabelledPod)
		pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"] = image
		resp, err := set.Validate(context.Background(), &engine.Request{Object: pod})
		if err != nil {
			fmt.Println(err)
			return
		}
		r := resp.Policies[0].Rules[0]
		fmt.Printf("%s: %s %s\n", image, r.Status, r.Message)
	}
	// Output:
	// registry.example.com/web:1.0: pass rule passed
	// nginx:1.27: fail validation failure: images must come from registry.example.com
}

// Limits bound what a policy can make the engine do. A rule stopped by a
// limit is an error result whose Err tells which limit it was.
func ExampleWithLimits() {
	eng, err := engine.New(engine.WithLimits(engine.Limits{MaxForeachElements: 2}))
	if err != nil {
		fmt.Println(err)
		return
	}
	set, err := eng.Compile(decode(`
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: per-container
spec:
  rules:
  - name: named
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      foreach:
      - list: request.object.spec.containers
        pattern:
          name: "?*"
`).Policies...)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: object(`
apiVersion: v1
kind: Pod
metadata: {name: three}
spec:
  containers: [{name: a, image: a}, {name: b, image: b}, {name: c, image: c}]
`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := resp.Policies[0].Rules[0]
	var limit *engine.LimitError
	if errors.As(r.Err, &limit) {
		fmt.Println(r.Status, limit.Limit)
	}
	fmt.Println(r.Message)
	// Output:
	// error MaxForeachElements
	// failed to process foreach: list "request.object.spec.containers" has 3 elements, more than the limit of 2
}

// A host's resource filter leaves resources out of evaluation: a
// filtered request gets an empty response. This one leaves out Nodes, as
// upstream's default [Node,*,*].
func ExampleWithResourceFilter() {
	nodes := func(kind schema.GroupVersionKind, _, _, _ string) bool {
		return kind.Group == "" && kind.Kind == "Node"
	}
	eng, err := engine.New(engine.WithResourceFilter(nodes))
	if err != nil {
		fmt.Println(err)
		return
	}
	set, err := eng.Compile(decode(`
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team
spec:
  validationFailureAction: Enforce
  rules:
  - name: team
    match:
      any:
      - resources: {kinds: [Node, ConfigMap]}
    validate:
      message: a team label is required
      pattern:
        metadata:
          labels:
            team: "?*"
`).Policies...)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, kind := range []string{"Node", "ConfigMap"} {
		resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create,
			Object: map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": "a"}}})
		if err != nil {
			fmt.Println(err)
			return
		}
		results := []string{}
		for _, r := range resp.Rules() {
			results = append(results, string(r.Status))
		}
		fmt.Println(kind, results)
	}
	// Output:
	// Node []
	// ConfigMap [fail]
}
