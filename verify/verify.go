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
	"crypto"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/tuf"

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
	ref, co, err := v.checkOpts(ctx, req)
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
		if ref, co, err = v.checkOpts(ctx, req); err == nil {
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

// checkOpts turns an attestor into cosign's options (ref is nil when
// req.Image is empty: a blob's signature, see manifest.go).
func (v *Verifier) checkOpts(ctx context.Context, req engine.ImageVerifyRequest) (name.Reference, *cosign.CheckOpts, error) {
	var ref name.Reference
	var err error
	if req.Image != "" {
		if ref, err = parseReference(req.Image, req.Credentials); err != nil {
			return nil, nil, err
		}
	}
	ropts, err := v.remoteOptions(ctx, req.Credentials, req.PullSecrets)
	if err != nil {
		return nil, nil, err
	}
	regOpts := []ociremote.Option{ociremote.WithRemoteOptions(ropts...)}
	if req.Repository != "" {
		repo, err := name.NewRepository(req.Repository)
		if err != nil {
			return nil, nil, fmt.Errorf("invalid signature repository %s: %w", req.Repository, err)
		}
		regOpts = append(regOpts, ociremote.WithTargetRepository(repo))
	}
	co := &cosign.CheckOpts{RegistryClientOpts: regOpts, ExperimentalOCI11: req.CosignOCI11}
	if len(req.Annotations) > 0 {
		co.Annotations = map[string]any{}
		for k, val := range req.Annotations {
			co.Annotations[k] = val
		}
	}
	a := req.Attestor
	var rekor *api.Rekor
	var ctlog *api.CTLog
	switch {
	case a.Keys != nil:
		rekor, ctlog = a.Keys.Rekor, a.Keys.CTLog
	case a.Certificates != nil:
		rekor, ctlog = a.Certificates.Rekor, a.Certificates.CTLog
	case a.Keyless != nil:
		rekor, ctlog = a.Keyless.Rekor, a.Keyless.CTLog
	}
	co.IgnoreSCT = ctlog != nil && ctlog.IgnoreSCT
	if ctlog != nil && ctlog.PubKey != "" {
		keys := cosign.NewTrustedTransparencyLogPubKeys()
		co.CTLogPubKeys = &keys
		if err := keys.AddTransparencyLogPubKey([]byte(ctlog.PubKey), tuf.Active); err != nil {
			return nil, nil, fmt.Errorf("failed to load ctlog public key: %w", err)
		}
	}
	if ctlog != nil && ctlog.TSACertChain != "" {
		chain, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(ctlog.TSACertChain))
		if err != nil || len(chain) == 0 {
			return nil, nil, fmt.Errorf("failed to load the TSA certificate chain: %v", err)
		}
		// the leaf first, then intermediates, the root last
		co.UseSignedTimestamps = true
		for _, c := range chain {
			switch {
			case c.CheckSignatureFrom(c) == nil:
				co.TSARootCertificates = append(co.TSARootCertificates, c)
			case !c.IsCA && co.TSACertificate == nil:
				co.TSACertificate = c
			default:
				co.TSAIntermediateCertificates = append(co.TSAIntermediateCertificates, c)
			}
		}
	}
	co.IgnoreTlog = rekor == nil || rekor.IgnoreTlog
	if !co.IgnoreTlog && rekor.PubKey != "" {
		keys := cosign.NewTrustedTransparencyLogPubKeys()
		co.RekorPubKeys = &keys
		if err := keys.AddTransparencyLogPubKey([]byte(rekor.PubKey), tuf.Active); err != nil {
			return nil, nil, fmt.Errorf("failed to load rekor public key: %w", err)
		}
	}
	// keyless without roots verifies with Sigstore's trusted root, which
	// gives the logs the policy does not; so do other attestors whose log
	// keys the policy leaves out
	var needTrust string
	switch {
	case a.Keyless != nil && a.Keyless.Roots == "":
		needTrust = "keyless verification without roots"
	case a.Keys == nil && !co.IgnoreSCT && co.CTLogPubKeys == nil:
		if v.trust == nil {
			return nil, nil, errors.New("checking certificate transparency needs ctlog.pubkey (or ctlog.ignoreSCT: true, or the Verifier's Sigstore trusted root)")
		}
		needTrust = "ctlog without pubkey"
	case !co.IgnoreTlog && co.RekorPubKeys == nil:
		if v.trust == nil {
			return nil, nil, errors.New("checking the transparency log needs rekor.pubkey (or rekor.ignoreTlog: true, or the Verifier's Sigstore trusted root)")
		}
		needTrust = "rekor without pubkey"
	}
	// cas are the certificate authorities the policy gives (nil: the
	// trusted root's); a certificate with its chain is checked once the
	// trusted material is known
	var cas []root.CertificateAuthority
	var leaf *x509.Certificate
	var leafChain []*x509.Certificate
	switch {
	case a.Keys != nil:
		hash := crypto.SHA256
		if a.Keys.SignatureAlgorithm == "sha512" {
			hash = crypto.SHA512
		}
		pem := a.Keys.PublicKeys
		secret := a.Keys.Secret
		if secret == nil {
			// upstream's k8s://namespace/name form of a Secret, as a key or
			// a KMS reference
			ref := pem
			if strings.TrimSpace(ref) == "" {
				ref = a.Keys.KMS
			}
			if s, ok, err := secretKeyRef(ref); ok {
				if err != nil {
					return nil, nil, err
				}
				secret = s
			}
		}
		if secret == nil && strings.TrimSpace(pem) == "" && a.Keys.KMS != "" {
			if co.SigVerifier, err = kmsVerifier(ctx, a.Keys.KMS, hash); err != nil {
				return nil, nil, err
			}
			break
		}
		if secret != nil {
			if v.secrets == nil {
				return nil, nil, fmt.Errorf("key from secret %s/%s: %w", secret.Namespace, secret.Name, engine.ErrNotConfigured)
			}
			data, err := v.secrets.SecretData(ctx, secret.Namespace, secret.Name)
			if err != nil {
				return nil, nil, fmt.Errorf("failed to read secret %s/%s: %w", secret.Namespace, secret.Name, err)
			}
			pem = string(data["cosign.pub"])
		}
		pub, err := cryptoutils.UnmarshalPEMToPublicKey([]byte(pem))
		if err != nil {
			return nil, nil, fmt.Errorf("failed to load public key: %w", err)
		}
		if co.SigVerifier, err = signature.LoadVerifier(pub, hash); err != nil {
			return nil, nil, fmt.Errorf("failed to load public key: %w", err)
		}
	case a.Certificates != nil:
		c := a.Certificates
		var chain []*x509.Certificate
		if c.CertificateChain != "" {
			if chain, err = cryptoutils.UnmarshalCertificatesFromPEM([]byte(c.CertificateChain)); err != nil || len(chain) == 0 {
				return nil, nil, fmt.Errorf("failed to load certificate chain: %v", err)
			}
		}
		cas = certificateAuthorities(chain)
		if c.Certificate != "" {
			certs, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(c.Certificate))
			if err != nil || len(certs) != 1 {
				return nil, nil, fmt.Errorf("failed to load certificate: want one certificate (%v)", err)
			}
			if len(chain) > 0 {
				leaf, leafChain = certs[0], chain
			} else if co.SigVerifier, err = signature.LoadVerifier(certs[0].PublicKey, crypto.SHA256); err != nil {
				return nil, nil, fmt.Errorf("failed to verify certificate: %w", err)
			}
		} else {
			co.RootCerts, co.IntermediateCerts = certPools(chain)
		}
	case a.Keyless != nil:
		k := a.Keyless
		if k.Roots != "" {
			roots, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(k.Roots))
			if err != nil || len(roots) == 0 {
				return nil, nil, fmt.Errorf("failed to load keyless roots: %v", err)
			}
			co.RootCerts, co.IntermediateCerts = certPools(roots)
			cas = certificateAuthorities(roots)
		}
		co.Identities = []cosign.Identity{{Issuer: k.Issuer, IssuerRegExp: k.IssuerRegExp, Subject: k.Subject, SubjectRegExp: k.SubjectRegExp}}
		if ext := k.AdditionalExtensions; len(ext) > 0 {
			co.CertGithubWorkflowTrigger = ext["githubWorkflowTrigger"]
			co.CertGithubWorkflowSha = ext["githubWorkflowSha"]
			co.CertGithubWorkflowName = ext["githubWorkflowName"]
			co.CertGithubWorkflowRepository = ext["githubWorkflowRepository"]
			co.CertGithubWorkflowRef = ext["githubWorkflowRef"]
		}
	default:
		return nil, nil, errors.New("attestor has no keys, certificates or keyless entry")
	}
	if !co.IgnoreTlog {
		// a signature without its Rekor bundle is looked up in the log at
		// rekor.url (cosign's online verification, rekor.go); without a
		// URL, signatures must carry their bundle
		if rekor.URL == "" {
			co.Offline = true
		} else if co.RekorClient, err = v.rekorClient(rekor.URL); err != nil {
			return nil, nil, err
		}
	}
	if needTrust != "" {
		// cosign then checks log entries, SCTs and certificates with
		// sigstore-go, which honours the validity periods of the root's
		// keys (trust.go)
		if co.TrustedMaterial, err = v.policyTrust(ctx, needTrust, co, cas); err != nil {
			return nil, nil, err
		}
	}
	if leaf != nil {
		if co.SigVerifier, err = cosign.ValidateAndUnpackCertWithChain(leaf, leafChain, co); err != nil {
			return nil, nil, fmt.Errorf("failed to verify certificate: %w", err)
		}
	}
	return ref, co, nil
}

// certsOf returns the certificates an attestor names: certificates' cert
// and certChain, keyless roots.
func certsOf(req engine.ImageVerifyRequest) []*x509.Certificate {
	var pems []string
	if c := req.Attestor.Certificates; c != nil {
		pems = append(pems, c.Certificate, c.CertificateChain)
	}
	if k := req.Attestor.Keyless; k != nil {
		pems = append(pems, k.Roots)
	}
	var out []*x509.Certificate
	for _, p := range pems {
		if p == "" {
			continue
		}
		if certs, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(p)); err == nil {
			out = append(out, certs...)
		}
	}
	return out
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
