package verify

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	rekorclient "github.com/sigstore/rekor/pkg/generated/client"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/tuf"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// maxPreparedAttestors bounds the attestors a Verifier keeps prepared
// (the least recently used goes first). A policy set names a few; an
// attestor whose keys come from variables may give one per value.
const maxPreparedAttestors = 512

// attestor is what a Verifier makes of an attestor's key material once
// (prepare), before any registry read: the policy's keys, certificates,
// chains, roots, log keys and TSA chain parsed and checked, and cosign's
// options that follow from them alone. Verifications share it: it is
// never modified after prepare.
type attestor struct {
	// err is the attestor's error for cosign's verifications, returned by
	// every one of them
	err error

	// signature verification: a key given in PEM, the key of a policy's
	// certificate, or a certificate verified with its chain once (no
	// trusted root involved); else a Secret or a KMS key read per call
	sigVerifier signature.Verifier
	secret      *api.SecretReference
	kms         string
	hash        crypto.Hash

	// certificate authorities: pools for cosign's legacy verification,
	// cas for the trusted root's (nil: the root's own); a policy's
	// certificate with its chain is verified per call when the trusted
	// root takes part (leaf, leafChain)
	roots, intermediates *x509.CertPool
	cas                  []root.CertificateAuthority
	leaf                 *x509.Certificate
	leafChain            []*x509.Certificate
	// bundleCAs anchor Sigstore bundles on the attestor's certificates
	bundleCAs []root.CertificateAuthority

	identities []cosign.Identity
	github     [5]string // githubWorkflow trigger, sha, name, repository, ref

	// logs and timestamps
	ignoreTlog, ignoreSCT, offline bool
	rekorKeys, ctKeys              *cosign.TrustedTransparencyLogPubKeys
	rekorLogs, ctLogs              map[string]*root.TransparencyLog
	rekorClient                    *rekorclient.Rekor
	tsaLeaf                        *x509.Certificate
	tsaIntermediates, tsaRoots     []*x509.Certificate
	tsas                           []root.TimestampingAuthority
	useTSA                         bool // a TSA chain is given
	// needTrust names the policy field that leaves its trust to
	// Sigstore's trusted root (empty: none does)
	needTrust string

	// notaryCerts are the certificates attestor's cert and certChain, the
	// trust store of Notary verifications (notaryErr when they do not
	// parse)
	notaryCerts []*x509.Certificate
	notaryErr   error
}

// prepared returns the attestor prepared for a, from the Verifier's
// cache of prepared attestors (keyed by the attestor's JSON text: equal
// attestors share one) or prepared now.
func (v *Verifier) prepared(a api.Attestor) *attestor {
	raw, err := json.Marshal(a)
	if err != nil {
		return &attestor{err: err, notaryErr: err}
	}
	key := string(raw)
	if p, ok := v.attestors.Get(key); ok {
		return p.(*attestor)
	}
	p := v.prepare(a)
	v.attestors.Add(key, p)
	return p
}

// prepare parses and checks an attestor's key material; what it cannot
// use is the attestor's error, with the messages of cosign's parsers.
func (v *Verifier) prepare(a api.Attestor) *attestor {
	p := &attestor{}
	p.notaryCerts, p.notaryErr = notaryCertificates(a)
	rekorURL, err := p.logs(v, a)
	if err != nil {
		p.err = err
		return p
	}
	switch {
	case a.Keys != nil:
		err = p.keys(a.Keys)
	case a.Certificates != nil:
		err = p.certificates(a.Certificates)
	case a.Keyless != nil:
		err = p.keyless(a.Keyless)
	default:
		err = errors.New("attestor has no keys, certificates or keyless entry")
	}
	if err == nil && rekorURL != "" {
		p.rekorClient, err = v.rekorClient(rekorURL)
	}
	if err == nil && p.needTrust == "" && p.leaf != nil {
		// verified once: without the trusted root, the check of a
		// certificate with its chain depends on the policy alone (cosign
		// checks chains at the certificate's own time)
		co := &cosign.CheckOpts{IgnoreSCT: p.ignoreSCT, CTLogPubKeys: p.ctKeys}
		if p.sigVerifier, err = cosign.ValidateAndUnpackCertWithChain(p.leaf, p.leafChain, co); err != nil {
			err = fmt.Errorf("failed to verify certificate: %w", err)
		}
		p.roots, p.intermediates = co.RootCerts, co.IntermediateCerts
		p.leaf, p.leafChain = nil, nil
	}
	p.err = err
	return p
}

// logs prepares the attestor's Rekor and CT options, and whether
// Sigstore's trusted root must give what the policy leaves out.
func (p *attestor) logs(v *Verifier, a api.Attestor) (rekorURL string, err error) {
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
	p.ignoreSCT = ctlog != nil && ctlog.IgnoreSCT
	if ctlog != nil && ctlog.PubKey != "" {
		if p.ctKeys, p.ctLogs, err = logKeys(ctlog.PubKey); err != nil {
			return "", fmt.Errorf("failed to load ctlog public key: %w", err)
		}
	}
	if ctlog != nil && ctlog.TSACertChain != "" {
		if err := p.tsaChain(ctlog.TSACertChain); err != nil {
			return "", err
		}
	}
	p.ignoreTlog = rekor == nil || rekor.IgnoreTlog
	if !p.ignoreTlog && rekor.PubKey != "" {
		if p.rekorKeys, p.rekorLogs, err = logKeys(rekor.PubKey); err != nil {
			return "", fmt.Errorf("failed to load rekor public key: %w", err)
		}
	}
	// keyless without roots verifies with Sigstore's trusted root, which
	// gives the logs the policy does not; so do other attestors whose log
	// keys the policy leaves out
	switch {
	case a.Keyless != nil && a.Keyless.Roots == "":
		p.needTrust = "keyless verification without roots"
	case a.Keys == nil && !p.ignoreSCT && p.ctKeys == nil:
		if v.trust == nil {
			return "", errors.New("checking certificate transparency needs ctlog.pubkey (or ctlog.ignoreSCT: true, or the Verifier's Sigstore trusted root)")
		}
		p.needTrust = "ctlog without pubkey"
	case !p.ignoreTlog && p.rekorKeys == nil:
		if v.trust == nil {
			return "", errors.New("checking the transparency log needs rekor.pubkey (or rekor.ignoreTlog: true, or the Verifier's Sigstore trusted root)")
		}
		p.needTrust = "rekor without pubkey"
	}
	// a signature without its Rekor bundle is looked up in the log at
	// rekor.url (cosign's online verification, rekor.go); without a URL,
	// signatures must carry their bundle
	if p.ignoreTlog {
		return "", nil
	}
	p.offline = rekor.URL == ""
	return rekor.URL, nil
}

// logKeys parses a log's PEM public key, as cosign's key map and as the
// trusted root's form of it.
func logKeys(pem string) (*cosign.TrustedTransparencyLogPubKeys, map[string]*root.TransparencyLog, error) {
	keys := cosign.NewTrustedTransparencyLogPubKeys()
	if err := keys.AddTransparencyLogPubKey([]byte(pem), tuf.Active); err != nil {
		return nil, nil, err
	}
	logs, err := pemLogs(&keys)
	if err != nil {
		return nil, nil, err
	}
	return &keys, logs, nil
}

// tsaChain splits a TSA certificate chain: the leaf first, then
// intermediates, the root last.
func (p *attestor) tsaChain(pem string) error {
	chain, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(pem))
	if err != nil || len(chain) == 0 {
		return fmt.Errorf("failed to load the TSA certificate chain: %v", err)
	}
	p.useTSA = true
	for _, c := range chain {
		switch {
		case c.CheckSignatureFrom(c) == nil:
			p.tsaRoots = append(p.tsaRoots, c)
		case !c.IsCA && p.tsaLeaf == nil:
			p.tsaLeaf = c
		default:
			p.tsaIntermediates = append(p.tsaIntermediates, c)
		}
	}
	for _, r := range p.tsaRoots {
		p.tsas = append(p.tsas, &root.SigstoreTimestampingAuthority{Root: r, Intermediates: p.tsaIntermediates, Leaf: p.tsaLeaf})
	}
	return nil
}

// keys prepares a keys attestor: a PEM key is parsed now; a Secret
// (secret, or upstream's k8s://namespace/name form as a key or a KMS
// reference) and a KMS key are read per verification.
func (p *attestor) keys(k *api.StaticKeyAttestor) error {
	p.hash = crypto.SHA256
	if k.SignatureAlgorithm == "sha512" {
		p.hash = crypto.SHA512
	}
	p.secret = k.Secret
	if p.secret == nil {
		ref := k.PublicKeys
		if strings.TrimSpace(ref) == "" {
			ref = k.KMS
		}
		if s, ok, err := secretKeyRef(ref); ok {
			if err != nil {
				return err
			}
			p.secret = s
		}
	}
	switch {
	case p.secret != nil:
	case strings.TrimSpace(k.PublicKeys) == "" && k.KMS != "":
		p.kms = k.KMS
	default:
		var err error
		p.sigVerifier, err = loadPublicKey([]byte(k.PublicKeys), p.hash)
		return err
	}
	return nil
}

// loadPublicKey is the verifier of a PEM public key.
func loadPublicKey(pem []byte, hash crypto.Hash) (signature.Verifier, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pem)
	if err != nil {
		return nil, fmt.Errorf("failed to load public key: %w", err)
	}
	sv, err := signature.LoadVerifier(pub, hash)
	if err != nil {
		return nil, fmt.Errorf("failed to load public key: %w", err)
	}
	return sv, nil
}

// certificates prepares a certificates attestor: its chain as the
// certificate authorities; its certificate, alone, as the key, or with
// the chain, verified by it.
func (p *attestor) certificates(c *api.CertificateAttestor) error {
	var chain []*x509.Certificate
	var err error
	if c.CertificateChain != "" {
		if chain, err = cryptoutils.UnmarshalCertificatesFromPEM([]byte(c.CertificateChain)); err != nil || len(chain) == 0 {
			return fmt.Errorf("failed to load certificate chain: %v", err)
		}
	}
	p.cas = certificateAuthorities(chain)
	var certs []*x509.Certificate
	if c.Certificate != "" {
		certs, err = cryptoutils.UnmarshalCertificatesFromPEM([]byte(c.Certificate))
		if err != nil || len(certs) != 1 {
			return fmt.Errorf("failed to load certificate: want one certificate (%v)", err)
		}
	}
	p.bundleCAs = bundleAuthorities(append(certs, chain...))
	switch {
	case c.Certificate == "":
		p.roots, p.intermediates = certPools(chain)
	case len(chain) > 0:
		p.leaf, p.leafChain = certs[0], chain
	default:
		if p.sigVerifier, err = signature.LoadVerifier(certs[0].PublicKey, crypto.SHA256); err != nil {
			return fmt.Errorf("failed to verify certificate: %w", err)
		}
	}
	return nil
}

// keyless prepares a keyless attestor: its roots and the identity its
// certificates must name.
func (p *attestor) keyless(k *api.KeylessAttestor) error {
	if k.Roots != "" {
		roots, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(k.Roots))
		if err != nil || len(roots) == 0 {
			return fmt.Errorf("failed to load keyless roots: %v", err)
		}
		p.roots, p.intermediates = certPools(roots)
		p.cas = certificateAuthorities(roots)
		p.bundleCAs = bundleAuthorities(roots)
	}
	p.identities = []cosign.Identity{{Issuer: k.Issuer, IssuerRegExp: k.IssuerRegExp, Subject: k.Subject, SubjectRegExp: k.SubjectRegExp}}
	if ext := k.AdditionalExtensions; len(ext) > 0 {
		p.github = [5]string{ext["githubWorkflowTrigger"], ext["githubWorkflowSha"], ext["githubWorkflowName"],
			ext["githubWorkflowRepository"], ext["githubWorkflowRef"]}
	}
	return nil
}

// bundleAuthorities are the certificate authorities of Sigstore bundles
// (type SigstoreBundle) verified with an attestor's own certificates:
// each self-signed certificate a root, the other CA certificates
// intermediates of every root.
func bundleAuthorities(certs []*x509.Certificate) []root.CertificateAuthority {
	var roots, intermediates []*x509.Certificate
	for _, c := range certs {
		switch {
		case c.CheckSignatureFrom(c) == nil:
			roots = append(roots, c)
		case c.IsCA:
			intermediates = append(intermediates, c)
		}
	}
	var cas []root.CertificateAuthority
	for _, r := range roots {
		cas = append(cas, &root.FulcioCertificateAuthority{Root: r, Intermediates: intermediates})
	}
	return cas
}

// notaryCertificates are the certificates of a certificates attestor
// (cert, then certChain), the trust store of Notary signatures.
func notaryCertificates(a api.Attestor) ([]*x509.Certificate, error) {
	c := a.Certificates
	if c == nil {
		return nil, errors.New("Notary signatures are verified with certificates attestors (cert, certChain)")
	}
	var certs []*x509.Certificate
	for _, pem := range []string{c.Certificate, c.CertificateChain} {
		if pem == "" {
			continue
		}
		list, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(pem))
		if err != nil {
			return nil, fmt.Errorf("failed to load certificates: %w", err)
		}
		certs = append(certs, list...)
	}
	if len(certs) == 0 {
		return nil, errors.New("failed to load certificates: none given")
	}
	return certs, nil
}

// notary returns the trust store of Notary verifications.
func (p *attestor) notary() ([]*x509.Certificate, error) { return p.notaryCerts, p.notaryErr }

// checkOpts turns a request into cosign's options (ref is nil when
// req.Image is empty: a blob's signature, see manifest.go), from the
// attestor prepared once and what each verification reads: registry
// credentials, a key kept in a Secret or a KMS, Sigstore's trusted root.
func (v *Verifier) checkOpts(ctx context.Context, req engine.ImageVerifyRequest) (name.Reference, *cosign.CheckOpts, *attestor, error) {
	var ref name.Reference
	var err error
	if req.Image != "" {
		if ref, err = parseReference(req.Image, req.Credentials); err != nil {
			return nil, nil, nil, err
		}
	}
	ropts, err := v.remoteOptions(ctx, req.Credentials, req.PullSecrets)
	if err != nil {
		return nil, nil, nil, err
	}
	a := v.prepared(req.Attestor)
	if a.err != nil {
		return nil, nil, nil, a.err
	}
	regOpts := []ociremote.Option{ociremote.WithRemoteOptions(ropts...)}
	if req.Repository != "" {
		repo, err := name.NewRepository(req.Repository)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("invalid signature repository %s: %w", req.Repository, err)
		}
		regOpts = append(regOpts, ociremote.WithTargetRepository(repo))
	}
	co := &cosign.CheckOpts{RegistryClientOpts: regOpts, ExperimentalOCI11: req.CosignOCI11,
		IgnoreSCT: a.ignoreSCT, IgnoreTlog: a.ignoreTlog, Offline: a.offline, RekorClient: a.rekorClient,
		SigVerifier: a.sigVerifier, RootCerts: a.roots, IntermediateCerts: a.intermediates, Identities: a.identities,
		CertGithubWorkflowTrigger: a.github[0], CertGithubWorkflowSha: a.github[1], CertGithubWorkflowName: a.github[2],
		CertGithubWorkflowRepository: a.github[3], CertGithubWorkflowRef: a.github[4]}
	if len(req.Annotations) > 0 {
		co.Annotations = make(map[string]any, len(req.Annotations))
		for k, val := range req.Annotations {
			co.Annotations[k] = val
		}
	}
	if err := v.keyOf(ctx, a, co); err != nil {
		return nil, nil, nil, err
	}
	if a.needTrust == "" {
		co.RekorPubKeys, co.CTLogPubKeys = a.rekorKeys, a.ctKeys
		if a.useTSA {
			co.UseSignedTimestamps = true
			co.TSACertificate, co.TSAIntermediateCertificates, co.TSARootCertificates = a.tsaLeaf, a.tsaIntermediates, a.tsaRoots
		}
		return ref, co, a, nil
	}
	// cosign then checks log entries, SCTs and certificates with
	// sigstore-go, which honours the validity periods of the root's keys
	// (trust.go); cosign takes the trusted material or the pools, never
	// both
	co.UseSignedTimestamps = a.useTSA
	co.RootCerts, co.IntermediateCerts = nil, nil
	if co.TrustedMaterial, err = v.policyTrust(ctx, a); err != nil {
		return nil, nil, nil, err
	}
	if a.leaf != nil {
		leaf := *a.leaf // cosign edits the certificate it checks
		if co.SigVerifier, err = cosign.ValidateAndUnpackCertWithChain(&leaf, a.leafChain, co); err != nil {
			return nil, nil, nil, fmt.Errorf("failed to verify certificate: %w", err)
		}
	}
	return ref, co, a, nil
}

// keyOf sets the verifier of a key read per verification: from a Secret
// or a KMS.
func (v *Verifier) keyOf(ctx context.Context, a *attestor, co *cosign.CheckOpts) error {
	var err error
	switch {
	case a.kms != "":
		co.SigVerifier, err = kmsVerifier(ctx, a.kms, a.hash)
	case a.secret != nil:
		if v.secrets == nil {
			return fmt.Errorf("key from secret %s/%s: %w", a.secret.Namespace, a.secret.Name, engine.ErrNotConfigured)
		}
		data, rerr := v.secrets.SecretData(ctx, a.secret.Namespace, a.secret.Name)
		if rerr != nil {
			return fmt.Errorf("failed to read secret %s/%s: %w", a.secret.Namespace, a.secret.Name, rerr)
		}
		co.SigVerifier, err = loadPublicKey(data["cosign.pub"], a.hash)
	}
	return err
}
