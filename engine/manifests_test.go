package engine_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
)

// fakeManifests is an ImageVerifier (the image fake) that also verifies
// manifests over a table: a message (the value of the message annotation)
// holds documents signed by some keys (PEM texts).
type fakeManifests struct {
	*fakeVerifier
	mu       sync.Mutex
	messages map[string]signedMessage
	images   map[string]signedMessage // by repository
	requests []engine.ManifestVerifyRequest
}

type signedMessage struct {
	docs   []map[string]any
	keys   []string
	signer string
}

func (f *fakeManifests) VerifyManifest(ctx context.Context, req engine.ManifestVerifyRequest) (*engine.SignedManifests, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req)
	var m signedMessage
	if req.Repository != "" {
		var ok bool
		if m, ok = f.images[req.Repository]; !ok {
			return nil, fmt.Errorf("MANIFEST_UNKNOWN %s: %w", req.Repository, engine.ErrRegistryUnavailable)
		}
	} else {
		id, ok := req.Annotations[req.AnnotationDomain+"/message"]
		if !ok {
			return nil, fmt.Errorf("%w: message not found", engine.ErrManifestNotSigned)
		}
		if _, ok := req.Annotations[req.AnnotationDomain+"/signature"]; !ok {
			return nil, fmt.Errorf("%w: signature not found", engine.ErrManifestNotSigned)
		}
		if m, ok = f.messages[id]; !ok {
			return nil, errors.New("failed to decode the message annotation: illegal base64 data at input byte 0")
		}
	}
	if req.Attestor.Keys == nil {
		return nil, errors.New("only keys in the fake")
	}
	for _, k := range m.keys {
		if strings.TrimSpace(k) == strings.TrimSpace(req.Attestor.Keys.PublicKeys) {
			return &engine.SignedManifests{Manifests: m.docs, Signer: m.signer}, nil
		}
	}
	return nil, errors.New("signature verification failed: invalid signature when validating ASN.1 encoded signature")
}

func pemKey(t testing.TB) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))
}

func webDeployment(replicas int, image string) map[string]any {
	return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "labels": map[string]any{"app": "web"}},
		"spec": map[string]any{"replicas": float64(replicas), "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": image}}}}}}
}

// signedDeployment is the deployment as admitted: the signed manifest
// with the annotations, a namespace and what the API server adds.
func signedDeployment(replicas int, image, message string) map[string]any {
	d := webDeployment(replicas, image)
	meta := d["metadata"].(map[string]any)
	meta["namespace"] = "prod"
	meta["uid"] = "4d1c"
	meta["creationTimestamp"] = "2026-01-01T00:00:00Z"
	meta["managedFields"] = []any{map[string]any{"manager": "kubectl"}}
	meta["annotations"] = map[string]any{"cosign.sigstore.dev/message": message, "cosign.sigstore.dev/signature": "MEUCIQ"}
	d["status"] = map[string]any{"replicas": float64(replicas)}
	return d
}

func manifestsPolicy(body string) string {
	return `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: signed
spec:
  rules:
  - name: manifest
    match:
      any:
      - resources:
          kinds: [Deployment]
    validate:
      manifests:
` + body
}

func manifestKeys(count string, keys ...string) string {
	s := "        attestors:\n        - " + count + "entries:\n"
	for _, k := range keys {
		s += "          - keys:\n              publicKeys: |-\n" + indent(k, "                ") + "\n"
	}
	return s
}

const replicasIgnored = "        ignoreFields:\n        - objects:\n          - kind: Deployment\n          fields:\n          - spec.replicas\n"

func manifestResults(t *testing.T, set *engine.PolicySet, req *engine.Request) []string {
	t.Helper()
	resp, err := set.Validate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, p := range resp.Policies {
		for _, r := range p.Rules {
			if r.Type != engine.Validation {
				t.Errorf("result %s has type %s", r.Name, r.Type)
			}
			lines = append(lines, string(r.Status)+": "+r.Message)
		}
	}
	return lines
}

func TestValidateManifests(t *testing.T) {
	keyA, keyB := pemKey(t), pemKey(t)
	f := &fakeManifests{fakeVerifier: newFake(), messages: map[string]signedMessage{
		"web":      {docs: []map[string]any{webDeployment(2, "nginx:1.27")}, keys: []string{keyA}},
		"web-both": {docs: []map[string]any{{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "web"}}, webDeployment(2, "nginx:1.27")}, keys: []string{keyA, keyB}},
		"other":    {docs: []map[string]any{{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "web"}}}, keys: []string{keyA}},
	}}
	const passA = "pass: verified manifest signatures; manifest verification succeeded; verifiedCount 1; requiredCount 1; message singed by a valid signer: "
	tests := []struct {
		name string
		body string
		obj  map[string]any
		want string
	}{
		{"signed and unchanged", manifestKeys("", keyA), signedDeployment(2, "nginx:1.27", "web"), passA},
		{"canonical image", manifestKeys("", keyA), signedDeployment(2, "docker.io/nginx:1.27", "web"), passA},
		{"changed field", manifestKeys("", keyA), signedDeployment(2, "evil:1.27", "web"),
			`fail: manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: failed to verify signature. diff found; {"items":[{"key":"spec.template.spec.containers.0.image","values":{"after":"evil:1.27","before":"nginx:1.27"}}]}`},
		{"added and removed fields", manifestKeys("", keyA), func() map[string]any {
			d := signedDeployment(2, "nginx:1.27", "web")
			meta := d["metadata"].(map[string]any)
			meta["labels"] = map[string]any{"tier": "front"}
			return d
		}(), `fail: manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: failed to verify signature. diff found; {"items":[{"key":"metadata.labels.app","values":{"after":null,"before":"web"}},{"key":"metadata.labels.tier","values":{"after":"front","before":null}}]}`},
		{"type changed", manifestKeys("", keyA), func() map[string]any {
			d := signedDeployment(2, "nginx:1.27", "web")
			d["spec"].(map[string]any)["replicas"] = "2"
			return d
		}(), `fail: manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: failed to verify signature. diff found; {"items":[{"key":"spec.replicas","values":{"after":"(type: string) 2","before":"(type: float64) %!s(float64=2)"}}]}`},
		{"replicas changed", manifestKeys("", keyA), signedDeployment(5, "nginx:1.27", "web"),
			`fail: manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: failed to verify signature. diff found; {"items":[{"key":"spec.replicas","values":{"after":5,"before":2}}]}`},
		{"ignored field changed", manifestKeys("", keyA) + replicasIgnored, signedDeployment(5, "nginx:1.27", "web"), passA},
		{"ignored field, other field changed", manifestKeys("", keyA) + replicasIgnored, signedDeployment(5, "evil", "web"),
			`fail: manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: failed to verify signature. diff found; {"items":[{"key":"spec.template.spec.containers.0.image","values":{"after":"evil","before":"nginx:1.27"}}]}`},
		{"wrong key", manifestKeys("", keyB), signedDeployment(2, "nginx:1.27", "web"),
			"error: error occurred during manifest verification: .attestors[0].entries[0].keys: failed to verify signature: signature verification failed: invalid signature when validating ASN.1 encoded signature"},
		{"count 1 of 2, first wrong", manifestKeys("count: 1\n          ", keyB, keyA), signedDeployment(2, "nginx:1.27", "web"), passA},
		{"count 1 of 2, first right", manifestKeys("count: 1\n          ", keyA, keyB), signedDeployment(2, "nginx:1.27", "web"), passA},
		{"2 of 2", manifestKeys("", keyA, keyB), signedDeployment(2, "nginx:1.27", "web-both"),
			"pass: verified manifest signatures; manifest verification succeeded; verifiedCount 2; requiredCount 2; message singed by a valid signer: ,singed by a valid signer: "},
		{"2 of 2, one wrong", manifestKeys("", keyA, keyB), signedDeployment(2, "nginx:1.27", "web"),
			"error: error occurred during manifest verification: .attestors[0].entries[1].keys: failed to verify signature: signature verification failed: invalid signature when validating ASN.1 encoded signature"},
		{"two keys in one entry", manifestKeys("count: 1\n          ", keyB+"\n"+keyA), signedDeployment(2, "nginx:1.27", "web"), passA},
		{"two sets", manifestKeys("", keyA) + "        - entries:\n          - keys:\n              publicKeys: |-\n" + indent(keyB, "                ") + "\n",
			signedDeployment(2, "nginx:1.27", "web-both"), passA + ",manifest verification succeeded; verifiedCount 1; requiredCount 1; message singed by a valid signer: "},
		{"nested attestor", "        attestors:\n        - entries:\n          - attestor:\n              entries:\n              - keys:\n                  publicKeys: |-\n" + indent(keyA, "                    ") + "\n",
			signedDeployment(2, "nginx:1.27", "web"),
			"pass: verified manifest signatures; manifest verification succeeded; verifiedCount 1; requiredCount 1; message manifest verification succeeded; verifiedCount 1; requiredCount 1; message singed by a valid signer: "},
		{"not signed", manifestKeys("", keyA), webDeployment(2, "nginx:1.27"),
			"fail: manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: manifest not signed: message not found"},
		{"no signature", manifestKeys("", keyA), func() map[string]any {
			d := signedDeployment(2, "nginx:1.27", "web")
			delete(d["metadata"].(map[string]any)["annotations"].(map[string]any), "cosign.sigstore.dev/signature")
			return d
		}(), "fail: manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: manifest not signed: signature not found"},
		{"malformed message", manifestKeys("", keyA), signedDeployment(2, "nginx:1.27", "%%%"),
			"error: error occurred during manifest verification: .attestors[0].entries[0].keys: failed to verify signature: failed to decode the message annotation: illegal base64 data at input byte 0"},
		{"no manifest of the kind", manifestKeys("", keyA), signedDeployment(2, "nginx:1.27", "other"),
			"fail: manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: YAML manifest not found for this resource: no signed manifest of kind Deployment"},
		{"annotation domain", "        annotationDomain: sig.example.com\n" + manifestKeys("", keyA), func() map[string]any {
			d := signedDeployment(2, "nginx:1.27", "x")
			d["metadata"].(map[string]any)["annotations"] = map[string]any{"sig.example.com/message": "web", "sig.example.com/signature": "MEUCIQ"}
			return d
		}(), passA},
		{"other domain's annotations differ", "        annotationDomain: sig.example.com\n" + manifestKeys("", keyA), func() map[string]any {
			d := signedDeployment(2, "nginx:1.27", "x")
			d["metadata"].(map[string]any)["annotations"].(map[string]any)["sig.example.com/message"] = "web"
			d["metadata"].(map[string]any)["annotations"].(map[string]any)["sig.example.com/signature"] = "MEUCIQ"
			return d
		}(), passA},
		{"attestor annotations", "        attestors:\n        - entries:\n          - annotations:\n              team: web\n            keys:\n              publicKeys: |-\n" + indent(keyA, "                ") + "\n",
			signedDeployment(2, "nginx:1.27", "web"),
			"error: error occurred during manifest verification: annotations mismatch:  does not match expected value web for key team"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compileVerify(t, f.fakeVerifier, manifestsPolicy(tt.body), engine.WithImageVerifier(f))
			got := manifestResults(t, set, &engine.Request{Operation: api.Create, Object: tt.obj})
			if strings.Join(got, "\n") != tt.want {
				t.Errorf("results:\n%s\nwant:\n%s", strings.Join(got, "\n"), tt.want)
			}
		})
	}
}

func TestValidateManifestsRequests(t *testing.T) {
	key := pemKey(t)
	f := &fakeManifests{fakeVerifier: newFake(),
		messages: map[string]signedMessage{"web": {docs: []map[string]any{webDeployment(2, "nginx:1.27")}, keys: []string{key}}},
		images:   map[string]signedMessage{"registry.test/manifests:v1": {docs: []map[string]any{webDeployment(2, "nginx:1.27")}, keys: []string{key}, signer: "ci@example.com"}}}
	run := func(body string, obj map[string]any, req *engine.Request) []string {
		set := compileVerify(t, f.fakeVerifier, manifestsPolicy(body), engine.WithImageVerifier(f))
		if req == nil {
			req = &engine.Request{Operation: api.Create}
		}
		req.Object = obj
		return manifestResults(t, set, req)
	}
	// the imageRef variant: the repository of the rule, the attestor, or
	// the resource's resourceBundleRef annotation
	d := webDeployment(2, "nginx:1.27")
	const passCI = "pass: verified manifest signatures; manifest verification succeeded; verifiedCount 1; requiredCount 1; message singed by a valid signer: ci@example.com"
	for _, body := range []string{"        repository: registry.test/manifests:v1\n" + manifestKeys("", key),
		strings.Replace(manifestKeys("", key), "          - keys:", "          - repository: registry.test/manifests:v1\n            keys:", 1)} {
		if got := run(body, d, nil); strings.Join(got, "\n") != passCI {
			t.Errorf("repository: %v", got)
		}
	}
	withRef := webDeployment(2, "nginx:1.27")
	withRef["metadata"].(map[string]any)["annotations"] = map[string]any{"cosign.sigstore.dev/resourceBundleRef": "registry.test/manifests:v1"}
	if got := run("        repository: registry.test/elsewhere:v1\n"+manifestKeys("", key), withRef, nil); strings.Join(got, "\n") != passCI {
		t.Errorf("resourceBundleRef: %v", got)
	}
	if got := run("        repository: registry.test/missing:v1\n"+manifestKeys("", key), d, nil); len(got) != 1 || !strings.HasPrefix(got[0], "error: error occurred during manifest verification: .attestors[0].entries[0].keys: failed to verify signature: MANIFEST_UNKNOWN") {
		t.Errorf("missing image: %v", got)
	}
	last := f.requests[len(f.requests)-1]
	if last.Repository != "registry.test/missing:v1" || last.AnnotationDomain != "cosign.sigstore.dev" || strings.TrimSpace(last.Attestor.Keys.PublicKeys) != key {
		t.Errorf("request = %+v", last)
	}
	// a dry-run admission request passes without verification; DELETE is
	// not verified
	n := len(f.requests)
	if got := run(manifestKeys("", key), d, &engine.Request{Operation: api.Create, DryRun: true}); strings.Join(got, "\n") != "pass: allowed because of DryRun request" {
		t.Errorf("dry-run request: %v", got)
	}
	set := compileVerify(t, f.fakeVerifier, manifestsPolicy(manifestKeys("", key)), engine.WithImageVerifier(f))
	if got := manifestResults(t, set, &engine.Request{Operation: api.Delete, OldObject: d}); len(got) != 0 {
		t.Errorf("DELETE: %v", got)
	}
	if len(f.requests) != n {
		t.Errorf("verifier called %d times", len(f.requests)-n)
	}
}

// TestValidateManifestsHostData: the host's documents may hold any Go
// numbers (compared as JSON numbers); data that is not JSON-like is
// compared by its text, never a panic.
func TestValidateManifestsHostData(t *testing.T) {
	key := pemKey(t)
	ints := webDeployment(2, "nginx:1.27")
	ints["spec"].(map[string]any)["replicas"] = int64(2)
	odd := webDeployment(2, "nginx:1.27")
	odd["spec"].(map[string]any)["ch"] = make(chan int)
	f := &fakeManifests{fakeVerifier: newFake(), messages: map[string]signedMessage{
		"ints": {docs: []map[string]any{ints}, keys: []string{key}},
		"odd":  {docs: []map[string]any{odd}, keys: []string{key}},
	}}
	set := compileVerify(t, f.fakeVerifier, manifestsPolicy(manifestKeys("", key)), engine.WithImageVerifier(f))
	got := manifestResults(t, set, &engine.Request{Operation: api.Create, Object: signedDeployment(2, "nginx:1.27", "ints")})
	if len(got) != 1 || !strings.HasPrefix(got[0], "pass: ") {
		t.Errorf("int64 replicas: %v", got)
	}
	got = manifestResults(t, set, &engine.Request{Operation: api.Create, Object: signedDeployment(2, "nginx:1.27", "odd")})
	if len(got) != 1 || !strings.HasPrefix(got[0], `fail: manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: failed to verify signature. diff found; {"items":[{"key":"spec.ch","values":{"after":null,"before":"0x`) {
		t.Errorf("channel in a manifest: %v", got)
	}
}

func TestValidateManifestsNotConfigured(t *testing.T) {
	key := pemKey(t)
	set := compileVerify(t, newFake(), manifestsPolicy(manifestKeys("", key)))
	resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: signedDeployment(2, "nginx", "web")})
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Policies[0].Rules[0]
	if r.Status != engine.StatusError || !errors.Is(r.Err, engine.ErrNotConfigured) ||
		r.Message != "error occurred during manifest verification: no manifest verifier (an ImageVerifier that implements engine.ManifestVerifier): not configured" {
		t.Errorf("result = %+v", r)
	}
}

// dryRunCluster is an in-memory cluster whose dry-run creation applies a
// default as an API server would.
type dryRunCluster struct {
	*inmem.Cluster
	namespaces []string
}

func (c *dryRunCluster) DryRunCreate(ctx context.Context, obj map[string]any) (map[string]any, error) {
	out := maps.Clone(obj)
	meta := maps.Clone(obj["metadata"].(map[string]any))
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	c.namespaces = append(c.namespaces, ns+"/"+name)
	meta["uid"] = "dry"
	out["metadata"] = meta
	spec := maps.Clone(out["spec"].(map[string]any))
	spec["minReadySeconds"] = float64(0)
	if names, ok := spec["names"].(map[string]any); ok {
		c.namespaces = append(c.namespaces, fmt.Sprint(names["kind"], " ", names["plural"]))
	}
	out["spec"] = spec
	return out, nil
}

func TestValidateManifestsDryRun(t *testing.T) {
	key := pemKey(t)
	f := &fakeManifests{fakeVerifier: newFake(), messages: map[string]signedMessage{"web": {docs: []map[string]any{webDeployment(2, "nginx:1.27")}, keys: []string{key}}}}
	defaulted := signedDeployment(2, "nginx:1.27", "web")
	defaulted["spec"].(map[string]any)["minReadySeconds"] = float64(0)
	const direct = `fail: manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: failed to verify signature. diff found; {"items":[{"key":"spec.minReadySeconds","values":{"after":0,"before":null}}]}`
	tests := []struct {
		name   string
		body   string
		client engine.Client
		obj    map[string]any
		want   string
		ns     []string
	}{
		{"disabled", manifestKeys("", key), nil, defaulted, direct, nil},
		{"no dry-run client", "        dryRun:\n          enable: true\n" + manifestKeys("", key), inmem.New(),
			defaulted, "error: error occurred during manifest verification: .attestors[0].entries[0].keys: error occurred during dryrun create match: dryRun needs a Client that implements engine.DryRunCreator: not configured", nil},
		{"defaults applied", "        dryRun:\n          enable: true\n          namespace: dry\n" + manifestKeys("", key), &dryRunCluster{Cluster: inmem.New()},
			defaulted, "pass: verified manifest signatures; manifest verification succeeded; verifiedCount 1; requiredCount 1; message singed by a valid signer: ", []string{"dry/web-dry-run"}},
		{"changed beyond defaults", "        dryRun:\n          enable: true\n" + manifestKeys("", key), &dryRunCluster{Cluster: inmem.New()},
			func() map[string]any {
				d := signedDeployment(3, "nginx:1.27", "web")
				d["spec"].(map[string]any)["minReadySeconds"] = float64(0)
				return d
			}(),
			`fail: manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: failed to verify signature. diff found; {"items":[{"key":"spec.replicas","values":{"after":3,"before":2}}]}`, []string{"kyverno-dryrun/web-dry-run"}},
		{"kyverno namespace: no dry run", "        dryRun:\n          enable: true\n          namespace: kyverno\n" + manifestKeys("", key), &dryRunCluster{Cluster: inmem.New()},
			defaulted, direct, nil},
	}
	crd := func(extra bool) map[string]any {
		d := map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "widgets.example.com"},
			"spec":     map[string]any{"group": "example.com", "names": map[string]any{"kind": "Widget", "plural": "widgets"}}}
		if extra {
			d["metadata"].(map[string]any)["annotations"] = map[string]any{"cosign.sigstore.dev/message": "crd", "cosign.sigstore.dev/signature": "MEUCIQ"}
			d["spec"].(map[string]any)["minReadySeconds"] = float64(0)
		}
		return d
	}
	f.messages["crd"] = signedMessage{docs: []map[string]any{crd(false)}, keys: []string{key}}
	tests = append(tests, struct {
		name   string
		body   string
		client engine.Client
		obj    map[string]any
		want   string
		ns     []string
	}{"cluster-scoped CRD", strings.Replace(manifestsPolicy("        dryRun:\n          enable: true\n"+manifestKeys("", key)), "kinds: [Deployment]", "kinds: [CustomResourceDefinition]", 1),
		&dryRunCluster{Cluster: inmem.New()}, crd(true),
		"pass: verified manifest signatures; manifest verification succeeded; verifiedCount 1; requiredCount 1; message singed by a valid signer: ",
		[]string{"/simwidgets.example.com", "SimWidget simwidgets"}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := []engine.Option{engine.WithImageVerifier(f)}
			if tt.client != nil {
				opts = append(opts, engine.WithClient(tt.client))
			}
			policy := tt.body
			if !strings.HasPrefix(policy, "apiVersion") {
				policy = manifestsPolicy(policy)
			}
			set := compileVerify(t, f.fakeVerifier, policy, opts...)
			got := manifestResults(t, set, &engine.Request{Operation: api.Create, Object: tt.obj})
			if strings.Join(got, "\n") != tt.want {
				t.Errorf("results:\n%s\nwant:\n%s", strings.Join(got, "\n"), tt.want)
			}
			if c, ok := tt.client.(*dryRunCluster); ok && strings.Join(c.namespaces, ",") != strings.Join(tt.ns, ",") {
				t.Errorf("dry runs in %v, want %v", c.namespaces, tt.ns)
			}
		})
	}
}

func TestValidateManifestsCompileErrors(t *testing.T) {
	key := pemKey(t)
	tests := []struct{ name, body, want string }{
		{"bad PEM key", manifestKeys("", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"),
			"spec.rules[0].validate.manifests.attestors[0].entries[0].keys.publicKeys: Invalid value: \"\": invalid public key"},
		{"not PEM", manifestKeys("", "just text"), "spec.rules[0].validate.manifests.attestors[0].entries[0].keys.publicKeys: Invalid value: \"\": invalid PEM"},
		{"bad certificate", "        attestors:\n        - entries:\n          - certificates:\n              cert: |-\n                -----BEGIN CERTIFICATE-----\n                AAAA\n                -----END CERTIFICATE-----\n",
			"spec.rules[0].validate.manifests.attestors[0].entries[0].certificates.cert: Invalid value: \"\": invalid certificate"},
		{"bad roots", "        attestors:\n        - entries:\n          - keyless:\n              roots: nope\n", "keyless.roots: Invalid value: \"\": invalid PEM"},
		{"bad subject regexp", "        attestors:\n        - entries:\n          - keyless:\n              subjectRegExp: \"(\"\n              rekor:\n                url: https://rekor.test\n", "keyless.subjectRegExp: Invalid value: \"(\""},
		{"bad ignored field", manifestKeys("", key) + "        ignoreFields:\n        - fields: [\"spec.(\"]\n", "spec.rules[0].validate.manifests.ignoreFields[0].fields: Invalid value"},
		{"count over entries", manifestKeys("count: 2\n          ", key), "manifests.attestors[0].count: Invalid value: 2: Count cannot exceed length of entries"},
		{"no attestors", "        annotationDomain: x\n", "spec.rules[0].validate.manifests.attestors: Required value"},
		{"no attestor kind", "        attestors:\n        - entries:\n          - repository: x\n", "keys, certificates, keyless, or a nested attestor is required"},
		{"unknown field", manifestKeys("", key) + "        dryRun:\n          enabled: true\n", `unknown field "enabled"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s strings.Builder
			set, err := func() (*engine.PolicySet, error) {
				eng, err := engine.New()
				if err != nil {
					return nil, err
				}
				docs, err := api.ReadDocuments(strings.NewReader(manifestsPolicy(tt.body)), "p.yaml")
				if err != nil {
					return nil, err
				}
				p, err := api.DecodePolicy(docs[0])
				if err != nil {
					return nil, err
				}
				return eng.Compile(p)
			}()
			if err != nil {
				s.WriteString(err.Error())
			}
			if set != nil || !strings.Contains(s.String(), tt.want) || (tt.name != "unknown field" && !strings.Contains(s.String(), "signed")) {
				t.Errorf("err = %v, want %q naming the policy", err, tt.want)
			}
		})
	}
	// key references are the verifier's to resolve
	for _, ref := range []string{"k8s://kyverno/cosign-key", "awskms://alias/signer"} {
		compileVerify(t, newFake(), manifestsPolicy(manifestKeys("", ref)))
	}
}

// BenchmarkValidateManifests: one signed Deployment against its manifest
// (the host's answer is a table lookup): matching, flattening, the
// comparison and the ignored fields.
func BenchmarkValidateManifests(b *testing.B) {
	key := pemKey(b)
	f := &fakeManifests{fakeVerifier: newFake(), messages: map[string]signedMessage{"web": {docs: []map[string]any{webDeployment(2, "nginx:1.27")}, keys: []string{key}}}}
	set := compileVerify(b, f.fakeVerifier, manifestsPolicy(manifestKeys("", key)+replicasIgnored), engine.WithImageVerifier(f))
	req := &engine.Request{Operation: api.Create, Object: signedDeployment(3, "nginx:1.27", "web")}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := set.Validate(context.Background(), req)
		if err != nil || resp.Policies[0].Rules[0].Status != engine.StatusPass {
			b.Fatal(err, resp.Policies[0].Rules[0])
		}
		f.mu.Lock()
		f.requests = f.requests[:0]
		f.mu.Unlock()
	}
}
