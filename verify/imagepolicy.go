package verify

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	"strings"
	"sync"

	"github.com/sigstore/sigstore-go/pkg/root"
	"k8s.io/utils/lru"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// This file is the Verifier's side of ImageValidatingPolicies
// (engine.ImagePolicyVerifier). A Cosign attestor is verified as the
// attestors of verifyImages rules are (the same code: keys, KMS keys,
// certificates, keyless identities with roots, Rekor and CT options,
// Sigstore bundles), each keyless identity as one attestor; a Notary
// attestor with its timestamp authorities by notation-go (notarypolicy.go).

var _ engine.ImagePolicyVerifier = (*Verifier)(nil)

// VerifyImagePolicySignature implements engine.ImagePolicyVerifier: a
// Cosign signature (or a Sigstore bundle signing the image) that one of
// the attestor's identities accepts, or a Notary signature.
func (v *Verifier) VerifyImagePolicySignature(ctx context.Context, req engine.ImagePolicyRequest) error {
	switch a := req.Attestor; {
	case a.Notary != nil:
		return v.notaryPolicyVerify(ctx, req, req.Image)
	case a.Cosign != nil:
		d, reqs, err := v.cosignRequests(ctx, req)
		if err != nil {
			return err
		}
		return firstVerified(ctx, reqs, func(r engine.ImageVerifyRequest) error {
			err := d.VerifySignature(ctx, r)
			if err == nil || stops(ctx, err) {
				return err
			}
			// cosign v3 signs with Sigstore bundles (OCI referrers)
			r.Type = "SigstoreBundle"
			if berr := d.VerifySignature(ctx, r); berr == nil || stops(ctx, berr) {
				return berr
			}
			return err
		})
	}
	return errors.New("the attestor has neither cosign nor notary")
}

// VerifyImagePolicyAttestation implements engine.ImagePolicyVerifier: the
// in-toto statement of the predicate type (Cosign), or the document of an
// OCI referrer of the artifact type (Notary), whose signature the attestor
// accepts.
func (v *Verifier) VerifyImagePolicyAttestation(ctx context.Context, req engine.ImagePolicyRequest) (any, error) {
	at := req.Attestation
	if at == nil {
		return nil, errors.New("no attestation to verify")
	}
	switch a := req.Attestor; {
	case a.Notary != nil:
		if at.Referrer == nil {
			return nil, errors.New("notary verifier only supports oci 1.1 referrers as attestations")
		}
		return v.notaryPolicyReferrer(ctx, req)
	case a.Cosign != nil:
		if at.InToto == nil {
			return nil, errors.New("cosign verifier only supports intoto attestations")
		}
		d, reqs, err := v.cosignRequests(ctx, req)
		if err != nil {
			return nil, err
		}
		var out any
		err = firstVerified(ctx, reqs, func(r engine.ImageVerifyRequest) error {
			r.PredicateType = predicateURI(at.InToto.Type)
			statements, err := d.FetchAttestations(ctx, r)
			if err != nil && !stops(ctx, err) {
				// Sigstore bundles (cosign v3) carry attestations too
				r.Type = "SigstoreBundle"
				if bs, berr := d.FetchAttestations(ctx, r); berr == nil || stops(ctx, berr) {
					statements, err = bs, berr
				}
			}
			if err != nil {
				return err
			}
			if len(statements) == 0 {
				return fmt.Errorf("required predicate type %s not found", at.InToto.Type)
			}
			// as upstream, the last statement of the type is the payload
			out = statements[len(statements)-1]
			return nil
		})
		return out, err
	}
	return nil, errors.New("the attestor has neither cosign nor notary")
}

// stops reports an error no other identity or format can get past.
func stops(ctx context.Context, err error) bool {
	return errors.Is(err, engine.ErrRegistryUnavailable) || errors.Is(err, engine.ErrNotConfigured) || ctx.Err() != nil
}

// firstVerified tries the requests in order until one verifies; it returns
// the error that stopped it, or all of them.
func firstVerified(ctx context.Context, reqs []engine.ImageVerifyRequest, verify func(engine.ImageVerifyRequest) error) error {
	var errs []error
	for _, r := range reqs {
		err := verify(r)
		if err == nil {
			return nil
		}
		if stops(ctx, err) {
			return err
		}
		errs = append(errs, err)
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// predicateTypes are cosign's short names of predicate types
// (cosign attest --type).
var predicateTypes = map[string]string{
	"custom":           "https://cosign.sigstore.dev/attestation/v1",
	"slsaprovenance":   "https://slsa.dev/provenance/v0.2",
	"slsaprovenance02": "https://slsa.dev/provenance/v0.2",
	"slsaprovenance1":  "https://slsa.dev/provenance/v1",
	"spdx":             "https://spdx.dev/Document",
	"spdxjson":         "https://spdx.dev/Document",
	"cyclonedx":        "https://cyclonedx.org/bom",
	"link":             "https://in-toto.io/Link/v1",
	"vuln":             "https://cosign.sigstore.dev/attestation/vuln/v1",
	"openvex":          "https://openvex.dev/ns",
}

func predicateURI(t string) string {
	if u, ok := predicateTypes[t]; ok {
		return u
	}
	return t
}

// cosignRequests translates a Cosign attestor of an ImageValidatingPolicy
// into the requests of verifyImages attestors (one per keyless identity),
// and the Verifier that answers them: this one, or one with the
// attestor's own trusted root (trustedRoot, tuf).
func (v *Verifier) cosignRequests(ctx context.Context, req engine.ImagePolicyRequest) (*Verifier, []engine.ImageVerifyRequest, error) {
	c := req.Attestor.Cosign
	base := engine.ImageVerifyRequest{Type: "Cosign", Image: req.Image, Annotations: c.Annotations, Credentials: classicCredentials(req.Credentials)}
	if s := c.Source; s != nil {
		if s.TagPrefix != "" {
			return nil, nil, fmt.Errorf("cosign.source.tagPrefix is not supported by gavel's verifier: %w", engine.ErrNotConfigured)
		}
		base.Repository = s.Repository
		if len(s.SignaturePullSecrets) > 0 {
			creds := api.ImageRegistryCredentials{}
			if base.Credentials != nil {
				creds = *base.Credentials
			}
			creds.Secrets = append([]string(nil), creds.Secrets...)
			for _, ps := range s.SignaturePullSecrets {
				creds.Secrets = append(creds.Secrets, ps.Name)
			}
			base.Credentials = &creds
		}
	}
	rekor, ctlog := logOptions(req.Attestor)
	var out []engine.ImageVerifyRequest
	switch {
	case c.Keyless != nil:
		for _, id := range c.Keyless.Identities {
			r := base
			r.Attestor = api.Attestor{Keyless: &api.KeylessAttestor{Issuer: id.Issuer, IssuerRegExp: id.IssuerRegExp, Subject: id.Subject,
				SubjectRegExp: id.SubjectRegExp, Roots: c.Keyless.Roots, AdditionalExtensions: c.Keyless.AdditionalExtensions, Rekor: rekor, CTLog: ctlog}}
			out = append(out, r)
		}
		if len(out) == 0 {
			return nil, nil, errors.New("keyless attestor without identities")
		}
	case c.Key != nil:
		switch c.Key.HashAlgorithm {
		case "", "sha256", "sha512":
		default:
			return nil, nil, fmt.Errorf("cosign.key.hashAlgorithm %s is not supported by gavel's verifier (sha256, sha512): %w", c.Key.HashAlgorithm, engine.ErrNotConfigured)
		}
		r := base
		r.Attestor = api.Attestor{Keys: &api.StaticKeyAttestor{PublicKeys: c.Key.Data, KMS: c.Key.KMS, SignatureAlgorithm: c.Key.HashAlgorithm, Rekor: rekor, CTLog: ctlog}}
		out = append(out, r)
	case c.Certificate != nil:
		cert := &api.CertificateAttestor{Rekor: rekor, CTLog: ctlog}
		if s := c.Certificate.Certificate; s != nil {
			cert.Certificate = pemValue(s.Value)
		}
		if s := c.Certificate.CertificateChain; s != nil {
			cert.CertificateChain = pemValue(s.Value)
		}
		r := base
		r.Attestor = api.Attestor{Certificates: cert}
		out = append(out, r)
	default:
		return nil, nil, errors.New("cosign verifier needs to have one key, keyless or certificate fields set")
	}
	d, err := v.attestorTrust(ctx, req.Attestor)
	if err != nil {
		return nil, nil, err
	}
	return d, out, nil
}

// logOptions are the Rekor and CT options of a Cosign attestor: its
// ctlog, or without one the transparency log and certificate transparency
// checked with Sigstore's trusted root, as upstream defaults them.
func logOptions(a policiesv1alpha1.Attestor) (*api.Rekor, *api.CTLog) {
	l := a.Cosign.CTLog
	if l == nil {
		return &api.Rekor{}, &api.CTLog{}
	}
	return &api.Rekor{URL: l.URL, PubKey: l.RekorPubKey, IgnoreTlog: l.InsecureIgnoreTlog},
		&api.CTLog{PubKey: l.CTLogPubKey, TSACertChain: l.TSACertChain, IgnoreSCT: l.InsecureIgnoreSCT}
}

// pemValue is a certificate value: PEM, or PEM in base64 (upstream
// decodes a certificate given so).
func pemValue(s string) string {
	if strings.Contains(s, "-----BEGIN") {
		return s
	}
	if dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s)); err == nil && strings.Contains(string(dec), "-----BEGIN") {
		return string(dec)
	}
	return s
}

// classicCredentials converts an ImageValidatingPolicy's credentials.
func classicCredentials(c *policiesv1alpha1.Credentials) *api.ImageRegistryCredentials {
	if c == nil {
		return nil
	}
	out := &api.ImageRegistryCredentials{AllowInsecureRegistry: c.AllowInsecureRegistry, Secrets: c.Secrets}
	for _, p := range c.Providers {
		out.Providers = append(out.Providers, string(p))
	}
	return out
}

// maxTrustedRootBytes bounds an attestor's trusted root JSON, as
// upstream's (GitHub's is about 26 KB).
const maxTrustedRootBytes = 1 << 20

// attestorTrust returns the Verifier that checks an attestor: this one,
// or, for an attestor with its own Sigstore trusted root (trustedRoot, the
// JSON of a trusted_root.json; or tuf, a TUF repository given by mirror
// and root data), one that uses it where the policy leaves logs and
// authorities out. Those are kept by their trust (trustCache), so that a
// TUF repository is fetched once per refresh interval.
func (v *Verifier) attestorTrust(ctx context.Context, a policiesv1alpha1.Attestor) (*Verifier, error) {
	c := a.Cosign
	var key string
	var src func() (trustSource, error)
	switch {
	case c.TrustedRoot != nil && c.TrustedRoot.Value != "":
		raw := c.TrustedRoot.Value
		if len(raw) > maxTrustedRootBytes {
			return nil, fmt.Errorf("inline trustedRoot JSON is too large (%d bytes), maximum allowed is %d bytes", len(raw), maxTrustedRootBytes)
		}
		key = "root\x00" + raw
		src = func() (trustSource, error) {
			tr, err := root.NewTrustedRootFromJSON([]byte(raw))
			if err != nil {
				return nil, fmt.Errorf("parsing inline trustedRoot JSON: %w", err)
			}
			return &staticTrust{m: tr}, nil
		}
	case c.TUF != nil:
		t := c.TUF
		if t.Root.Path != "" {
			return nil, fmt.Errorf("cosign.tuf.root.path is not supported by gavel's verifier (it reads no file a policy names): give root.data: %w", engine.ErrNotConfigured)
		}
		key = "tuf\x00" + t.Mirror + "\x00" + t.Root.Data
		src = func() (trustSource, error) {
			o := TUFOptions{RepositoryURL: t.Mirror}
			if t.Root.Data != "" {
				b, err := base64.StdEncoding.DecodeString(t.Root.Data)
				if err != nil {
					return nil, fmt.Errorf("failed to base64-decode inline TUF root data: %w", err)
				}
				o.Root = b
			}
			if tt, ok := v.trust.(*tufTrust); ok {
				o.RefreshInterval = tt.opts.RefreshInterval
			}
			return &tufTrust{opts: o}, nil
		}
	default:
		return v, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return v.trusts.get(key, func() (*Verifier, error) {
		s, err := src()
		if err != nil {
			return nil, err
		}
		d := *v
		d.trust = s
		// attestors are prepared against the trust: the copy keeps its own
		d.attestors = lru.New(maxPreparedAttestors)
		return &d, nil
	})
}

// trustCache keeps the Verifiers of attestors' own trusted roots, by
// trust; at most maxAttestorTrusts (then it starts over).
type trustCache struct {
	mu sync.Mutex
	by map[string]*Verifier
}

const maxAttestorTrusts = 64

func (c *trustCache) get(key string, make func() (*Verifier, error)) (*Verifier, error) {
	sum := sha256.Sum256([]byte(key))
	k := hex.EncodeToString(sum[:])
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.by[k]; ok {
		return d, nil
	}
	d, err := make()
	if err != nil {
		return nil, err
	}
	if c.by == nil || len(c.by) >= maxAttestorTrusts {
		c.by = map[string]*Verifier{}
	}
	c.by[k] = d
	return d, nil
}
