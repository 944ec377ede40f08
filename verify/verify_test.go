package verify_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	ggcrmutate "github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/sigstore/cosign/v2/pkg/oci/static"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/loader"
	"github.com/gavelpolicy/gavel/report"
	"github.com/gavelpolicy/gavel/verify"
)

func policy(spec, entry string) string {
	return `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: check-images
spec:
  validationFailureAction: Enforce
` + spec + `
  rules:
  - name: check
    match:
      any:
      - resources:
          kinds: [Pod]
    verifyImages:
    - imageReferences: ["*"]
` + entry
}

func keysEntry(count string, pems ...string) string {
	s := "      attestors:\n      - " + count + "entries:\n"
	for _, p := range pems {
		s += "        - keys:\n            publicKeys: |-\n" + indent(p, "              ") + "\n"
	}
	return s
}

func compile(t testing.TB, v engine.ImageVerifier, src string, opts ...engine.Option) *engine.PolicySet {
	t.Helper()
	set := &loader.Set{}
	if err := set.Read(strings.NewReader(src), "policy.yaml"); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(append([]engine.Option{engine.WithImageVerifier(v)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := eng.Compile(set.Policies...)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func pod(images ...string) map[string]any {
	var cs []any
	for i, img := range images {
		cs = append(cs, map[string]any{"name": "c" + string(rune('0'+i)), "image": img})
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "namespace": "default"},
		"spec":     map[string]any{"containers": cs}}
}

func run(t testing.TB, set *engine.PolicySet, obj map[string]any) (*engine.Response, string) {
	t.Helper()
	resp, err := set.Mutate(context.Background(), &engine.Request{Operation: api.Create, Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, p := range resp.Policies {
		for _, r := range p.Rules {
			lines = append(lines, string(r.Status)+": "+r.Message)
		}
	}
	return resp, strings.Join(lines, "\n")
}

func TestCosignKeys(t *testing.T) {
	reg := newRegistry(t)
	key, other := newKey(t), newKey(t)
	signed, sd := reg.push(t, "app:signed")
	sign(t, sd, key.signer, nil)
	unsigned, _ := reg.push(t, "app:unsigned")
	byOther, od := reg.push(t, "app:other")
	sign(t, od, other.signer, nil)
	annotated, ad := reg.push(t, "app:annotated")
	sign(t, ad, key.signer, map[string]any{"sig": "original"})
	malformed, md := reg.push(t, "app:malformed")
	bad, err := static.NewSignature([]byte(`{"critical":{}}`), "bm90IGEgc2lnbmF0dXJl")
	if err != nil {
		t.Fatal(err)
	}
	attach(t, md, bad, false)

	v := verify.New()
	tests := []struct {
		name, entry, image, want string
	}{
		{"signed", keysEntry("", key.pem), signed, "pass: verified image signatures for " + signed},
		{"unsigned", keysEntry("", key.pem), unsigned, "fail: failed to verify image " + unsigned + ": .attestors[0].entries[0].keys: no signatures found"},
		{"wrong key", keysEntry("", key.pem), byOther, "fail: failed to verify image " + byOther + ": .attestors[0].entries[0].keys: no matching signatures: invalid signature when validating ASN.1 encoded signature"},
		{"count 1 of 2", keysEntry("count: 1\n        ", other.pem, key.pem), signed, "pass: verified image signatures for " + signed},
		{"all of 2", keysEntry("", other.pem, key.pem), signed, "fail: failed to verify image " + signed + ": .attestors[0].entries[0].keys: no matching signatures: invalid signature when validating ASN.1 encoded signature"},
		{"malformed signature", keysEntry("", key.pem), malformed, "fail: failed to verify image " + malformed + ": .attestors[0].entries[0].keys: no matching signatures: ecdsa: Invalid IEEE_P1363 encoded bytes"},
		{"annotations match", "      annotations:\n        sig: original\n" + keysEntry("", key.pem), annotated, "pass: verified image signatures for " + annotated},
		{"annotations differ", "      annotations:\n        sig: copy\n" + keysEntry("", key.pem), annotated, "fail: failed to verify image " + annotated + ": .attestors[0].entries[0].keys: no matching signatures: missing or incorrect annotation"},
		{"skipImageReferences", "      skipImageReferences: [\"" + reg.host + "/app:signed\"]\n" + keysEntry("", other.pem), signed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, v, policy("", tt.entry))
			_, got := run(t, set, pod(tt.image))
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestCosignDigestPinning checks mutateDigest's patch, and verifyDigest and
// required at validation, against the registry.
func TestCosignDigestPinning(t *testing.T) {
	reg := newRegistry(t)
	key := newKey(t)
	signed, sd := reg.push(t, "app:v1")
	sign(t, sd, key.signer, nil)
	set := compile(t, verify.New(), policy("", keysEntry("", key.pem)))
	resp, got := run(t, set, pod(signed))
	if got != "pass: verified image signatures for "+signed {
		t.Fatal(got)
	}
	pinned := signed + "@" + sd.DigestStr()
	wantPatch := `[{"op":"add","path":"/metadata/annotations","value":{"kyverno.io/verify-images":"{\"` + sd.String() + `\":\"pass\"}"}},{"op":"replace","path":"/spec/containers/0/image","value":"` + pinned + `"}]`
	if string(resp.Patch) != wantPatch {
		t.Errorf("patch\n%s\nwant\n%s", resp.Patch, wantPatch)
	}
	vr, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: resp.Resource})
	if err != nil {
		t.Fatal(err)
	}
	if r := vr.Policies[0].Rules[0]; r.Status != engine.StatusPass || r.Message != "image verified" {
		t.Errorf("validate mutated: %s %s", r.Status, r.Message)
	}
	vr, err = set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod(signed)})
	if err != nil {
		t.Fatal(err)
	}
	if r := vr.Policies[0].Rules[0]; r.Status != engine.StatusFail || r.Message != "missing digest for "+signed || !vr.Blocked() {
		t.Errorf("validate unpinned: %s %s", r.Status, r.Message)
	}
	vr, err = set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod(pinned)})
	if err != nil {
		t.Fatal(err)
	}
	if r := vr.Policies[0].Rules[0]; r.Status != engine.StatusFail || r.Message != "image is not verified" {
		t.Errorf("validate not annotated (required): %s %s", r.Status, r.Message)
	}
}

func TestCosignAttestations(t *testing.T) {
	reg := newRegistry(t)
	key, other := newKey(t), newKey(t)
	img, d := reg.push(t, "app:attested")
	attest(t, d, key.signer, "https://example.com/CodeReview/v1", map[string]any{"author": "alice", "repo": map[string]any{"branch": "main"}, "reviewers": []any{"bob"}})
	attest(t, d, other.signer, "https://slsa.dev/provenance/v0.2", map[string]any{"builder": map[string]any{"id": "x"}})
	entry := func(pt, pem, conds string) string {
		return "      attestations:\n      - predicateType: " + pt + "\n        attestors:\n        - entries:\n          - keys:\n              publicKeys: |-\n" + indent(pem, "                ") + "\n" + conds
	}
	holds := "        conditions:\n        - all:\n          - key: '{{ repo.branch }}'\n            operator: Equals\n            value: main\n          - key: '{{ reviewers }}'\n            operator: AnyIn\n            value: [ana, bob]\n"
	fails := "        conditions:\n        - all:\n          - key: '{{ repo.branch }}'\n            operator: Equals\n            value: release\n"
	v := verify.New()
	tests := []struct{ name, entry, want string }{
		{"conditions hold", entry("https://example.com/CodeReview/v1", key.pem, holds), "pass: verified image attestations for " + img},
		{"conditions fail", entry("https://example.com/CodeReview/v1", key.pem, fails), "fail: image attestations verification failed, verifiedCount: 0, requiredCount: 1, error: .attestations[0].attestors[0].entries[0].keys: attestation checks failed for " + img + " and predicate https://example.com/CodeReview/v1"},
		{"signed by another key", entry("https://slsa.dev/provenance/v0.2", key.pem, ""), "fail: image attestations verification failed, verifiedCount: 0, requiredCount: 1, error: .attestations[0].attestors[0].entries[0].keys: attestations not found for predicate type https://slsa.dev/provenance/v0.2"},
		{"no attestation verifies", entry("https://example.com/CodeReview/v1", newKey(t).pem, ""), "fail: image attestations verification failed, verifiedCount: 0, requiredCount: 1, error: .attestations[0].attestors[0].entries[0].keys: no matching attestations: accepted signatures do not match threshold, Found: 0, Expected 1\n accepted signatures do not match threshold, Found: 0, Expected 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, v, policy("", tt.entry))
			_, got := run(t, set, pod(img))
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestCosignCertificatesAndKeyless(t *testing.T) {
	reg := newRegistry(t)
	ca, otherCA := newCA(t), newCA(t)
	signer, leaf := ca.issue(t, "dev@example.com", "https://issuer.test")
	img, d := reg.push(t, "app:keyless")
	sign(t, d, signer, nil, static.WithCertChain(leaf, []byte(ca.pem)))
	keyless := func(roots, subject, issuer string) string {
		return "      attestors:\n      - entries:\n        - keyless:\n            subject: " + subject + "\n            issuer: " + issuer +
			"\n            rekor:\n              ignoreTlog: true\n            ctlog:\n              ignoreSCT: true\n            roots: |-\n" + indent(roots, "              ") + "\n"
	}
	certs := "      attestors:\n      - entries:\n        - certificates:\n            cert: |-\n" + indent(string(leaf), "              ") +
		"\n            certChain: |-\n" + indent(ca.pem, "              ") + "\n            ctlog:\n              ignoreSCT: true\n"
	v := verify.New()
	tests := []struct{ name, entry, want string }{
		{"keyless", keyless(ca.pem, "dev@example.com", "https://issuer.test"), "pass: verified image signatures for " + img},
		{"keyless regexp", strings.Replace(strings.Replace(keyless(ca.pem, "x", "https://issuer.test"), "subject: x", "subjectRegExp: '.*@example\\.com'", 1), "issuer: https", "issuerRegExp: https", 1), "pass: verified image signatures for " + img},
		{"keyless wrong subject", keyless(ca.pem, "ops@example.com", "https://issuer.test"), "fail"},
		{"keyless wrong issuer", keyless(ca.pem, "dev@example.com", "https://other.test"), "fail"},
		{"keyless other root", keyless(otherCA.pem, "dev@example.com", "https://issuer.test"), "fail"},
		{"certificates", certs, "pass: verified image signatures for " + img},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, v, policy("", tt.entry))
			_, got := run(t, set, pod(img))
			if tt.want == "fail" {
				if !strings.HasPrefix(got, "fail: failed to verify image "+img+": .attestors[0].entries[0].keyless: ") {
					t.Errorf("got %s", got)
				}
				return
			}
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestRegistryDown(t *testing.T) {
	reg := newRegistry(t)
	key := newKey(t)
	img, d := reg.push(t, "app:v1")
	sign(t, d, key.signer, nil)
	reg.srv.Close()
	set := compile(t, verify.New(), policy("", keysEntry("", key.pem)))
	resp, got := run(t, set, pod(img))
	if !strings.HasPrefix(got, "error: failed to verify image "+img+": image registry unavailable: failed to fetch image descriptor") || !resp.Blocked() {
		t.Errorf("got %s (blocked %v)", got, resp.Blocked())
	}
	if r := resp.Policies[0].Rules[0]; !errors.Is(r.Err, engine.ErrRegistryUnavailable) {
		t.Errorf("err = %v", r.Err)
	}
	set = compile(t, verify.New(), policy("  webhookConfiguration:\n    failurePolicy: Ignore\n", keysEntry("", key.pem)))
	resp, got = run(t, set, pod(img))
	if !strings.HasPrefix(got, "skip: ") || !strings.HasSuffix(got, "(failurePolicy Ignore)") || resp.Blocked() {
		t.Errorf("failurePolicy Ignore: got %s (blocked %v)", got, resp.Blocked())
	}
}

func TestOversizedManifest(t *testing.T) {
	reg := newRegistry(t)
	key := newKey(t)
	img := ggcrmutate.Annotations(empty.Image, map[string]string{"padding": strings.Repeat("x", 200<<10)}).(v1.Image)
	ref, d := reg.pushImage(t, "app:big", img)
	sign(t, d, key.signer, nil)
	set := compile(t, verify.New(verify.WithMaxResponseBytes(64<<10)), policy("", keysEntry("", key.pem)))
	_, got := run(t, set, pod(ref))
	if !strings.HasPrefix(got, "fail: failed to verify image "+ref+": failed to fetch image descriptor") || !strings.Contains(got, "registry response too large") {
		t.Errorf("got %s", got)
	}
	// within the default bound the same image verifies
	set = compile(t, verify.New(), policy("", keysEntry("", key.pem)))
	if _, got := run(t, set, pod(ref)); got != "pass: verified image signatures for "+ref {
		t.Errorf("got %s", got)
	}
}

// countingVerifier counts the calls that reach the registry.
type countingVerifier struct {
	*verify.Verifier
	resolves, verifies atomic.Int64
}

func (c *countingVerifier) ResolveDigest(ctx context.Context, req engine.ImageVerifyRequest) (string, error) {
	c.resolves.Add(1)
	return c.Verifier.ResolveDigest(ctx, req)
}

func (c *countingVerifier) VerifySignature(ctx context.Context, req engine.ImageVerifyRequest) error {
	c.verifies.Add(1)
	return c.Verifier.VerifySignature(ctx, req)
}

// TestOneVerificationPerDigest: many Pods, concurrent, with one image and
// one attestor set of two keys (count 1), cost one digest resolution and
// one verification per key tried.
func TestOneVerificationPerDigest(t *testing.T) {
	reg := newRegistry(t)
	key, other := newKey(t), newKey(t)
	img, d := reg.push(t, "app:v1")
	sign(t, d, key.signer, nil)
	img2, d2 := reg.push(t, "app:v2")
	sign(t, d2, key.signer, nil)
	cv := &countingVerifier{Verifier: verify.New()}
	set := compile(t, cv, policy("", keysEntry("count: 1\n        ", key.pem, other.pem)))
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := set.Mutate(context.Background(), &engine.Request{Operation: api.Create, Object: pod(img, img2)})
			if err != nil {
				t.Error(err)
				return
			}
			for _, r := range resp.Policies[0].Rules {
				if r.Status != engine.StatusPass {
					t.Errorf("%s: %s", r.Status, r.Message)
				}
			}
		}()
	}
	wg.Wait()
	if r, v := cv.resolves.Load(), cv.verifies.Load(); r != 2 || v != 2 {
		t.Errorf("resolves %d, verifies %d; want 2 and 2 (one per image digest)", r, v)
	}
}

// TestReportEntries: verifyImages results go into policy reports as
// upstream writes them (one entry per rule result).
func TestReportEntries(t *testing.T) {
	reg := newRegistry(t)
	key := newKey(t)
	signed, d := reg.push(t, "app:signed")
	sign(t, d, key.signer, nil)
	unsigned, _ := reg.push(t, "app:unsigned")
	set := compile(t, verify.New(), policy("", keysEntry("", key.pem)))
	var results []engine.PolicyResult
	for _, img := range []string{signed, unsigned} {
		resp, _ := run(t, set, pod(img))
		results = append(results, resp.Policies...)
	}
	reports, err := report.Build(results, report.Options{Clock: func() time.Time { return time.Unix(0, 0) }})
	if err != nil || len(reports) != 1 {
		t.Fatalf("%d reports, %v", len(reports), err)
	}
	var got []string
	for _, r := range reports[0].Results {
		got = append(got, r.Policy+"/"+r.Rule+": "+string(r.Result)+": "+r.Message)
	}
	want := []string{
		"check-images/check: pass: verified image signatures for " + signed,
		"check-images/check: fail: failed to verify image " + unsigned + ": .attestors[0].entries[0].keys: no signatures found",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
