package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// celLibFiles are the inputs of the tests of Kyverno's CEL libraries in
// apply and test. No test reaches the network: the requests that would are
// refused by the default blocklist (loopback) or go to a closed loopback
// port.
var celLibFiles = map[string]string{
	"libs.yaml": `apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: context-objects
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  variables:
  - name: cm
    expression: resource.Get("v1", "configmaps", object.metadata.namespace, "settings")
  validations:
  - expression: variables.cm.data.team == object.metadata.labels.team
    message: not the settings' team
---
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: resources-unseen
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations:
  - expression: dyn(resource.Get("v1", "pods", object.metadata.namespace, object.metadata.name)) == null
    message: the resources are not in the library's cluster
---
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: custom-kind
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations:
  - expression: dyn(resource.Get("sea.test/v1", "octopi", "", "paul")) != null
    message: no octopus paul
---
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: image-metadata
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations:
  - expression: image.GetMetadata(object.spec.containers[0].image).config.config.User == "1000"
    message: not user 1000
---
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: global-context
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations:
  - expression: globalContext.Get("teams", "") == null
    message: apply has no global context data
`,
	"http.yaml": `apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: http-loopback
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations:
  - expression: http.Get("http://127.0.0.1:1/settings").statusCode == 200
`,
	"context.yaml": `apiVersion: cli.kyverno.io/v1alpha1
kind: Context
metadata:
  name: context
spec:
  resources:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: settings, namespace: shop}
    data: {team: blue}
  - apiVersion: sea.test/v1
    kind: Octopus
    metadata: {name: paul}
  images:
  - image: ghcr.io/acme/app:v1
    resolvedImage: ghcr.io/acme/app:v1
    registry: ghcr.io
    repository: acme/app
    tag: v1
    config: {config: {User: "1000"}}
`,
	"crds.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: octopi.sea.test}
spec:
  group: sea.test
  scope: Cluster
  names: {kind: Octopus, plural: octopi, singular: octopus}
  versions: [{name: v1, served: true, storage: true}]
`,
	"pods.yaml": `apiVersion: v1
kind: Pod
metadata: {name: blue, namespace: shop, labels: {team: blue}}
spec: {containers: [{name: c, image: "ghcr.io/acme/app:v1"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: red, namespace: shop, labels: {team: red}}
spec: {containers: [{name: c, image: "ghcr.io/acme/other:v1"}]}
`,
	"settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: shop}\ndata: {team: red}\n",
	"suite/kyverno-test.yaml": `apiVersion: cli.kyverno.io/v1alpha1
kind: Test
metadata:
  name: cel-libraries
policies: [policy.yaml]
resources: [pods.yaml]
apiCallResponses:
- url: https://config.test/settings
  response:
    body: {team: blue}
results:
- {isValidatingPolicy: true, policy: mocked, kind: Pod, resources: [blue], result: pass}
- {isValidatingPolicy: true, policy: mocked, kind: Pod, resources: [red], result: fail}
- {isValidatingPolicy: true, policy: network, kind: Pod, resources: [blue], result: error}
`,
	"suite/policy.yaml": `apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: mocked
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations:
  - expression: http.Get("https://config.test/settings").body.team == object.metadata.labels.team
---
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: network
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations:
  - expression: http.Get("http://127.0.0.1:1/settings").statusCode == 200
`,
	"suite/pods.yaml": `apiVersion: v1
kind: Pod
metadata: {name: blue, namespace: shop, labels: {team: blue}}
spec: {containers: [{name: c, image: "127.0.0.1:1/acme/app:v1"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: red, namespace: shop, labels: {team: red}}
spec: {containers: [{name: c, image: c}]}
`,
	"cluster-suite/kyverno-test.yaml": `apiVersion: cli.kyverno.io/v1alpha1
kind: Test
metadata:
  name: cel-libraries-cluster
policies: [policy.yaml]
resources: [pods.yaml]
clusterResources: [cluster.yaml]
results:
- {isValidatingPolicy: true, policy: registry, kind: Pod, resources: [blue], result: error}
`,
	"cluster-suite/cluster.yaml": "apiVersion: cli.kyverno.io/v1alpha1\nkind: ClusterResource\nmetadata: {name: c}\nspec: {resources: []}\n",
	"cluster-suite/policy.yaml": `apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: registry
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations:
  - expression: image.GetMetadata(object.spec.containers[0].image).config.os == "linux"
`,
	"cluster-suite/pods.yaml": `apiVersion: v1
kind: Pod
metadata: {name: blue, namespace: shop}
spec: {containers: [{name: c, image: "127.0.0.1:1/acme/app:v1"}]}
`,
}

// TestApplyCELLibraries runs gavel apply on ValidatingPolicies that call
// Kyverno's CEL libraries, whose hosts are upstream's apply's: off a
// cluster the context file's objects (named with the --crd-path CRDs) and
// images, no global context data, and the network for http (here refused
// by the default blocklist). Each case lists every result: "policy
// resource" → result, or result and a part of the message.
func TestApplyCELLibraries(t *testing.T) {
	dir := writeFiles(t, celLibFiles)
	p := func(name string) string { return filepath.Join(dir, name) }
	const blocked = "connection to 127.0.0.1:1 blocked: IP 127.0.0.1 falls in blocked range 127.0.0.0/8"
	tests := []struct {
		name string
		args []string
		want map[string]string
	}{
		{name: "context file", args: []string{p("libs.yaml"), "-r", p("pods.yaml"), "-r", p("settings.yaml"), "--context-file", p("context.yaml"), "--crd-path", p("crds.yaml")},
			want: map[string]string{
				"context-objects shop/Pod/blue": "pass", "context-objects shop/Pod/red": "fail",
				"resources-unseen shop/Pod/blue": "pass", "resources-unseen shop/Pod/red": "pass",
				"custom-kind shop/Pod/blue": "pass", "custom-kind shop/Pod/red": "pass",
				"image-metadata shop/Pod/blue": "pass", "image-metadata shop/Pod/red": "error: failed to get image data: image ghcr.io/acme/other:v1: not found",
				"global-context shop/Pod/blue": "pass", "global-context shop/Pod/red": "pass"}},
		// the context's Octopus is octopuses without its CRD
		{name: "context file without the CRD", args: []string{p("libs.yaml"), "-r", p("pods.yaml"), "--context-file", p("context.yaml")},
			want: map[string]string{
				"context-objects shop/Pod/blue": "pass", "context-objects shop/Pod/red": "fail",
				"resources-unseen shop/Pod/blue": "pass", "resources-unseen shop/Pod/red": "pass",
				"custom-kind shop/Pod/blue": "fail", "custom-kind shop/Pod/red": "fail",
				"image-metadata shop/Pod/blue": "pass", "image-metadata shop/Pod/red": "error: failed to get image data",
				"global-context shop/Pod/blue": "pass", "global-context shop/Pod/red": "pass"}},
		// the resources (settings.yaml too) are not the library's cluster
		{name: "no context file", args: []string{p("libs.yaml"), "-r", p("pods.yaml"), "-r", p("settings.yaml"), "--registry"},
			want: map[string]string{
				"context-objects shop/Pod/blue": "error: no such key: data", "context-objects shop/Pod/red": "error: no such key: data",
				"resources-unseen shop/Pod/blue": "pass", "resources-unseen shop/Pod/red": "pass",
				"custom-kind shop/Pod/blue": "fail", "custom-kind shop/Pod/red": "fail",
				"image-metadata shop/Pod/blue": "error: failed to get image data: image ghcr.io/acme/app:v1: not found",
				"image-metadata shop/Pod/red":  "error: failed to get image data: image ghcr.io/acme/other:v1: not found",
				"global-context shop/Pod/blue": "pass", "global-context shop/Pod/red": "pass"}},
		{name: "http reaches the network through the blocklist", args: []string{p("http.yaml"), "-r", p("pods.yaml")},
			want: map[string]string{"http-loopback shop/Pod/blue": "error: " + blocked, "http-loopback shop/Pod/red": "error: " + blocked}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stdout, stderr := applyRun(t, "", append(tt.args, "--output-format", "json")...)
			var doc struct {
				Results []struct{ Policy, Resource, Result, Message string }
			}
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
			}
			got := map[string]string{}
			for _, r := range doc.Results {
				k := r.Policy + " " + r.Resource
				got[k] = r.Result
				if w := tt.want[k]; strings.Contains(w, ": ") && strings.Contains(r.Message, w[len(r.Result)+2:]) {
					got[k] = w
				} else if r.Result == "error" {
					got[k] = "error: " + r.Message
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("results:\n%v\nwant:\n%v", got, tt.want)
			}
		})
	}
}

// TestTestCELLibraries runs gavel test on ValidatingPolicies that call
// Kyverno's CEL libraries: the mocks answer http (upstream's wrapped
// response), the other requests go to the network (here refused by the
// blocklist); with clusterResources image.GetMetadata reads the
// registries (here a closed loopback port).
func TestTestCELLibraries(t *testing.T) {
	dir := writeFiles(t, celLibFiles)
	for _, tc := range []struct {
		suite string
		want  []string
	}{
		{"suite", []string{"3 passed, 0 failed", "blocked: IP 127.0.0.1 falls in blocked range 127.0.0.0/8"}},
		{"cluster-suite", []string{"1 passed, 0 failed", "failed to get image data: failed to fetch image descriptor 127.0.0.1:1/acme/app:v1"}},
	} {
		code, stdout, stderr := runGavel("test", "--strict", "--fail-only=false", "--detailed-results", filepath.Join(dir, tc.suite))
		if code != 0 {
			t.Errorf("%s: exit %d\n%s\n%s", tc.suite, code, stdout, stderr)
		}
		for _, s := range tc.want {
			if !strings.Contains(stdout, s) {
				t.Errorf("%s: stdout lacks %q:\n%s", tc.suite, s, stdout)
			}
		}
	}
}

// TestApplyClusterCELLibraries: with --cluster the CEL libraries read the
// cluster and the registries (here a closed loopback port), as upstream's
// apply; the context file is not read.
func TestApplyClusterCELLibraries(t *testing.T) {
	const policy = `apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: cluster-settings
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations:
  - expression: resource.Get("v1", "configmaps", object.metadata.namespace, "settings").data.team == object.metadata.labels.team
---
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: registry
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations:
  - expression: image.GetMetadata("127.0.0.1:1/acme/app:v1").config.os == "linux"
`
	const context = `apiVersion: cli.kyverno.io/v1alpha1
kind: Context
metadata: {name: c}
spec:
  resources:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: a}, data: {team: "y"}}
  images:
  - {image: "127.0.0.1:1/acme/app:v1", resolvedImage: "127.0.0.1:1/acme/app:v1", registry: "127.0.0.1:1", repository: acme/app, config: {os: linux}}
`
	dir := writeFiles(t, map[string]string{"policy.yaml": policy, "context.yaml": context})
	cm := obj("v1", "ConfigMap", "a", "settings", nil)
	cm.Object["data"] = map[string]any{"team": "x"}
	fc := newFakeCluster(t, cm,
		obj("v1", "Pod", "a", "x-pod", map[string]any{"team": "x"}),
		obj("v1", "Pod", "a", "y-pod", map[string]any{"team": "y"}))
	useFakeCluster(t, fc)
	_, stdout, stderr := runGavel("apply", filepath.Join(dir, "policy.yaml"), "-c", "--context-file", filepath.Join(dir, "context.yaml"), "--output-format", "json")
	var doc struct {
		Results []struct{ Policy, Resource, Result, Message string }
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
	}
	got := map[string]string{}
	for _, r := range doc.Results {
		got[r.Policy+" "+r.Resource] = r.Result
		if r.Result == "error" && !strings.Contains(r.Message, "failed to fetch image descriptor 127.0.0.1:1/acme/app:v1") {
			t.Errorf("%s %s: %s", r.Policy, r.Resource, r.Message)
		}
	}
	want := map[string]string{"cluster-settings a/Pod/x-pod": "pass", "cluster-settings a/Pod/y-pod": "fail",
		"registry a/Pod/x-pod": "error", "registry a/Pod/y-pod": "error"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("results %v, want %v\nstderr:\n%s", got, want, stderr)
	}
}
