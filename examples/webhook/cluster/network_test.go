package main

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	ggcr "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// With -network (the default), policies reach registries and services as
// upstream's controllers let them; without it, those context entries are
// errors naming the missing host. A registry and a service run on
// 127.0.0.1; the CEL http library refuses loopback (upstream's blocklist),
// which shows it is there.
func TestNetworkOptions(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	image := strings.TrimPrefix(reg.URL, "http://") + "/app:v1"
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(image)
	if err != nil {
		t.Fatal(err)
	}
	if err := ggcr.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"allowed": true}`)
	}))
	defer svc.Close()

	src := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: network}
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: registry
    match: {any: [{resources: {kinds: [Pod]}}]}
    context:
    - name: img
      imageRegistry: {reference: "{{ request.object.spec.containers[0].image }}"}
    validate:
      message: "not an OCI image"
      deny: {conditions: {any: [{key: "{{ img.manifest.schemaVersion }}", operator: NotEquals, value: 2}]}}
  - name: service
    match: {any: [{resources: {kinds: [Pod]}}]}
    context:
    - name: answer
      apiCall: {method: GET, service: {url: "` + svc.URL + `"}}
    validate:
      message: "not allowed"
      deny: {conditions: {any: [{key: "{{ answer.allowed }}", operator: NotEquals, value: true}]}}
---
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: http}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations:
  - expression: http.Get("http://127.0.0.1:1/") != null
`
	docs, err := api.ReadDocuments(strings.NewReader(src), "policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var policies []api.PolicyObject
	for _, d := range docs {
		p, err := api.DecodePolicy(d)
		if err != nil {
			t.Fatal(err)
		}
		policies = append(policies, p)
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "default"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": image}}}}
	for _, tt := range []struct {
		network bool
		want    map[string]string // rule (policy for the ValidatingPolicy): status, then text its message holds
	}{
		{true, map[string]string{"registry": "pass", "service": "pass", "http": "error: blocked"}},
		{false, map[string]string{"registry": "error: RegistryClient", "service": "error: ServiceCaller", "http": "error: no HTTP client"}},
	} {
		opts, err := engineOptions(nil, &options{network: tt.network})
		if err != nil {
			t.Fatal(err)
		}
		eng, err := engine.New(opts...)
		if err != nil {
			t.Fatal(err)
		}
		set, err := eng.Compile(policies...)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for p, r := range resp.Rules() {
			key := r.Name
			if key == "" {
				key = p.Policy.Source().GetName()
			}
			got[key] = true
			status, text, _ := strings.Cut(tt.want[key], ": ")
			if string(r.Status) != status || !strings.Contains(r.Message, text) {
				t.Errorf("network %v: %s: %s %q, want %s with %q", tt.network, key, r.Status, r.Message, status, text)
			}
		}
		for key := range tt.want {
			if !got[key] {
				t.Errorf("network %v: no result for %s", tt.network, key)
			}
		}
	}
}
