package verify

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	"io"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/notaryproject/notation-go"
	notationreg "github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/verifier"
	"github.com/notaryproject/notation-go/verifier/trustpolicy"
	"github.com/notaryproject/notation-go/verifier/truststore"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/gavelpolicy/gavel/engine"
)

// notaryPolicyStore is the trust store of a Notary attestor of an
// ImageValidatingPolicy: its certs as the store "gavel" of type ca, its
// tsaCerts as the store "gavel" of type tsa.
type notaryPolicyStore struct{ ca, tsa []*x509.Certificate }

func (s *notaryPolicyStore) GetCertificates(_ context.Context, t truststore.Type, named string) ([]*x509.Certificate, error) {
	switch {
	case named != "gavel":
	case t == truststore.TypeCA:
		return s.ca, nil
	case t == truststore.TypeTSA && len(s.tsa) > 0:
		return s.tsa, nil
	}
	return nil, fmt.Errorf("no trust store %s:%s", t, named)
}

// notaryPolicyVerifier builds notation's verifier of a Notary attestor: a
// strict trust policy for every registry and identity on its
// certificates, timestamps checked against its TSA certificates when it
// has some, as upstream builds it.
func notaryPolicyVerifier(a policiesv1alpha1.Attestor) (notation.Verifier, error) {
	load := func(what, pem string) ([]*x509.Certificate, error) {
		if pem == "" {
			return nil, nil
		}
		certs, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(pemValue(pem)))
		if err != nil {
			return nil, fmt.Errorf("failed to load %s: %w", what, err)
		}
		return certs, nil
	}
	store := &notaryPolicyStore{}
	var err error
	if n := a.Notary; n.Certs != nil {
		if store.ca, err = load("certificates", n.Certs.Value); err != nil {
			return nil, err
		}
	}
	if len(store.ca) == 0 {
		return nil, errors.New("failed to load certificates: none given")
	}
	if n := a.Notary; n.TSACerts != nil {
		if store.tsa, err = load("TSA certificates", n.TSACerts.Value); err != nil {
			return nil, err
		}
	}
	stores := []string{"ca:gavel"}
	if len(store.tsa) > 0 {
		stores = append(stores, "tsa:gavel")
	}
	policy := &trustpolicy.Document{
		Version: "1.0",
		TrustPolicies: []trustpolicy.TrustPolicy{{
			Name:                  "gavel",
			RegistryScopes:        []string{"*"},
			SignatureVerification: trustpolicy.SignatureVerification{VerificationLevel: trustpolicy.LevelStrict.Name},
			TrustStores:           stores,
			TrustedIdentities:     []string{"*"},
		}},
	}
	nv, err := verifier.New(policy, store, nil)
	if err != nil {
		return nil, fmt.Errorf("failed to build the Notary verifier: %w", err)
	}
	return nv, nil
}

// notaryPolicyVerify verifies the Notary signatures of artifact (a
// reference by digest in the image's repository) with the attestor.
func (v *Verifier) notaryPolicyVerify(ctx context.Context, req engine.ImagePolicyRequest, artifact string) error {
	nv, err := notaryPolicyVerifier(req.Attestor)
	if err != nil {
		return err
	}
	repo, err := v.orasRepository(ctx, engine.ImageVerifyRequest{Image: req.Image, Credentials: classicCredentials(req.Credentials)})
	if err != nil {
		return err
	}
	_, _, err = notation.Verify(ctx, nv, notationreg.NewRepository(repo), notation.VerifyOptions{ArtifactReference: artifact, MaxSignatureAttempts: 10})
	return registryError(err)
}

// notaryPolicyReferrer returns the document of the first OCI referrer of
// the image whose artifactType is the attestation's type and whose Notary
// signature the attestor accepts: the JSON of its single layer, as
// upstream reads it.
func (v *Verifier) notaryPolicyReferrer(ctx context.Context, req engine.ImagePolicyRequest) (any, error) {
	typ := req.Attestation.Referrer.Type
	creds := classicCredentials(req.Credentials)
	ref, err := parseReference(req.Image, creds)
	if err != nil {
		return nil, err
	}
	d, ok := ref.(name.Digest)
	if !ok {
		return nil, fmt.Errorf("attestations of %s: a reference by digest is required", req.Image)
	}
	opts, err := v.remoteOptions(ctx, creds, nil)
	if err != nil {
		return nil, err
	}
	idx, err := remote.Referrers(d, opts...)
	if err != nil {
		return nil, registryError(fmt.Errorf("failed to fetch referrers of %s: %w", req.Image, err))
	}
	list, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(list.Manifests) > maxReferrers {
		return nil, fmt.Errorf("failed to fetch referrers: too many referrers found, max limit is %d", maxReferrers)
	}
	var errs []error
	for _, desc := range list.Manifests {
		if desc.ArtifactType != typ {
			continue
		}
		artifact := d.Context().Digest(desc.Digest.String())
		if err := v.notaryPolicyVerify(ctx, req, artifact.String()); err != nil {
			if stops(ctx, err) {
				return nil, err
			}
			errs = append(errs, fmt.Errorf("failed to verify attestation %s, digest %s: %w", typ, desc.Digest, err))
			continue
		}
		return v.referrerDocument(artifact, opts)
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("attestation verification failed, no attestations found for type: %s", typ)
	}
	return nil, errors.Join(errs...)
}

// referrerDocument reads the JSON document of a referrer's single layer.
func (v *Verifier) referrerDocument(artifact name.Digest, opts []remote.Option) (any, error) {
	img, err := remote.Image(artifact, opts...)
	if err != nil {
		return nil, registryError(err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, registryError(err)
	}
	if len(layers) != 1 {
		return nil, fmt.Errorf("invalid referrer descriptor, must have only one layer")
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		return nil, registryError(err)
	}
	defer rc.Close()
	raw, err := io.ReadAll(rc)
	if err != nil {
		return nil, registryError(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("failed to unmarshal json for attestation %s: %w", artifact.DigestStr(), err)
	}
	return doc, nil
}
