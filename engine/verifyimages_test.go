package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
)

// fakeVerifier is an ImageVerifier over a table: digests by reference,
// signer keys by image (by digest), statements by image and key. A key is
// the text of publicKeys.
type fakeVerifier struct {
	mu         sync.Mutex
	digests    map[string]string
	signatures map[string][]string
	statements map[string]map[string][]map[string]any
	down       bool
	delay      time.Duration
	// block, when set, holds VerifySignature until it is closed or the
	// call's context ends; entered receives a token per call
	block   chan struct{}
	entered chan struct{}
	// pullSecrets are those of each VerifySignature call
	pullSecrets [][]string

	resolves, verifies, fetches atomic.Int64
}

func newFake() *fakeVerifier {
	return &fakeVerifier{digests: map[string]string{}, signatures: map[string][]string{}, statements: map[string]map[string][]map[string]any{}}
}

const (
	digestApp   = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	digestOther = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	// ECDSA P-256 public keys (the fake compares their text; the engine
	// checks at Compile that they parse)
	keyA = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEFhKunelBZgBkqVymHhqzkX5tk2CS\nutLhdC5iwilcRLBCs5YgqQRS47gHebUv0mBotgyrwxoo2WXzheGc5iUSTw==\n-----END PUBLIC KEY-----"
	keyB = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEg4Ho4P+1JDJA7gOwSSI+3PGcvxSo\n6/cNKO1lNdfUdgdVUF6MFj5bFROHeeofmQmtmAtYzgrq20FUeDItpbTOkQ==\n-----END PUBLIC KEY-----"
)

func (f *fakeVerifier) ResolveDigest(ctx context.Context, req engine.ImageVerifyRequest) (string, error) {
	image := req.Image
	f.resolves.Add(1)
	if f.down {
		return "", fmt.Errorf("dial tcp: connection refused: %w", engine.ErrRegistryUnavailable)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.digests[image]
	if !ok {
		return "", fmt.Errorf("%s: MANIFEST_UNKNOWN", image)
	}
	return d, nil
}

func (f *fakeVerifier) VerifySignature(ctx context.Context, req engine.ImageVerifyRequest) error {
	f.verifies.Add(1)
	f.mu.Lock()
	f.pullSecrets = append(f.pullSecrets, req.PullSecrets)
	f.mu.Unlock()
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	if f.block != nil {
		f.entered <- struct{}{}
		select {
		case <-f.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f.down {
		return fmt.Errorf("dial tcp: connection refused: %w", engine.ErrRegistryUnavailable)
	}
	if req.Attestor.Keys == nil {
		return errors.New("only keys in the fake")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	sigs := f.signatures[req.Image]
	if len(sigs) == 0 {
		return errors.New("no signatures found")
	}
	for _, k := range sigs {
		if strings.TrimSpace(k) == strings.TrimSpace(req.Attestor.Keys.PublicKeys) {
			return nil
		}
	}
	return errors.New("invalid signature")
}

func (f *fakeVerifier) FetchAttestations(ctx context.Context, req engine.ImageVerifyRequest) ([]map[string]any, error) {
	f.fetches.Add(1)
	if f.down {
		return nil, fmt.Errorf("dial tcp: connection refused: %w", engine.ErrRegistryUnavailable)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	byKey := f.statements[req.Image]
	if len(byKey) == 0 {
		return nil, errors.New("no attestations found")
	}
	var out []map[string]any
	for k, list := range byKey {
		if req.Attestor.Keys != nil && strings.TrimSpace(k) == strings.TrimSpace(req.Attestor.Keys.PublicKeys) {
			for _, s := range list {
				if s["predicateType"] == req.PredicateType {
					out = append(out, s)
				}
			}
		}
	}
	if out == nil {
		return nil, errors.New("no matching attestations")
	}
	return out, nil
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// verifyPolicy builds a policy with one verifyImages entry (YAML at the
// indentation of the entry's fields).
func verifyPolicy(name, spec, entry string) string {
	return `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: ` + name + `
spec:
` + spec + `
  rules:
  - name: check
    match:
      any:
      - resources:
          kinds: [Pod]
    verifyImages:
    - imageReferences: ["registry.test/*"]
` + entry
}

func keysEntry(count string, keys ...string) string {
	s := "      attestors:\n      - " + count + "entries:\n"
	for _, k := range keys {
		s += "        - keys:\n            publicKeys: |-\n" + indent(k, "              ") + "\n"
	}
	return s
}

func pod(images ...string) map[string]any {
	var cs []any
	for i, img := range images {
		cs = append(cs, map[string]any{"name": fmt.Sprintf("c%d", i), "image": img})
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "namespace": "default"},
		"spec":     map[string]any{"containers": cs}}
}

func compileVerify(t testing.TB, f *fakeVerifier, policy string, opts ...engine.Option) *engine.PolicySet {
	t.Helper()
	eng, err := engine.New(append([]engine.Option{engine.WithImageVerifier(f)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(decode(policy).Policies...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func mutateRules(t testing.TB, set *engine.PolicySet, obj map[string]any) (*engine.Response, []engine.RuleResult) {
	t.Helper()
	resp, err := set.Mutate(context.Background(), &engine.Request{Operation: api.Create, Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	var out []engine.RuleResult
	for _, p := range resp.Policies {
		out = append(out, p.Rules...)
	}
	return resp, out
}

func validateRules(t testing.TB, set *engine.PolicySet, obj map[string]any) []engine.RuleResult {
	t.Helper()
	resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	var out []engine.RuleResult
	for _, p := range resp.Policies {
		out = append(out, p.Rules...)
	}
	return out
}

func signedFake() *fakeVerifier {
	f := newFake()
	f.digests["registry.test/app:v1"] = digestApp
	f.digests["registry.test/other:v1"] = digestOther
	f.digests["registry.test/unsigned:v1"] = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
	f.signatures["registry.test/app@"+digestApp] = []string{keyA}
	f.signatures["registry.test/other@"+digestOther] = []string{keyB}
	return f
}

func wantResults(t *testing.T, got []engine.RuleResult, want ...string) {
	t.Helper()
	var lines []string
	for _, r := range got {
		if r.Type != engine.ImageVerify {
			t.Errorf("result %s has type %s", r.Name, r.Type)
		}
		lines = append(lines, string(r.Status)+": "+r.Message)
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("results:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestVerifyImagesSignatures(t *testing.T) {
	tests := []struct {
		name  string
		entry string
		image string
		want  string
	}{
		{"signed", keysEntry("", keyA), "registry.test/app:v1", "pass: verified image signatures for registry.test/app:v1"},
		{"unsigned", keysEntry("", keyA), "registry.test/unsigned:v1", "fail: failed to verify image registry.test/unsigned:v1: .attestors[0].entries[0].keys: no signatures found"},
		{"unknown image", keysEntry("", keyA), "registry.test/missing:v1", "fail: failed to verify image registry.test/missing:v1: registry.test/missing:v1: MANIFEST_UNKNOWN"},
		{"wrong key", keysEntry("", keyB), "registry.test/app:v1", "fail: failed to verify image registry.test/app:v1: .attestors[0].entries[0].keys: invalid signature"},
		{"count 1 of 2", keysEntry("count: 1\n        ", keyB, keyA), "registry.test/app:v1", "pass: verified image signatures for registry.test/app:v1"},
		{"all of 2", keysEntry("", keyB, keyA), "registry.test/app:v1", "fail: failed to verify image registry.test/app:v1: .attestors[0].entries[0].keys: invalid signature"},
		{"several keys in one entry, count 1", keysEntry("count: 1\n        ", keyB+"\n"+keyA), "registry.test/app:v1", "pass: verified image signatures for registry.test/app:v1"},
		{"nested attestor", "      attestors:\n      - count: 1\n        entries:\n        - attestor:\n            entries:\n            - keys:\n                publicKeys: |-\n" + indent(keyA, "                  ") + "\n", "registry.test/app:v1", "pass: verified image signatures for registry.test/app:v1"},
		{"skipImageReferences", "      skipImageReferences: [\"registry.test/app*\"]\n" + keysEntry("", keyB), "registry.test/app:v1", ""},
		{"not matched", keysEntry("", keyB), "elsewhere.test/app:v1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compileVerify(t, signedFake(), verifyPolicy("p", "  validationFailureAction: Enforce", tt.entry))
			_, got := mutateRules(t, set, pod(tt.image))
			if tt.want == "" {
				wantResults(t, got)
				return
			}
			wantResults(t, got, tt.want)
		})
	}
}

func TestVerifyImagesDigestAndAnnotation(t *testing.T) {
	set := compileVerify(t, signedFake(), verifyPolicy("p", "  validationFailureAction: Enforce", keysEntry("", keyA)))
	resp, got := mutateRules(t, set, pod("registry.test/app:v1"))
	wantResults(t, got, "pass: verified image signatures for registry.test/app:v1")
	var ops []map[string]any
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"add","path":"/metadata/annotations","value":{"kyverno.io/verify-images":"{\"registry.test/app@` + digestApp + `\":\"pass\"}"}},` +
		`{"op":"replace","path":"/spec/containers/0/image","value":"registry.test/app:v1@` + digestApp + `"}]`
	if string(resp.Patch) != want {
		t.Errorf("patch:\n%s\nwant:\n%s", resp.Patch, want)
	}
	if resp.Blocked() {
		t.Error("blocked")
	}
	// validation of the mutated object: digest and annotation present
	wantResults(t, validateRules(t, set, resp.Resource), "pass: image verified")
	// without the mutation
	wantResults(t, validateRules(t, set, pod("registry.test/app:v1")), "fail: missing digest for registry.test/app:v1")
	wantResults(t, validateRules(t, set, pod("registry.test/app@"+digestApp)), "fail: image is not verified")
	forged := pod("registry.test/app@" + digestApp)
	forged["metadata"].(map[string]any)["annotations"] = map[string]any{engine.ImageVerifyAnnotation: `{"registry.test/app@` + digestApp + `":"fail"}`}
	wantResults(t, validateRules(t, set, forged), "fail: unverified image registry.test/app@"+digestApp)
}

func TestVerifyImagesFlags(t *testing.T) {
	f := signedFake()
	// mutateDigest false: no patch; verifyDigest false and required false:
	// validation has nothing to check
	set := compileVerify(t, f, verifyPolicy("p", "", "      mutateDigest: false\n      verifyDigest: false\n      required: false\n"+keysEntry("", keyA)))
	resp, got := mutateRules(t, set, pod("registry.test/app:v1"))
	wantResults(t, got, "pass: verified image signatures for registry.test/app:v1")
	if strings.Contains(string(resp.Patch), "containers") {
		t.Errorf("digest patched: %s", resp.Patch)
	}
	wantResults(t, validateRules(t, set, pod("registry.test/app:v1")), "pass: image verified")
	// mutateDigest alone, without attestors
	set = compileVerify(t, f, verifyPolicy("p", "", "      verifyDigest: true\n"))
	resp, got = mutateRules(t, set, pod("registry.test/app:v1"))
	wantResults(t, got, "pass: mutated image digest")
	if strings.Contains(string(resp.Patch), "verify-images") {
		t.Errorf("annotation without attestors: %s", resp.Patch)
	}
	wantResults(t, validateRules(t, set, resp.Resource), "pass: image verified")
}

func TestVerifyImagesAttestations(t *testing.T) {
	f := signedFake()
	f.statements["registry.test/app@"+digestApp] = map[string][]map[string]any{
		keyA: {{"_type": "https://in-toto.io/Statement/v0.1", "predicateType": "https://example.com/CodeReview/v1",
			"predicate": map[string]any{"author": "alice", "repo": map[string]any{"branch": "main"}, "reviewers": []any{"bob"}}}},
	}
	attest := func(key, cond string) string {
		return `      attestations:
      - predicateType: https://example.com/CodeReview/v1
        attestors:
        - entries:
          - keys:
              publicKeys: |-
` + indent(key, "                ") + `
        conditions:
        - all:
` + cond
	}
	holds := "          - key: '{{ repo.branch }}'\n            operator: Equals\n            value: main\n          - key: '{{ reviewers }}'\n            operator: AnyIn\n            value: [ana, bob]\n"
	fails := "          - key: '{{ repo.branch }}'\n            operator: Equals\n            value: release\n"
	image := "          - key: '{{ image.name }}'\n            operator: Equals\n            value: app\n"
	unknown := "          - key: '{{ missing.key }}'\n            operator: Equals\n            value: x\n"
	named := func(message, conds string) string {
		v := "      validate:\n"
		if message != "" {
			v += "        message: " + message + "\n"
		}
		v += "        deny:\n          conditions:\n" + conds
		return v + strings.Replace(attest(keyA, holds), "      - predicateType:", "      - name: review\n        predicateType:", 1)
	}
	tests := []struct{ name, entry, want string }{
		{"conditions hold", attest(keyA, holds), "pass: verified image attestations for registry.test/app:v1"},
		{"image variable", attest(keyA, image), "pass: verified image attestations for registry.test/app:v1"},
		{"conditions fail", attest(keyA, fails), "fail: image attestations verification failed, verifiedCount: 0, requiredCount: 1, error: .attestations[0].attestors[0].entries[0].keys: attestation checks failed for registry.test/app:v1 and predicate https://example.com/CodeReview/v1"},
		{"signed by another key", attest(keyB, holds), "fail: image attestations verification failed, verifiedCount: 0, requiredCount: 1, error: .attestations[0].attestors[0].entries[0].keys: no matching attestations"},
		{"count 1 of 2 attestors", strings.Replace(attest(keyB, holds), "        - entries:\n", "        - count: 1\n          entries:\n          - keys:\n              publicKeys: |-\n"+indent(keyA, "                ")+"\n", 1), "pass: verified image attestations for registry.test/app:v1"},
		{"named, validate deny holds", "      validate:\n        message: 'reviewed by {{ review.author }}, not allowed'\n        deny:\n          conditions:\n            any:\n            - key: '{{ review.author }}'\n              operator: Equals\n              value: alice\n" + strings.Replace(attest(keyA, holds), "      - predicateType:", "      - name: review\n        predicateType:", 1), "fail: validation in verifyImages failed: reviewed by alice, not allowed"},
		{"named, validate deny does not hold", "      validate:\n        deny:\n          conditions:\n            any:\n            - key: '{{ review.author }}'\n              operator: Equals\n              value: mallory\n" + strings.Replace(attest(keyA, holds), "      - predicateType:", "      - name: review\n        predicateType:", 1), "pass: verified image attestations for registry.test/app:v1"},
		{"signature and attestation", keysEntry("", keyA) + attest(keyA, holds), "pass: verified image attestations for registry.test/app:v1"},
		// attestation conditions are substituted all at once (upstream's
		// SubstituteAllInConditions): an unknown variable is an error even
		// after a condition that does not hold
		{"attestation conditions substituted eagerly", attest(keyA, fails+unknown), "fail: image attestations verification failed, verifiedCount: 0, requiredCount: 1, error: .attestations[0].attestors[0].entries[0].keys: failed to check attestations: failed to substitute variables in attestation conditions: failed to resolve missing.key at path /all/1/key: JMESPath query failed: Unknown key \"missing\" in path"},
		// validate.deny is lazy, its held conditions' messages follow the message
		{"named, validate deny lazy", named("'reviewed by {{ review.author }}'", "            any:\n            - key: '{{ review.author }}'\n              operator: Equals\n              value: alice\n              message: 'author {{ review.author }}'\n            - key: '{{ review.missing }}'\n              operator: Equals\n              value: x\n"), "fail: validation in verifyImages failed: reviewed by alice; author alice"},
		{"named, validate deny unresolved", named("x", "            all:\n            - key: '{{ review.missing }}'\n              operator: Equals\n              value: x\n"), "fail: validation in verifyImages failed: failed to check deny conditions: failed to substitute variables in condition key: failed to resolve review.missing at path /all/0/key: JMESPath query failed: Unknown key \"missing\" in path"},
		{"named, validate deny default message", named("", "            any:\n            - key: '{{ review.author }}'\n              operator: Equals\n              value: alice\n"), "fail: validation in verifyImages failed: validation error: imageVerify  failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compileVerify(t, f, verifyPolicy("p", "", tt.entry))
			_, got := mutateRules(t, set, pod("registry.test/app:v1"))
			wantResults(t, got, tt.want)
		})
	}
}

func TestVerifyImagesRegistryDown(t *testing.T) {
	f := signedFake()
	f.down = true
	set := compileVerify(t, f, verifyPolicy("p", "  validationFailureAction: Enforce", keysEntry("", keyA)))
	resp, got := mutateRules(t, set, pod("registry.test/app:v1"))
	wantResults(t, got, "error: failed to verify image registry.test/app:v1: dial tcp: connection refused: image registry unavailable")
	if !resp.Blocked() || !errors.Is(got[0].Err, engine.ErrRegistryUnavailable) {
		t.Errorf("blocked %v, err %v", resp.Blocked(), got[0].Err)
	}
	set = compileVerify(t, f, verifyPolicy("p", "  validationFailureAction: Enforce\n  webhookConfiguration:\n    failurePolicy: Ignore", keysEntry("", keyA)))
	resp, got = mutateRules(t, set, pod("registry.test/app:v1"))
	wantResults(t, got, "skip: failed to verify image registry.test/app:v1: dial tcp: connection refused: image registry unavailable (failurePolicy Ignore)")
	if resp.Blocked() {
		t.Error("blocked with failurePolicy Ignore")
	}
	// the image is let through at validation too (recorded as skipped);
	// verifyDigest still applies, so it is turned off here
	set = compileVerify(t, f, verifyPolicy("p", "  validationFailureAction: Enforce\n  webhookConfiguration:\n    failurePolicy: Ignore", "      verifyDigest: false\n"+keysEntry("", keyA)))
	resp, _ = mutateRules(t, set, pod("registry.test/app:v1"))
	wantResults(t, validateRules(t, set, resp.Resource), "skip: image skipped, skipped images: registry.test/app:v1")
}

func TestVerifyImagesNotConfigured(t *testing.T) {
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(decode(verifyPolicy("p", "", keysEntry("", keyA))).Policies...)
	if err != nil {
		t.Fatal(err)
	}
	_, got := mutateRules(t, set, pod("registry.test/app:v1"))
	wantResults(t, got, "error: failed to verify image registry.test/app:v1: no image verifier: not configured")
	if !errors.Is(got[0].Err, engine.ErrNotConfigured) {
		t.Errorf("err = %v", got[0].Err)
	}
}

func TestVerifyImagesCompileErrors(t *testing.T) {
	tests := []struct{ name, entry, want string }{
		{"count over entries", keysEntry("count: 3\n        ", keyA), "Count cannot exceed length of entries"},
		{"no attestor kind", "      attestors:\n      - entries:\n        - repository: x\n", "keys, certificates, keyless, or a nested attestor is required"},
		{"bad algorithm", "      attestors:\n      - entries:\n        - keys:\n            publicKeys: k\n            signatureAlgorithm: md5\n", "Invalid signature algorithm provided"},
		{"bad type", "      type: Magic\n", "Unsupported value"},
		// key material is checked at Compile: the error names the policy,
		// the rule and the field
		{"malformed PEM key", keysEntry("", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"),
			`policy p: spec.rules[0].verifyImages[0].attestors[0].entries[0].keys.publicKeys: Invalid value: "": invalid public key: not a PKIX public key`},
		{"second of two keys", keysEntry("count: 1\n        ", keyA, "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"),
			`spec.rules[0].verifyImages[0].attestors[0].entries[1].keys.publicKeys: Invalid value: "": invalid public key`},
		{"not PEM", keysEntry("", "cosign.pub"), `attestors[0].entries[0].keys.publicKeys: Invalid value: "": invalid PEM: want PUBLIC KEY or RSA PUBLIC KEY blocks`},
		{"certificate for a key", keysEntry("", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"), `invalid PEM: block CERTIFICATE, want PUBLIC KEY or RSA PUBLIC KEY`},
		{"nested attestor", "      attestors:\n      - entries:\n        - attestor:\n            entries:\n            - keys:\n                publicKeys: nope\n",
			`spec.rules[0].verifyImages[0].attestors[0].entries[0].attestor.entries[0].keys.publicKeys: Invalid value: "": invalid PEM`},
		{"attestation attestor", "      attestations:\n      - predicateType: https://example.com/v1\n        attestors:\n        - entries:\n          - keys:\n              publicKeys: nope\n",
			`spec.rules[0].verifyImages[0].attestations[0].attestors[0].entries[0].keys.publicKeys: Invalid value: "": invalid PEM`},
		{"rekor key", keysEntry("", keyA) + "            rekor:\n              pubkey: nope\n", `entries[0].keys.rekor.pubkey: Invalid value: "": invalid PEM`},
		{"ctlog key", keysEntry("", keyA) + "            ctlog:\n              pubkey: nope\n", `entries[0].keys.ctlog.pubkey: Invalid value: "": invalid PEM`},
		{"TSA chain", keysEntry("", keyA) + "            ctlog:\n              tsaCertChain: nope\n", `entries[0].keys.ctlog.tsaCertChain: Invalid value: "": invalid PEM: want CERTIFICATE blocks`},
		{"certificate", "      attestors:\n      - entries:\n        - certificates:\n            cert: |-\n              -----BEGIN CERTIFICATE-----\n              AAAA\n              -----END CERTIFICATE-----\n",
			`entries[0].certificates.cert: Invalid value: "": invalid certificate`},
		{"keyless roots", "      attestors:\n      - entries:\n        - keyless:\n            roots: nope\n", `entries[0].keyless.roots: Invalid value: "": invalid PEM`},
		{"keyless regexp", "      attestors:\n      - entries:\n        - keyless:\n            issuerRegExp: '('\n            rekor:\n              url: https://rekor.test\n", `entries[0].keyless.issuerRegExp: Invalid value: "("`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng, _ := engine.New()
			_, err := eng.Compile(decode(verifyPolicy("p", "", tt.entry)).Policies...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	eng, _ := engine.New()
	_, err := eng.Compile(decode(strings.Replace(verifyPolicy("p", "", keysEntry("", keyA)), `["registry.test/*"]`, `["{{ request.object.x }}"]`, 1)).Policies...)
	if err == nil || !strings.Contains(err.Error(), "variables are not allowed in image references") {
		t.Errorf("err = %v", err)
	}
	// key references, an ignored log's key and keys from variables are
	// not checked at Compile
	for _, entry := range []string{
		keysEntry("", "k8s://kyverno/cosign-key"), keysEntry("", "awskms://alias/signer"),
		keysEntry("", keyA) + "            rekor:\n              ignoreTlog: true\n              pubkey: unused\n",
		keysEntry("", "{{ request.object.metadata.annotations.key }}"),
	} {
		if _, err := eng.Compile(decode(verifyPolicy("p", "", entry)).Policies...); err != nil {
			t.Errorf("%s: %v", entry, err)
		}
	}
}

func TestVerifyImagesVariables(t *testing.T) {
	f := signedFake()
	// the key comes from a context variable; the image variable chooses
	// the repository
	policy := verifyPolicy("p", "", `      attestors:
      - entries:
        - keys:
            publicKeys: '{{ keys."{{ image.name }}" }}'
`)
	policy = strings.Replace(policy, "    verifyImages:", "    context:\n    - name: keys\n      variable:\n        value:\n          app: |-\n"+indent(keyA, "            ")+"\n          other: |-\n"+indent(keyB, "            ")+"\n    verifyImages:", 1)
	set := compileVerify(t, f, policy)
	_, got := mutateRules(t, set, pod("registry.test/app:v1", "registry.test/other:v1"))
	wantResults(t, got, "pass: verified image signatures for registry.test/app:v1", "pass: verified image signatures for registry.test/other:v1")
}

func TestVerifyImagesExceptionAndExtractors(t *testing.T) {
	f := signedFake()
	docs := decode(verifyPolicy("p", "", keysEntry("", keyB)) + `
---
apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: allow
  namespace: default
spec:
  exceptions:
  - policyName: p
    ruleNames: [check]
  match:
    any:
    - resources:
        kinds: [Pod]
`)
	xs, err := exceptions.Compile(docs.Exceptions)
	if err != nil {
		t.Fatal(err)
	}
	set := compileVerify(t, f, verifyPolicy("p", "", keysEntry("", keyB)), engine.WithExceptions(xs))
	_, got := mutateRules(t, set, pod("registry.test/app:v1"))
	if len(got) != 1 || got[0].Status != engine.StatusSkip || len(got[0].Exceptions) != 1 {
		t.Errorf("results = %+v", got)
	}
	// a custom resource, with an imageExtractor
	policy := strings.NewReplacer("kinds: [Pod]", "kinds: [Task]", "  rules:\n  - name: check\n", "  rules:\n  - name: check\n    imageExtractors:\n      Task:\n      - path: /spec/steps/*/image\n").Replace(verifyPolicy("p", "", keysEntry("", keyA)))
	set = compileVerify(t, f, policy)
	task := map[string]any{"apiVersion": "tekton.dev/v1", "kind": "Task", "metadata": map[string]any{"name": "t", "namespace": "default"},
		"spec": map[string]any{"steps": []any{map[string]any{"name": "build", "image": "registry.test/app:v1"}}}}
	resp, got := mutateRules(t, set, task)
	wantResults(t, got, "pass: verified image signatures for registry.test/app:v1")
	if !strings.Contains(string(resp.Patch), `"/spec/steps/0/image"`) {
		t.Errorf("patch = %s", resp.Patch)
	}
}

func TestVerifyImagesUpdate(t *testing.T) {
	f := signedFake()
	set := compileVerify(t, f, verifyPolicy("p", "", keysEntry("", keyA)))
	old := pod("registry.test/app:v1")
	resp, err := set.Mutate(context.Background(), &engine.Request{Operation: api.Update, Object: old, OldObject: old})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.Policies[0].Rules); n != 0 {
		t.Errorf("unchanged image verified again: %+v", resp.Policies[0].Rules)
	}
	changed := pod("registry.test/app:v1")
	changed["metadata"].(map[string]any)["annotations"] = map[string]any{engine.ImageVerifyAnnotation: `{"registry.test/app:v1":"pass"}`}
	resp, err = set.Mutate(context.Background(), &engine.Request{Operation: api.Update, Object: changed, OldObject: old})
	if err != nil {
		t.Fatal(err)
	}
	wantResults(t, resp.Policies[0].Rules, "fail: kyverno.io/verify-images annotation cannot be changed")
}

// TestVerifyImagesCache counts host calls: many Pods with one image cost
// one digest resolution and one verification per attestor, concurrent or
// not; useCache: false verifies every time.
func TestVerifyImagesCache(t *testing.T) {
	f := signedFake()
	f.delay = 20 * time.Millisecond
	set := compileVerify(t, f, verifyPolicy("p", "", keysEntry("count: 1\n        ", keyB, keyA)))
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := set.Mutate(context.Background(), &engine.Request{Operation: api.Create, Object: pod("registry.test/app:v1")})
			if err != nil || resp.Policies[0].Rules[0].Status != engine.StatusPass {
				t.Errorf("resp %+v, err %v", resp, err)
			}
		}()
	}
	wg.Wait()
	for i := 0; i < 10; i++ {
		mutateRules(t, set, pod("registry.test/app:v1"))
	}
	// keyB fails (failures are not cached but are coalesced while
	// concurrent), keyA passes once
	if r, v := f.resolves.Load(), f.verifies.Load(); r != 1 || v < 2 || v > 12 {
		t.Errorf("resolves %d, verifies %d", r, v)
	}
	f2 := signedFake()
	set = compileVerify(t, f2, verifyPolicy("p", "", keysEntry("", keyA)))
	for i := 0; i < 20; i++ {
		mutateRules(t, set, pod("registry.test/app:v1", "registry.test/app:v1"))
	}
	if r, v := f2.resolves.Load(), f2.verifies.Load(); r != 1 || v != 1 {
		t.Errorf("resolves %d, verifies %d, want 1 and 1", r, v)
	}
	f3 := signedFake()
	set = compileVerify(t, f3, verifyPolicy("p", "", "      useCache: false\n"+keysEntry("", keyA)))
	for i := 0; i < 5; i++ {
		mutateRules(t, set, pod("registry.test/app:v1"))
	}
	if v := f3.verifies.Load(); v != 5 {
		t.Errorf("useCache false: verifies %d, want 5", v)
	}
	// TTL, with an injected clock
	f4 := signedFake()
	now := time.Unix(0, 0)
	set = compileVerify(t, f4, verifyPolicy("p", "", keysEntry("", keyA)),
		engine.WithClock(func() time.Time { return now }), engine.WithImageVerifyCache(engine.ImageVerifyCacheOptions{TTL: time.Minute}))
	mutateRules(t, set, pod("registry.test/app:v1"))
	now = now.Add(30 * time.Second)
	mutateRules(t, set, pod("registry.test/app:v1"))
	now = now.Add(31 * time.Second)
	mutateRules(t, set, pod("registry.test/app:v1"))
	if v := f4.verifies.Load(); v != 2 {
		t.Errorf("TTL: verifies %d, want 2", v)
	}
}

// TestVerifyImagesCacheOwnContext: a request whose context ends while it
// waits for a verification shared with another request gets its own
// error; the verification goes on and the other request passes (the
// cache used to run the verification on the first caller's context, so
// that its timeout failed every request waiting on the image).
func TestVerifyImagesCacheOwnContext(t *testing.T) {
	f := signedFake()
	f.block, f.entered = make(chan struct{}), make(chan struct{}, 4)
	set := compileVerify(t, f, verifyPolicy("p", "", keysEntry("", keyA)))
	first, cancelFirst := context.WithCancel(context.Background())
	firstDone := make(chan error, 1)
	go func() {
		_, err := set.Mutate(first, &engine.Request{Operation: api.Create, Object: pod("registry.test/app:v1")})
		firstDone <- err
	}()
	<-f.entered
	secondDone := make(chan []engine.RuleResult, 1)
	go func() {
		_, rules := mutateRules(t, set, pod("registry.test/app:v1"))
		secondDone <- rules
	}()
	// the second request joins the verification in flight (were it late,
	// it would start its own, and still pass)
	time.Sleep(50 * time.Millisecond)
	cancelFirst()
	if err := <-firstDone; !errors.Is(err, context.Canceled) {
		t.Errorf("first request: %v, want its own context's error", err)
	}
	close(f.block)
	wantResults(t, <-secondDone, "pass: verified image signatures for registry.test/app:v1")
	if v := f.verifies.Load(); v > 2 {
		t.Errorf("%d verifications", v)
	}
}

// TestVerifyImagesCacheCredentials: credentials are part of the cache
// key: the outcome verified with some pull secrets answers requests with
// the same secrets only.
func TestVerifyImagesCacheCredentials(t *testing.T) {
	f := signedFake()
	set := compileVerify(t, f, verifyPolicy("p", "", keysEntry("", keyA)))
	withSecrets := func(names ...string) map[string]any {
		p := pod("registry.test/app:v1")
		var refs []any
		for _, n := range names {
			refs = append(refs, map[string]any{"name": n})
		}
		if refs != nil {
			p["spec"].(map[string]any)["imagePullSecrets"] = refs
		}
		return p
	}
	for _, obj := range []map[string]any{withSecrets(), withSecrets("team-a"), withSecrets("team-a"), withSecrets("team-b"), withSecrets(), withSecrets("team-a", "team-b")} {
		_, rules := mutateRules(t, set, obj)
		wantResults(t, rules, "pass: verified image signatures for registry.test/app:v1")
	}
	want := [][]string{nil, {"default/team-a"}, {"default/team-b"}, {"default/team-a", "default/team-b"}}
	if !slices.EqualFunc(f.pullSecrets, want, slices.Equal) {
		t.Errorf("verified with pull secrets %q, want %q", f.pullSecrets, want)
	}
	if r := f.resolves.Load(); r != 4 {
		t.Errorf("%d digest resolutions, want 4 (one per set of credentials)", r)
	}
}

// TestVerifyImagesFailureAction: an entry's failureAction decides whether
// a failure blocks, as the policy's validationFailureAction does.
func TestVerifyImagesFailureAction(t *testing.T) {
	for _, tt := range []struct {
		spec, entry string
		blocked     bool
	}{
		{"", "      failureAction: Enforce\n", true},
		{"", "      failureAction: Audit\n", false},
		{"", "", false},
		{"  validationFailureAction: Enforce", "", true},
	} {
		set := compileVerify(t, signedFake(), verifyPolicy("p", tt.spec, tt.entry+keysEntry("", keyB)))
		resp, got := mutateRules(t, set, pod("registry.test/app:v1"))
		if len(got) != 1 || got[0].Status != engine.StatusFail || resp.Blocked() != tt.blocked {
			t.Errorf("spec %q entry %q: %+v, blocked %v, want %v", tt.spec, tt.entry, got, resp.Blocked(), tt.blocked)
		}
	}
}

// TestVerifyImagesLinksNoSigningStack: importing engine compiles no
// signing library (package verify does), as `go list -deps` tells.
func TestVerifyImagesLinksNoSigningStack(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool")
	}
	out, err := exec.Command(gobin, "list", "-deps", "github.com/gavelpolicy/gavel/engine").Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/jmespath-community/go-jmespath") {
		t.Fatalf("go list -deps gave no go-jmespath: %d packages", len(deps))
	}
	for _, d := range deps {
		for _, bad := range []string{"sigstore", "notaryproject", "oras.land", "go-securesystemslib", "go-containerregistry/pkg/v1/remote"} {
			if strings.Contains(d, bad) {
				t.Errorf("engine imports %s", d)
			}
		}
	}
}

// TestVerifyImagesUpdateMutated: on UPDATE, an image that a mutate rule
// changed is verified even though the request did not change it.
func TestVerifyImagesUpdateMutated(t *testing.T) {
	f := signedFake()
	policy := verifyPolicy("p", "", keysEntry("", keyA)) + `---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: rewrite
spec:
  rules:
  - name: rewrite
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchesJson6902: |-
        - op: replace
          path: /spec/containers/0/image
          value: registry.test/other:v1
`
	set := compileVerify(t, f, policy)
	old := pod("registry.test/app:v1")
	resp, err := set.Mutate(context.Background(), &engine.Request{Operation: api.Update, Object: old, OldObject: old})
	if err != nil {
		t.Fatal(err)
	}
	var got []engine.RuleResult
	for _, p := range resp.Policies {
		for _, r := range p.Rules {
			if r.Type == engine.ImageVerify {
				got = append(got, r)
			}
		}
	}
	wantResults(t, got, "fail: failed to verify image registry.test/other:v1: .attestors[0].entries[0].keys: invalid signature")
}

// TestVerifyImagesAutogen: the rule applies to Pod controllers through
// autogen, the digest pinned in the Pod template.
func TestVerifyImagesAutogen(t *testing.T) {
	set := compileVerify(t, signedFake(), verifyPolicy("p", "", keysEntry("", keyA)))
	deploy := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d", "namespace": "default"},
		"spec": map[string]any{"template": map[string]any{"spec": pod("registry.test/app:v1")["spec"]}}}
	resp, got := mutateRules(t, set, deploy)
	wantResults(t, got, "pass: verified image signatures for registry.test/app:v1")
	if len(got) == 1 && got[0].Name != "autogen-check" {
		t.Errorf("rule %s", got[0].Name)
	}
	if !strings.Contains(string(resp.Patch), `"path":"/spec/template/spec/containers/0/image","value":"registry.test/app:v1@`+digestApp) {
		t.Errorf("patch %s", resp.Patch)
	}
}
