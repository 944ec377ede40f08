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
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gavelpolicy/gavel/engine"
)

// ivFake is an ImageVerifier with the ImagePolicyVerifier capability over
// tables: digests by reference (by tag), the attestors that signed each
// image (by digest), and attestations by image, attestor and type. An
// attestor is identified by its key (cosign key data), its certificate
// (cosign certificate or Notary certs) or, keyless, "issuer subject".
type ivFake struct {
	mu      sync.Mutex
	digests map[string]string
	signed  map[string][]string
	// attested[image][attestor][type] is the payload
	attested map[string]map[string]map[string]any
	down     bool
	requests []engine.ImagePolicyRequest

	resolves, verifies atomic.Int64
}

func newIVFake() *ivFake {
	return &ivFake{digests: map[string]string{}, signed: map[string][]string{}, attested: map[string]map[string]map[string]any{}}
}

func (f *ivFake) ResolveDigest(_ context.Context, req engine.ImageVerifyRequest) (string, error) {
	f.resolves.Add(1)
	if f.down {
		return "", fmt.Errorf("dial tcp: connection refused: %w", engine.ErrRegistryUnavailable)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.digests[req.Image]
	if !ok {
		return "", fmt.Errorf("%s: MANIFEST_UNKNOWN", req.Image)
	}
	return d, nil
}

func (f *ivFake) VerifySignature(context.Context, engine.ImageVerifyRequest) error {
	return errors.New("verifyImages rules are not this fake's")
}

func (f *ivFake) FetchAttestations(context.Context, engine.ImageVerifyRequest) ([]map[string]any, error) {
	return nil, errors.New("verifyImages rules are not this fake's")
}

// identities are the identities an attestor accepts.
func identities(a policiesv1alpha1.Attestor) []string {
	switch {
	case a.Notary != nil && a.Notary.Certs != nil:
		return []string{strings.TrimSpace(a.Notary.Certs.Value)}
	case a.Cosign == nil:
	case a.Cosign.Keyless != nil:
		var out []string
		for _, id := range a.Cosign.Keyless.Identities {
			subject := id.Subject
			if subject == "" {
				subject = id.SubjectRegExp
			}
			out = append(out, id.Issuer+" "+subject)
		}
		return out
	case a.Cosign.Key != nil:
		return []string{strings.TrimSpace(a.Cosign.Key.Data)}
	case a.Cosign.Certificate != nil && a.Cosign.Certificate.Certificate != nil:
		return []string{strings.TrimSpace(a.Cosign.Certificate.Certificate.Value)}
	}
	return nil
}

func (f *ivFake) VerifyImagePolicySignature(_ context.Context, req engine.ImagePolicyRequest) error {
	f.verifies.Add(1)
	if f.down {
		return fmt.Errorf("dial tcp: connection refused: %w", engine.ErrRegistryUnavailable)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req)
	for _, id := range identities(req.Attestor) {
		for _, s := range f.signed[req.Image] {
			if s == id {
				return nil
			}
		}
	}
	return errors.New("no matching signatures")
}

func (f *ivFake) VerifyImagePolicyAttestation(_ context.Context, req engine.ImagePolicyRequest) (any, error) {
	f.verifies.Add(1)
	if f.down {
		return nil, fmt.Errorf("dial tcp: connection refused: %w", engine.ErrRegistryUnavailable)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req)
	typ := ""
	if a := req.Attestation; a.InToto != nil {
		typ = a.InToto.Type
	} else if a.Referrer != nil {
		typ = a.Referrer.Type
	}
	for _, id := range identities(req.Attestor) {
		if p, ok := f.attested[req.Image][id][typ]; ok {
			return p, nil
		}
	}
	return nil, errors.New("no matching attestations")
}

// sign records a signature of the image (by digest) by the identity.
func (f *ivFake) sign(image, id string) { f.signed[image] = append(f.signed[image], id) }

// attest records an attestation of the image by the identity.
func (f *ivFake) attest(image, id, typ string, payload any) {
	if f.attested[image] == nil {
		f.attested[image] = map[string]map[string]any{}
	}
	if f.attested[image][id] == nil {
		f.attested[image][id] = map[string]any{}
	}
	f.attested[image][id][typ] = payload
}

// testPublicKey returns a new P-256 public key in PEM.
func testPublicKey(t testing.TB) string {
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

// ivpol builds an ImageValidatingPolicy on Pods with the spec's other
// fields (YAML at the indentation of spec's fields).
func ivpol(name, fields string) string {
	return `apiVersion: policies.kyverno.io/v1
kind: ImageValidatingPolicy
metadata:
  name: ` + name + `
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [pods]
` + fields
}

// keyAttestor is the YAML of a cosign key attestor (at the indentation of
// the attestors list).
func keyAttestor(name, key string) string {
	return "  - name: " + name + "\n    cosign:\n      key:\n        data: |\n" + indent(key, "          ") + "\n"
}

func compileIV(t testing.TB, f engine.ImageVerifier, policies string, opts ...engine.Option) *engine.PolicySet {
	t.Helper()
	eng, err := engine.New(append([]engine.Option{engine.WithImageVerifier(f)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(decode(policies).Policies...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// results renders the rule results of a response: "POLICY RULE status:
// message", one a line.
func results(resp *engine.Response) string {
	var lines []string
	for _, p := range resp.Policies {
		for _, r := range p.Rules {
			lines = append(lines, fmt.Sprintf("%s %s %s: %s", p.Policy.Source().GetName(), r.Name, r.Status, r.Message))
		}
	}
	return strings.Join(lines, "\n")
}
