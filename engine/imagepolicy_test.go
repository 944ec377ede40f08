package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

const (
	ivDigestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	ivDigestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func TestImageValidatingPolicySignatures(t *testing.T) {
	keyA, keyB := testPublicKey(t), testPublicKey(t)
	f := newIVFake()
	f.digests["ghcr.io/acme/app:v1"] = ivDigestA
	f.digests["ghcr.io/acme/other:v1"] = ivDigestB
	f.sign("ghcr.io/acme/app@"+ivDigestA, keyA)
	f.sign("ghcr.io/acme/other@"+ivDigestB, keyB)
	verify := func(config string) string {
		return `  validationConfigurations:
` + config + `
  matchImageReferences:
  - glob: ghcr.io/acme/*
  attestors:
` + keyAttestor("cosign", keyA) + `  validations:
  - expression: images.containers.map(i, verifyImageSignatures(i, [attestors.cosign])).all(n, n > 0)
    message: failed the image signature verification
`
	}
	tests := []struct {
		name, config string
		images       []string
		want         string
	}{
		{"signed by digest", "", []string{"ghcr.io/acme/app@" + ivDigestA}, "p p pass: success"},
		{"signed, tag needs a digest", "", []string{"ghcr.io/acme/app:v1"}, "p p fail: image ghcr.io/acme/app:v1 does not have a digest"},
		{"signed by tag, verifyDigest off", "    verifyDigest: false", []string{"ghcr.io/acme/app:v1"}, "p p pass: success"},
		{"signed by another key", "    verifyDigest: false", []string{"ghcr.io/acme/other:v1"}, "p p fail: failed the image signature verification"},
		{"image not selected", "", []string{"docker.io/nginx:latest"}, "p p pass: success"},
		{"one of two unsigned", "    verifyDigest: false", []string{"ghcr.io/acme/app:v1", "ghcr.io/acme/other:v1"}, "p p fail: failed the image signature verification"},
		{"unknown tag", "    verifyDigest: false", []string{"ghcr.io/acme/missing:v1"},
			"p evaluation error: failed to evaluate policy: failed to get imagedata: ghcr.io/acme/missing:v1: MANIFEST_UNKNOWN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compileIV(t, f, ivpol("p", verify(tt.config)))
			resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod(tt.images...)})
			if err != nil {
				t.Fatal(err)
			}
			if got := results(resp); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestImageValidatingPolicyCompileErrors(t *testing.T) {
	tests := []struct{ name, fields, want string }{
		{"bad key", "  attestors:\n  - name: a\n    cosign:\n      key:\n        data: nope\n  validations:\n  - expression: 'true'\n",
			"spec.attestors[0].cosign.key.data: Invalid value: \"\": no PEM public key found"},
		{"two kinds", "  attestors:\n  - name: a\n    cosign:\n      key:\n        kms: k\n    notary:\n      certs:\n        expression: 'x'\n  validations:\n  - expression: 'true'\n",
			"spec.attestors[0]: Invalid value: \"\": only one of cosign and notary may be set"},
		{"unknown function", "  validations:\n  - expression: verifyImageSignature('x', [])\n",
			"undeclared reference to 'verifyImageSignature'"},
		{"wrong arity", "  validations:\n  - expression: verifyImageSignatures('x') > 0\n",
			"found no matching overload for 'verifyImageSignatures'"},
		{"bad glob", "  matchImageReferences:\n  - glob: 'ghcr.io/[a'\n  validations:\n  - expression: 'true'\n",
			"spec.matchImageReferences[0].glob: Invalid value: \"ghcr.io/[a\": unclosed '['"},
		{"attestation without type", "  attestations:\n  - name: sbom\n    referrer: {type: ''}\n  validations:\n  - expression: 'true'\n",
			"spec.attestations[0].referrer.type: Required value"},
	}
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := eng.Compile(decode(ivpol("p", tt.fields)).Policies...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestImageValidatingPolicyMutateDigest(t *testing.T) {
	key := testPublicKey(t)
	f := newIVFake()
	f.digests["ghcr.io/acme/app:v1"] = ivDigestA
	f.digests["ghcr.io/acme/other:v1"] = ivDigestB
	fields := func(config string) string {
		return "  validationConfigurations:\n" + config + "\n  matchImageReferences:\n  - glob: 'ghcr.io/acme/*'\n  attestors:\n" + keyAttestor("cosign", key) +
			"  validations:\n  - expression: 'true'\n"
	}
	tests := []struct {
		name, config string
		opts         []engine.Option
		images       []string
		bg           bool
		want         []string
		results      string
	}{
		{"pins selected images", "    mutateDigest: true", nil, []string{"ghcr.io/acme/app:v1", "docker.io/nginx:1.27", "ghcr.io/acme/other:v1"},
			false, []string{"ghcr.io/acme/app:v1@" + ivDigestA, "docker.io/nginx:1.27", "ghcr.io/acme/other:v1@" + ivDigestB}, ""},
		{"default is on", "    required: true", nil, []string{"ghcr.io/acme/app:v1"}, false, []string{"ghcr.io/acme/app:v1@" + ivDigestA}, ""},
		{"by digest already", "", nil, []string{"ghcr.io/acme/app@" + ivDigestB}, false, []string{"ghcr.io/acme/app@" + ivDigestB}, ""},
		{"off", "    mutateDigest: false", nil, []string{"ghcr.io/acme/app:v1"}, false, []string{"ghcr.io/acme/app:v1"}, ""},
		{"engine option off", "", []engine.Option{engine.WithImagePolicyMutation(false)}, []string{"ghcr.io/acme/app:v1"}, false, []string{"ghcr.io/acme/app:v1"}, ""},
		{"background", "", nil, []string{"ghcr.io/acme/app:v1"}, true, []string{"ghcr.io/acme/app:v1"}, ""},
		{"unknown image keeps the others' pins", "", nil, []string{"ghcr.io/acme/missing:v1", "ghcr.io/acme/app:v1"}, false,
			[]string{"ghcr.io/acme/missing:v1", "ghcr.io/acme/app:v1@" + ivDigestA},
			"p mutateDigest error: failed to update digest: failed to resolve digest for image ghcr.io/acme/missing:v1: ghcr.io/acme/missing:v1: MANIFEST_UNKNOWN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compileIV(t, f, ivpol("p", fields(tt.config)), tt.opts...)
			resp, err := set.Mutate(context.Background(), &engine.Request{Operation: api.Create, Object: pod(tt.images...), Background: tt.bg})
			if err != nil {
				t.Fatal(err)
			}
			cs := resp.Resource["spec"].(map[string]any)["containers"].([]any)
			for i, c := range cs {
				if got := c.(map[string]any)["image"]; got != tt.want[i] {
					t.Errorf("container %d: got %v, want %s", i, got, tt.want[i])
				}
			}
			if got := results(resp); got != tt.results {
				t.Errorf("results:\n%s\nwant\n%s", got, tt.results)
			}
			if (resp.Patch == nil) != (tt.want[0] == tt.images[0] && tt.want[len(tt.want)-1] == tt.images[len(tt.images)-1]) {
				t.Errorf("patch %s", resp.Patch)
			}
		})
	}
}

// TestImageValidatingPolicyEvaluation runs sets of policies through
// Validate, on the fake's images: attestations and their payloads,
// required across policies, exceptions, variables in attestors, keyless
// identities, Notary, matchImageReferences expressions, Pod controllers.
func TestImageValidatingPolicyEvaluation(t *testing.T) {
	key, other := testPublicKey(t), testPublicKey(t)
	app, unsigned := "ghcr.io/acme/app@"+ivDigestA, "ghcr.io/acme/unsigned@"+ivDigestB
	f := newIVFake()
	f.sign(app, key)
	f.sign(app, "https://token.actions.githubusercontent.com https://github.com/acme/app/.github/workflows/release.yaml@refs/heads/main")
	f.sign(app, "notary-cert")
	f.attest(app, key, "https://slsa.dev/provenance/v1", map[string]any{"predicateType": "https://slsa.dev/provenance/v1", "predicate": map[string]any{"builder": map[string]any{"id": "gh"}}})
	f.attest(app, "notary-cert", "sbom/cyclone-dx", map[string]any{"bomFormat": "CycloneDX"})
	const sigs = "images.containers.map(i, verifyImageSignatures(i, [attestors.a])).all(n, n > 0)"
	withKey := keyAttestor("a", key)
	tests := []struct {
		name     string
		policies []string
		obj      map[string]any
		want     string
	}{
		{"attestation and payload", []string{ivpol("p", "  attestors:\n"+withKey+"  attestations:\n  - name: prov\n    intoto: {type: 'https://slsa.dev/provenance/v1'}\n"+
			"  validations:\n  - expression: images.containers.all(i, verifyAttestationSignatures(i, attestations.prov, [attestors.a]) > 0)\n"+
			"  - expression: images.containers.all(i, extractPayload(i, attestations.prov).predicate.builder.id == 'gh')\n    message: built elsewhere\n")},
			pod(app), "p p pass: success"},
		{"payload before verification", []string{ivpol("p", "  attestors:\n"+withKey+"  attestations:\n  - name: prov\n    intoto: {type: 'https://slsa.dev/provenance/v1'}\n"+
			"  validations:\n  - expression: images.containers.all(i, extractPayload(i, attestations.prov).predicate.builder.id == 'gh')\n")},
			pod(app), "p evaluation error: failed to evaluate policy: failed to get payload: intoto attestation payload cannot be fetch before verifying intoto attestation"},
		{"unknown attestation", []string{ivpol("p", "  attestors:\n"+withKey+
			"  validations:\n  - expression: images.containers.all(i, verifyAttestationSignatures(i, 'sbom', [attestors.a]) > 0)\n")},
			pod(app), "p evaluation error: failed to evaluate policy: attestation not found in policy: sbom"},
		{"required: verified by another policy", []string{
			ivpol("checks", "  validations:\n  - expression: images.containers.size() == 1\n"),
			ivpol("verifies", "  attestors:\n"+withKey+"  validations:\n  - expression: "+sigs+"\n")},
			pod(app), "checks checks pass: success\nverifies verifies pass: success"},
		{"required: never verified", []string{ivpol("checks", "  validations:\n  - expression: images.containers.size() == 1\n")},
			pod(app), "checks checks fail: image " + app + " is not verified: no policy performed a signature or attestation check on it"},
		{"required: verification failed", []string{ivpol("p", "  attestors:\n"+withKey+"  validations:\n  - expression: images.containers.map(i, verifyImageSignatures(i, [attestors.a])).size() == 1\n")},
			pod(unsigned), "p p fail: image " + unsigned + " failed signature or attestation verification"},
		{"required off", []string{ivpol("checks", "  validationConfigurations: {required: false}\n  validations:\n  - expression: images.containers.size() == 1\n")},
			pod(app), "checks checks pass: success"},
		{"key from a variable", []string{ivpol("p", "  variables:\n  - name: key\n    expression: \"'"+strings.ReplaceAll(key, "\n", "\\\\n")+"'\"\n"+
			"  attestors:\n  - name: a\n    cosign:\n      key:\n        expression: variables.key\n  validations:\n  - expression: "+sigs+"\n")},
			pod(app), "p p pass: success"},
		{"attestor expression not a string", []string{ivpol("p", "  attestors:\n  - name: a\n    cosign:\n      key:\n        expression: 'dyn(1)'\n  validations:\n  - expression: "+sigs+"\n")},
			pod(app), "p evaluation error: failed to evaluate policy: failed to convert expression in compiled attestor: a, error: type conversion error from 'int' to 'string'"},
		{"keyless, second identity", []string{ivpol("p", "  attestors:\n  - name: a\n    cosign:\n      keyless:\n        identities:\n"+
			"        - {issuer: 'https://accounts.google.com', subject: 'me@acme.io'}\n"+
			"        - {issuer: 'https://token.actions.githubusercontent.com', subject: 'https://github.com/acme/app/.github/workflows/release.yaml@refs/heads/main'}\n"+
			"  validations:\n  - expression: "+sigs+"\n")},
			pod(app), "p p pass: success"},
		{"two attestors, one signed", []string{ivpol("p", "  attestors:\n"+withKey+keyAttestor("b", other)+
			"  validations:\n  - expression: images.containers.all(i, verifyImageSignatures(i, [attestors.a, attestors.b]) == 1)\n")},
			pod(app), "p p pass: success"},
		{"notary referrer", []string{ivpol("p", "  attestors:\n  - name: a\n    notary:\n      certs:\n        expression: \"'notary-cert'\"\n"+
			"  attestations:\n  - name: sbom\n    referrer: {type: sbom/cyclone-dx}\n"+
			"  validations:\n  - expression: images.containers.all(i, verifyAttestationSignatures(i, attestations.sbom, [attestors.a]) > 0 && extractPayload(i, attestations.sbom).bomFormat == 'CycloneDX')\n")},
			pod(app), "p p pass: success"},
		{"notary in-toto", []string{ivpol("p", "  attestors:\n  - name: a\n    notary:\n      certs:\n        expression: \"'notary-cert'\"\n"+
			"  attestations:\n  - name: prov\n    intoto: {type: x}\n"+
			"  validations:\n  - expression: images.containers.all(i, verifyAttestationSignatures(i, attestations.prov, [attestors.a]) > 0)\n")},
			pod(app), "p evaluation error: failed to evaluate policy: notary verifier only supports oci 1.1 referrers as attestations"},
		{"matchImageReferences expression", []string{ivpol("p", "  matchImageReferences:\n  - expression: image(ref).registry() == 'docker.io'\n"+
			"  validations:\n  - expression: images.containers.size() == 0\n    message: selected\n")},
			pod(app), "p p pass: success"},
		{"deployment (autogen)", []string{ivpol("p", "  attestors:\n"+withKey+"  validations:\n  - expression: "+sigs+"\n  - expression: object.spec.template.spec.containers.size() == 1\n")},
			podDeployment(unsigned), "p p fail: CEL expression validation failed at index 0"},
		{"messageExpression", []string{ivpol("p", "  attestors:\n"+withKey+"  validations:\n  - expression: "+sigs+"\n    messageExpression: \"'unsigned: ' + images.containers[0]\"\n")},
			pod(unsigned), "p p fail: unsigned: " + unsigned},
		{"default message", []string{ivpol("p", "  validations:\n  - expression: 'true'\n  - expression: 'false'\n")},
			pod(app), "p p fail: CEL expression validation failed at index 1"},
		{"matchConditions", []string{ivpol("p", "  matchConditions:\n  - name: prod\n    expression: \"has(object.metadata.labels) && object.metadata.labels.env == 'prod'\"\n  validations:\n  - expression: 'false'\n")},
			pod(app), ""},
		{"audit annotations", []string{ivpol("p", "  validations:\n  - expression: 'false'\n  auditAnnotations:\n  - key: images\n    valueExpression: string(size(images.containers))\n")},
			pod(app), "p p fail: CEL expression validation failed at index 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compileIV(t, f, strings.Join(tt.policies, "---\n"))
			resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: tt.obj})
			if err != nil {
				t.Fatal(err)
			}
			if got := results(resp); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func podDeployment(images ...string) map[string]any {
	p := pod(images...)
	return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "d", "namespace": "default"},
		"spec":     map[string]any{"template": map[string]any{"metadata": map[string]any{}, "spec": p["spec"]}}}
}

// TestImageValidatingPolicyCache checks that verifications are cached by
// digest and attestor across requests (and resolutions by tag), and that
// concurrent requests are answered right (run with -race).
func TestImageValidatingPolicyCache(t *testing.T) {
	key := testPublicKey(t)
	f := newIVFake()
	f.digests["ghcr.io/acme/app:v1"] = ivDigestA
	f.sign("ghcr.io/acme/app@"+ivDigestA, key)
	set := compileIV(t, f, ivpol("p", "  validationConfigurations: {verifyDigest: false}\n  attestors:\n"+keyAttestor("a", key)+
		"  validations:\n  - expression: images.containers.all(i, verifyImageSignatures(i, [attestors.a]) == 1)\n"))
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod("ghcr.io/acme/app:v1", "ghcr.io/acme/app@"+ivDigestA)})
				if err != nil {
					t.Error(err)
					return
				}
				if got := results(resp); got != "p p pass: success" {
					t.Errorf("got %s", got)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := f.verifies.Load(); n != 1 {
		t.Errorf("%d verifications, want 1", n)
	}
	if n := f.resolves.Load(); n != 1 {
		t.Errorf("%d resolutions, want 1", n)
	}
	// another key is another verification
	other := testPublicKey(t)
	set2 := compileIV(t, f, ivpol("p", "  validationConfigurations: {verifyDigest: false}\n  attestors:\n"+keyAttestor("a", other)+
		"  validations:\n  - expression: images.containers.all(i, verifyImageSignatures(i, [attestors.a]) == 1)\n    message: unsigned\n"))
	resp, err := set2.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod("ghcr.io/acme/app:v1")})
	if err != nil {
		t.Fatal(err)
	}
	if got := results(resp); got != "p p fail: unsigned" {
		t.Errorf("got %s", got)
	}
	if n := f.verifies.Load(); n != 2 {
		t.Errorf("%d verifications, want 2", n)
	}
}

// TestImageValidatingPolicyNoVerifier checks the errors without a
// verifier, or with one that does not verify these policies' attestors.
func TestImageValidatingPolicyNoVerifier(t *testing.T) {
	key := testPublicKey(t)
	policy := ivpol("p", "  attestors:\n"+keyAttestor("a", key)+"  validations:\n  - expression: images.containers.all(i, verifyImageSignatures(i, [attestors.a]) == 1)\n")
	for _, tt := range []struct {
		name string
		opts []engine.Option
		want string
	}{
		{"none", nil, "no image verifier (engine.WithImageVerifier)"},
		{"classic only", []engine.Option{engine.WithImageVerifier(newFake())}, "the image verifier does not verify ImageValidatingPolicy attestors (engine.ImagePolicyVerifier)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			eng, err := engine.New(tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			set, err := eng.Compile(decode(policy).Policies...)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod("ghcr.io/acme/app@" + ivDigestA)})
			if err != nil {
				t.Fatal(err)
			}
			r := resp.Policies[0].Rules[0]
			if r.Status != engine.StatusError || !strings.Contains(r.Message, tt.want) || !errors.Is(r.Err, engine.ErrNotConfigured) {
				t.Errorf("got %s: %s (%v)", r.Status, r.Message, r.Err)
			}
		})
	}
}

// TestImageValidatingPolicyCredentials checks that the policy's
// credentials reach the verifier with each request, and that the
// attestor it gets has its expressions evaluated.
func TestImageValidatingPolicyCredentials(t *testing.T) {
	key := testPublicKey(t)
	f := newIVFake()
	image := "ghcr.io/acme/app@" + ivDigestA
	f.sign(image, key)
	set := compileIV(t, f, ivpol("p", "  credentials:\n    allowInsecureRegistry: true\n    providers: [github]\n    secrets: [regcred]\n"+
		"  variables:\n  - name: key\n    expression: \"'"+strings.ReplaceAll(key, "\n", "\\\\n")+"'\"\n"+
		"  attestors:\n  - name: a\n    cosign:\n      key:\n        expression: variables.key\n"+
		"  validations:\n  - expression: images.containers.all(i, verifyImageSignatures(i, [attestors.a]) > 0)\n"))
	resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod(image)})
	if err != nil {
		t.Fatal(err)
	}
	if got := results(resp); got != "p p pass: success" {
		t.Fatalf("got %s", got)
	}
	if len(f.requests) != 1 {
		t.Fatalf("%d requests", len(f.requests))
	}
	r := f.requests[0]
	if c := r.Credentials; c == nil || !c.AllowInsecureRegistry || len(c.Providers) != 1 || c.Providers[0] != "github" || len(c.Secrets) != 1 || c.Secrets[0] != "regcred" {
		t.Errorf("credentials %+v", r.Credentials)
	}
	if k := r.Attestor.Cosign.Key; k.Expression != "" || strings.TrimSpace(k.Data) != key {
		t.Errorf("attestor key %+v", k)
	}
	if r.Image != image {
		t.Errorf("image %s", r.Image)
	}
}
