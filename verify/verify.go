// Package verify is the default engine.ImageVerifier: it reads registries
// with go-containerregistry and checks Cosign signatures and in-toto
// attestations with cosign's verification packages (keys, KMS keys,
// certificates, keyless with a given root or Sigstore's trusted root,
// Rekor bundles and online lookups, CT options) and Notary signatures
// with notation-go. It writes no signature format or cryptography of its
// own.
//
// The engine imports nothing of this package: an embedder that does not
// verify images does not link the signing stack.
package verify

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"k8s.io/utils/lru"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// SecretReader returns the data of a Kubernetes Secret, for keys given as
// a Secret (attestors' keys.secret): the key is its cosign.pub entry.
type SecretReader interface {
	SecretData(ctx context.Context, namespace, name string) (map[string][]byte, error)
}

// Verifier implements engine.ImageVerifier. It is safe for concurrent use.
type Verifier struct {
	keychain  authn.Keychain
	transport http.RoundTripper
	maxBytes  int64
	secrets   SecretReader
	secretsNS string
	providers map[string]authn.Keychain
	trust     trustSource
	// attestors keeps attestors prepared (attestor.go), by their JSON
	attestors *lru.Cache
	// trusts keeps the Verifiers of attestors with their own trusted
	// root (imagepolicy.go)
	trusts *trustCache
}

var _ engine.ImageVerifier = (*Verifier)(nil)

// Option configures a Verifier.
type Option func(*Verifier)

// WithKeychain sets the registry credentials (default: anonymous; the CLI
// passes authn.DefaultKeychain, the docker config).
func WithKeychain(k authn.Keychain) Option { return func(v *Verifier) { v.keychain = k } }

// WithTransport sets the HTTP transport (default: http.DefaultTransport).
func WithTransport(t http.RoundTripper) Option { return func(v *Verifier) { v.transport = t } }

// WithMaxResponseBytes bounds each registry response read (manifests,
// signature payloads, configs); default 4 MiB. Verification never reads
// image layers.
func WithMaxResponseBytes(n int64) Option { return func(v *Verifier) { v.maxBytes = n } }

// WithSecrets sets where keys given as Secrets are read.
func WithSecrets(s SecretReader) Option { return func(v *Verifier) { v.secrets = s } }

// New returns a Verifier.
func New(opts ...Option) *Verifier {
	v := &Verifier{keychain: authn.NewMultiKeychain(), transport: http.DefaultTransport, maxBytes: 4 << 20, secretsNS: "kyverno",
		trusts: &trustCache{}}
	for _, o := range opts {
		o(v)
	}
	v.attestors = lru.New(maxPreparedAttestors)
	return v
}

func (v *Verifier) remoteOptions(ctx context.Context, creds *api.ImageRegistryCredentials, pullSecrets []string) ([]remote.Option, error) {
	kc, err := v.keychainFor(ctx, creds, pullSecrets)
	if err != nil {
		return nil, err
	}
	return []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc),
		remote.WithTransport(&limitTransport{next: v.transport, max: v.maxBytes})}, nil
}

func parseReference(image string, creds *api.ImageRegistryCredentials) (name.Reference, error) {
	var opts []name.Option
	if creds != nil && creds.AllowInsecureRegistry {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(image, opts...)
	if err != nil {
		return nil, fmt.Errorf("failed to parse image reference %s: %w", image, err)
	}
	return ref, nil
}

// ResolveDigest implements engine.ImageVerifier.
func (v *Verifier) ResolveDigest(ctx context.Context, req engine.ImageVerifyRequest) (string, error) {
	image := req.Image
	ref, err := parseReference(image, req.Credentials)
	if err != nil {
		return "", err
	}
	if d, ok := ref.(name.Digest); ok {
		return d.DigestStr(), nil
	}
	opts, err := v.remoteOptions(ctx, req.Credentials, req.PullSecrets)
	if err != nil {
		return "", err
	}
	desc, err := remote.Head(ref, opts...)
	if err != nil {
		// some registries answer HEAD badly: GET reads the manifest
		d, gerr := remote.Get(ref, opts...)
		if gerr != nil {
			return "", registryError(fmt.Errorf("failed to fetch image descriptor %s: %w", image, gerr))
		}
		return d.Digest.String(), nil
	}
	return desc.Digest.String(), nil
}

// VerifySignature implements engine.ImageVerifier.
func (v *Verifier) VerifySignature(ctx context.Context, req engine.ImageVerifyRequest) error {
	switch req.Type {
	case "", "Cosign":
	case "Notary":
		return v.verifyNotary(ctx, req)
	case "SigstoreBundle":
		return v.verifyBundleSignature(ctx, req)
	default:
		return fmt.Errorf("signature type %s is not supported by gavel's verifier", req.Type)
	}
	ctx, lookups := withRekorFailures(ctx)
	ref, co, _, err := v.checkOpts(ctx, req)
	if err != nil {
		return err
	}
	co.ClaimVerifier = cosign.SimpleClaimVerifier
	withCarriedIntermediates(ref, co, false)
	if _, _, err := cosign.VerifyImageSignatures(ctx, ref, co); err != nil {
		return lookups.wrap(registryError(err))
	}
	return nil
}

// FetchAttestations implements engine.ImageVerifier: the verified in-toto
// statements of the predicate type.
func (v *Verifier) FetchAttestations(ctx context.Context, req engine.ImageVerifyRequest) ([]map[string]any, error) {
	var ref name.Reference
	var co *cosign.CheckOpts
	var err error
	ctx, lookups := withRekorFailures(ctx)
	switch req.Type {
	case "", "Cosign":
		if ref, co, _, err = v.checkOpts(ctx, req); err == nil {
			withCarriedIntermediates(ref, co, true)
		}
	case "SigstoreBundle":
		ref, co, err = v.bundleOpts(ctx, req)
	case "Notary":
		return v.fetchNotaryAttestations(ctx, req)
	default:
		return nil, fmt.Errorf("signature type %s is not supported by gavel's verifier", req.Type)
	}
	if err != nil {
		return nil, err
	}
	co.ClaimVerifier = cosign.IntotoSubjectClaimVerifier
	atts, _, err := cosign.VerifyImageAttestations(ctx, ref, co)
	if err != nil {
		return nil, lookups.wrap(registryError(err))
	}
	var out []map[string]any
	for _, att := range atts {
		raw, err := att.Payload()
		if err != nil {
			return nil, err
		}
		var env dsse.Envelope
		if err := json.Unmarshal(raw, &env); err != nil {
			return nil, fmt.Errorf("malformed attestation envelope: %w", err)
		}
		body, err := env.DecodeB64Payload()
		if err != nil {
			return nil, fmt.Errorf("malformed attestation payload: %w", err)
		}
		var statement map[string]any
		if err := json.Unmarshal(body, &statement); err != nil {
			return nil, fmt.Errorf("malformed in-toto statement: %w", err)
		}
		if pt, _ := statement["predicateType"].(string); pt == req.PredicateType {
			out = append(out, statement)
		}
	}
	return out, nil
}

// certPools splits a PEM chain: self-signed certificates are roots, the
// others intermediates.
func certPools(chain []*x509.Certificate) (roots, intermediates *x509.CertPool) {
	roots = x509.NewCertPool()
	for _, c := range chain {
		if c.CheckSignatureFrom(c) == nil {
			roots.AddCert(c)
		} else {
			if intermediates == nil {
				intermediates = x509.NewCertPool()
			}
			intermediates.AddCert(c)
		}
	}
	return roots, intermediates
}

// registryError marks errors of reaching the registry (network, server
// errors, too many requests) with engine.ErrRegistryUnavailable.
func registryError(err error) error {
	if err == nil {
		return nil
	}
	var op *net.OpError
	var dns *net.DNSError
	var te *transport.Error
	switch {
	case errors.As(err, &op), errors.As(err, &dns):
	case errors.As(err, &te) && (te.StatusCode >= 500 || te.StatusCode == http.StatusTooManyRequests):
	case errors.Is(err, io.ErrUnexpectedEOF):
	default:
		return err
	}
	return fmt.Errorf("%w: %w", engine.ErrRegistryUnavailable, err)
}

// limitTransport refuses registry responses larger than max bytes.
type limitTransport struct {
	next http.RoundTripper
	max  int64
}

// ErrTooLarge is wrapped by the error of a registry response over the
// size bound (WithMaxResponseBytes).
var ErrTooLarge = errors.New("registry response too large")

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || t.max <= 0 {
		return resp, err
	}
	if resp.ContentLength > t.max {
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %w: %d bytes, limit %d", req.Method, req.URL.Path, ErrTooLarge, resp.ContentLength, t.max)
	}
	resp.Body = &limitedBody{rc: resp.Body, left: t.max, url: req.URL.Path, max: t.max}
	return resp, nil
}

type limitedBody struct {
	rc   io.ReadCloser
	left int64
	max  int64
	url  string
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// one byte more tells a body of exactly max bytes from a longer one
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%s: %w: over %d bytes", b.url, ErrTooLarge, b.max)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
