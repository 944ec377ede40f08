package verify

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgtuf "github.com/sigstore/sigstore-go/pkg/tuf"
	"github.com/theupdateframework/go-tuf/v2/metadata"
	"golang.org/x/sync/singleflight"

	"github.com/gavelpolicy/gavel/engine"
)

// WithTrustedRoot sets the Sigstore trusted root (the Fulcio certificate
// authorities, Rekor and CT logs and timestamp authorities of a
// trusted_root.json, read with sigstore-go's root.NewTrustedRootFromJSON),
// for air-gapped clusters or a private Sigstore. It serves what a policy
// leaves out: keyless attestors without roots, rekor and ctlog without
// pubkey. It replaces WithTUF.
func WithTrustedRoot(m root.TrustedMaterial) Option {
	return func(v *Verifier) { v.trust = &staticTrust{m: m} }
}

// TUFOptions locate a TUF repository serving a Sigstore trusted root
// (trusted_root.json), as cosign and upstream fetch Sigstore's public-good
// one.
type TUFOptions struct {
	// RepositoryURL is the repository's base URL; default Sigstore's
	// public-good mirror, https://tuf-repo-cdn.sigstore.dev.
	RepositoryURL string
	// Root is the repository's trusted TUF root.json; default the
	// public-good root that sigstore-go embeds (for the default URL only).
	Root []byte
	// CacheDir keeps the TUF metadata and targets on disk between runs
	// (cosign's is ~/.sigstore/root); empty keeps them in memory only.
	CacheDir string
	// RefreshInterval is how long a fetched trusted root serves before
	// the repository is asked again; default 24 hours. A failed refresh
	// keeps the previous root, and is tried again a minute later at the
	// soonest.
	RefreshInterval time.Duration
}

// WithTUF fetches the trusted root through TUF with sigstore-go's client
// when a policy first needs it, over the Verifier's transport, then every
// RefreshInterval. Concurrent verifications share one fetch, which runs
// for at most a minute whatever their deadlines; each waits for it on its
// own context. It replaces WithTrustedRoot.
func WithTUF(o TUFOptions) Option {
	return func(v *Verifier) { v.trust = &tufTrust{opts: o} }
}

// trustSource gives the Sigstore trusted material.
type trustSource interface {
	material(ctx context.Context, transport http.RoundTripper) (root.TrustedMaterial, error)
}

type staticTrust struct{ m root.TrustedMaterial }

func (s *staticTrust) material(context.Context, http.RoundTripper) (root.TrustedMaterial, error) {
	if s.m == nil {
		return nil, fmt.Errorf("Sigstore trusted root: %w", engine.ErrNotConfigured)
	}
	return s.m, nil
}

// tufTrust fetches and keeps the trusted root of a TUF repository;
// concurrent fetches are made once.
type tufTrust struct {
	opts  TUFOptions
	group singleflight.Group

	mu      sync.Mutex
	root    *root.TrustedRoot
	fetched time.Time
	failed  time.Time // of the last failed refresh
}

// refreshRetry is how long a failed refresh is not tried again while the
// previous root serves: an outage of the repository costs one failed
// fetch a minute, not one per verification.
const refreshRetry = time.Minute

// tufFetchTimeout bounds a fetch of the trusted root, which goes on when
// the verification that started it stops waiting.
const tufFetchTimeout = time.Minute

func (t *tufTrust) material(ctx context.Context, transport http.RoundTripper) (root.TrustedMaterial, error) {
	every := t.opts.RefreshInterval
	if every <= 0 {
		every = 24 * time.Hour
	}
	t.mu.Lock()
	current, fetched, failed := t.root, t.fetched, t.failed
	t.mu.Unlock()
	if current != nil && (time.Since(fetched) < every || time.Since(failed) < min(every, refreshRetry)) {
		return current, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// the fetch serves every verification waiting for it: it runs on a
	// context of its own (the first caller's values, not its deadline),
	// for at most tufFetchTimeout; each caller waits on its own context
	fctx := context.WithoutCancel(ctx)
	ch := t.group.DoChan("", func() (any, error) {
		fctx, cancel := context.WithTimeout(fctx, tufFetchTimeout)
		defer cancel()
		tr, err := t.fetch(fctx, transport)
		if err != nil {
			t.mu.Lock()
			t.failed = time.Now()
			t.mu.Unlock()
			return nil, err
		}
		t.mu.Lock()
		t.root, t.fetched = tr, time.Now()
		t.mu.Unlock()
		return tr, nil
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			if current != nil {
				return current, nil // a failed refresh keeps the previous root
			}
			return nil, r.Err
		}
		return r.Val.(*root.TrustedRoot), nil
	}
}

func (t *tufTrust) fetch(ctx context.Context, transport http.RoundTripper) (*root.TrustedRoot, error) {
	o := &sgtuf.Options{
		RepositoryBaseURL: t.opts.RepositoryURL,
		Root:              t.opts.Root,
		CachePath:         t.opts.CacheDir,
		DisableLocalCache: t.opts.CacheDir == "",
		Fetcher:           &tufFetcher{ctx: ctx, client: &http.Client{Transport: transport}},
	}
	if o.RepositoryBaseURL == "" {
		o.RepositoryBaseURL = sgtuf.DefaultMirror
	}
	if o.Root == nil {
		if o.RepositoryBaseURL != sgtuf.DefaultMirror {
			return nil, fmt.Errorf("TUF repository %s: no trusted root.json (TUFOptions.Root)", o.RepositoryBaseURL)
		}
		o.Root = sgtuf.DefaultRoot()
	}
	tr, err := root.FetchTrustedRootWithOptions(o)
	if err != nil {
		err = fmt.Errorf("failed to fetch the Sigstore trusted root from %s: %w", o.RepositoryBaseURL, err)
		var dl *metadata.ErrDownloadHTTP
		// a repository that cannot be reached, fails or does not answer in
		// time is unavailable
		if errors.Is(ctx.Err(), context.DeadlineExceeded) || registryError(err) != err || errors.As(err, &dl) && dl.StatusCode >= 500 {
			return nil, fmt.Errorf("%w: %w", engine.ErrRegistryUnavailable, err)
		}
		return nil, err
	}
	return tr, nil
}

// tufFetcher is go-tuf's metadata fetcher over the Verifier's transport,
// bound to the context of the verification that asked for the root.
type tufFetcher struct {
	ctx    context.Context
	client *http.Client
}

func (f *tufFetcher) DownloadFile(url string, maxLength int64, _ time.Duration) ([]byte, error) {
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// the updater reads 403 and 404 as "no newer version"
		return nil, &metadata.ErrDownloadHTTP{StatusCode: resp.StatusCode, URL: url}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxLength+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > maxLength {
		return nil, &metadata.ErrDownloadLengthMismatch{Msg: fmt.Sprintf("%s: over %d bytes", url, maxLength)}
	}
	return data, nil
}

// trustedMaterial returns the Verifier's Sigstore trusted root, an error
// wrapping engine.ErrNotConfigured without one; what names the policy
// field that needs it.
func (v *Verifier) trustedMaterial(ctx context.Context, what string) (root.TrustedMaterial, error) {
	if v.trust == nil {
		return nil, fmt.Errorf("%s needs Sigstore's trusted root (verify.WithTUF or verify.WithTrustedRoot): %w", what, engine.ErrNotConfigured)
	}
	m, err := v.trust.material(ctx, v.transport)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return m, nil
}

// policyMaterial is the trusted root with the certificate authorities,
// logs and timestamp authorities a policy gives in place of the root's.
type policyMaterial struct {
	root.TrustedMaterial
	cas           []root.CertificateAuthority
	rekor, ctlogs map[string]*root.TransparencyLog
	tsas          []root.TimestampingAuthority
}

func (m *policyMaterial) FulcioCertificateAuthorities() []root.CertificateAuthority {
	if m.cas != nil {
		return m.cas
	}
	return m.TrustedMaterial.FulcioCertificateAuthorities()
}

func (m *policyMaterial) RekorLogs() map[string]*root.TransparencyLog {
	if m.rekor != nil {
		return m.rekor
	}
	return m.TrustedMaterial.RekorLogs()
}

func (m *policyMaterial) CTLogs() map[string]*root.TransparencyLog {
	if m.ctlogs != nil {
		return m.ctlogs
	}
	return m.TrustedMaterial.CTLogs()
}

func (m *policyMaterial) TimestampingAuthorities() []root.TimestampingAuthority {
	if m.tsas != nil {
		return m.tsas
	}
	return m.TrustedMaterial.TimestampingAuthorities()
}

// policyTrust is cosign's trusted material for an attestor that leaves
// some of its trust to Sigstore's trusted root (a.needTrust names the
// field): the root, with the policy's certificate authorities (cas, nil
// for the root's), rekor and ctlog keys and TSA chain where it gives
// them. cosign then verifies log entries, SCTs and certificates with
// sigstore-go, which honours the validity periods of the root's keys: a
// log key outside its period at an entry's integrated time (an SCT's
// time) does not verify it. cosign's legacy key maps, by contrast, keep
// no period, only a status for which cosign prints to stderr.
func (v *Verifier) policyTrust(ctx context.Context, a *attestor) (root.TrustedMaterial, error) {
	tm, err := v.trustedMaterial(ctx, a.needTrust)
	if err != nil {
		return nil, err
	}
	return &policyMaterial{TrustedMaterial: tm, cas: a.cas, rekor: a.rekorLogs, ctlogs: a.ctLogs, tsas: a.tsas}, nil
}

// withCarriedIntermediates gives cosign, for an attestor whose own
// certificates anchor signatures' certificates (certificates' chain,
// keyless roots) while the trusted root serves its log keys, the
// intermediates the image's signatures (or attestations) carry beside
// the policy's. Cosign's legacy verification takes each signature's
// chain; with trusted material it takes only the material's authorities.
// Intermediates are not trusted: every chain must still end at one of
// the policy's roots. A failed read leaves the material as it is (cosign
// reports it when it reads them again).
func withCarriedIntermediates(ref name.Reference, co *cosign.CheckOpts, attestations bool) {
	m, ok := co.TrustedMaterial.(*policyMaterial)
	if !ok || m.cas == nil || co.SigVerifier != nil || ref == nil {
		return
	}
	digest, err := ociremote.ResolveDigest(ref, co.RegistryClientOpts...)
	if err != nil {
		return
	}
	tag, err := ociremote.SignatureTag(digest, co.RegistryClientOpts...)
	if attestations {
		tag, err = ociremote.AttestationTag(digest, co.RegistryClientOpts...)
	}
	if err != nil {
		return
	}
	sigs, err := ociremote.Signatures(tag, co.RegistryClientOpts...)
	if err != nil {
		return
	}
	list, err := sigs.Get()
	if err != nil {
		return
	}
	var carried []*x509.Certificate
	for _, s := range list {
		// the chain ends with its root, which the policy must give
		if chain, err := s.Chain(); err == nil && len(chain) > 1 {
			carried = append(carried, chain[:len(chain)-1]...)
		}
	}
	if len(carried) == 0 {
		return
	}
	with := *m
	with.cas = make([]root.CertificateAuthority, 0, len(m.cas))
	for _, ca := range m.cas {
		if f, ok := ca.(*root.FulcioCertificateAuthority); ok {
			c := *f
			c.Intermediates = append(slices.Clip(f.Intermediates), carried...)
			ca = &c
		}
		with.cas = append(with.cas, ca)
	}
	co.TrustedMaterial = &with
}

// certificateAuthorities turns a policy's PEM certificates into
// certificate authorities: each self-signed one a root, with the others
// as intermediates. Never nil: a policy without a root trusts none.
func certificateAuthorities(chain []*x509.Certificate) []root.CertificateAuthority {
	cas := []root.CertificateAuthority{}
	var roots, intermediates []*x509.Certificate
	for _, c := range chain {
		if c.CheckSignatureFrom(c) == nil {
			roots = append(roots, c)
		} else {
			intermediates = append(intermediates, c)
		}
	}
	for _, r := range roots {
		cas = append(cas, &root.FulcioCertificateAuthority{Root: r, Intermediates: intermediates})
	}
	return cas
}

// pemLogs turns the policy's log keys, parsed by cosign, into the
// trusted root's form: valid since ever, as the policy gives no period.
func pemLogs(keys *cosign.TrustedTransparencyLogPubKeys) (map[string]*root.TransparencyLog, error) {
	if keys == nil {
		return nil, errors.New("no transparency log key")
	}
	out := map[string]*root.TransparencyLog{}
	for id, k := range keys.Keys {
		raw, err := hex.DecodeString(id)
		if err != nil {
			return nil, fmt.Errorf("transparency log ID %s: %w", id, err)
		}
		out[id] = &root.TransparencyLog{ID: raw, PublicKey: k.PubKey, HashFunc: crypto.SHA256,
			SignatureHashFunc: signatureHash(k.PubKey), ValidityPeriodStart: time.Unix(0, 0)}
	}
	return out, nil
}

// signatureHash is the hash a log key signs with, as trusted roots give
// it: by curve for ECDSA, SHA-512 for Ed25519, else SHA-256.
func signatureHash(pub crypto.PublicKey) crypto.Hash {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P384():
			return crypto.SHA384
		case elliptic.P521():
			return crypto.SHA512
		}
	case ed25519.PublicKey:
		return crypto.SHA512
	}
	return crypto.SHA256
}
