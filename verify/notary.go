package verify

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	_ "github.com/notaryproject/notation-core-go/signature/cose" // COSE envelopes
	_ "github.com/notaryproject/notation-core-go/signature/jws"  // JWS envelopes
	"github.com/notaryproject/notation-go"
	notationreg "github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/verifier"
	"github.com/notaryproject/notation-go/verifier/trustpolicy"
	"github.com/notaryproject/notation-go/verifier/truststore"
	orasremote "oras.land/oras-go/v2/registry/remote"
	orasauth "oras.land/oras-go/v2/registry/remote/auth"

	"github.com/gavelpolicy/gavel/engine"
)

// notaryStore is the trust store of one attestor: its certificates as the
// one named store "gavel" of type ca.
type notaryStore []*x509.Certificate

func (s notaryStore) GetCertificates(_ context.Context, t truststore.Type, named string) ([]*x509.Certificate, error) {
	if t != truststore.TypeCA || named != "gavel" {
		return nil, fmt.Errorf("no trust store %s:%s", t, named)
	}
	return s, nil
}

// verifyNotary checks Notary signatures with notation-go: the attestor's
// certificates (cert and certChain) are the trust store of a strict trust
// policy for every registry and identity, as upstream builds it.
func (v *Verifier) verifyNotary(ctx context.Context, req engine.ImageVerifyRequest) error {
	return v.notaryVerify(ctx, req, req.Image)
}

// notaryVerify verifies the Notary signatures of artifact, a reference by
// digest in req's repository.
func (v *Verifier) notaryVerify(ctx context.Context, req engine.ImageVerifyRequest, artifact string) error {
	certs, err := v.prepared(req.Attestor).notary()
	if err != nil {
		return err
	}
	policy := &trustpolicy.Document{
		Version: "1.0",
		TrustPolicies: []trustpolicy.TrustPolicy{{
			Name:                  "gavel",
			RegistryScopes:        []string{"*"},
			SignatureVerification: trustpolicy.SignatureVerification{VerificationLevel: trustpolicy.LevelStrict.Name},
			TrustStores:           []string{"ca:gavel"},
			TrustedIdentities:     []string{"*"},
		}},
	}
	nv, err := verifier.New(policy, notaryStore(certs), nil)
	if err != nil {
		return fmt.Errorf("failed to build the Notary verifier: %w", err)
	}
	repo, err := v.orasRepository(ctx, req)
	if err != nil {
		return err
	}
	_, _, err = notation.Verify(ctx, nv, notationreg.NewRepository(repo), notation.VerifyOptions{
		ArtifactReference:    artifact,
		MaxSignatureAttempts: 10,
		UserMetadata:         req.Annotations,
	})
	if err != nil {
		return registryError(err)
	}
	return nil
}

// orasRepository opens the image's repository (or req.Repository) with
// the Verifier's transport and keychain.
func (v *Verifier) orasRepository(ctx context.Context, req engine.ImageVerifyRequest) (*orasremote.Repository, error) {
	ref, err := parseReference(req.Image, req.Credentials)
	if err != nil {
		return nil, err
	}
	repoName := ref.Context()
	if req.Repository != "" {
		if repoName, err = name.NewRepository(req.Repository); err != nil {
			return nil, fmt.Errorf("invalid signature repository %s: %w", req.Repository, err)
		}
	}
	repo, err := orasremote.NewRepository(repoName.Name())
	if err != nil {
		return nil, err
	}
	repo.PlainHTTP = repoName.Registry.Scheme() == "http"
	keychain, err := v.keychainFor(ctx, req.Credentials, req.PullSecrets)
	if err != nil {
		return nil, err
	}
	repo.Client = &orasauth.Client{
		Client: &http.Client{Transport: &limitTransport{next: v.transport, max: v.maxBytes}},
		Credential: func(ctx context.Context, host string) (orasauth.Credential, error) {
			a, err := keychain.Resolve(repoName.Registry)
			if err != nil {
				return orasauth.EmptyCredential, err
			}
			cfg, err := a.Authorization()
			if err != nil || cfg == nil || *cfg == (authn.AuthConfig{}) {
				return orasauth.EmptyCredential, err
			}
			return orasauth.Credential{Username: cfg.Username, Password: cfg.Password, AccessToken: cfg.RegistryToken, RefreshToken: cfg.IdentityToken}, nil
		},
	}
	return repo, nil
}

// maxReferrers bounds the referrers read for Notary attestations, as
// upstream does against images with abnormally many.
const maxReferrers = 50

// fetchNotaryAttestations returns the attestations of a Notary-signed
// image: its OCI referrers whose artifactType is req.PredicateType and
// whose own Notary signature req's certificates accept, each read as a
// statement {"type", "predicateType", "predicate"} from its single layer
// (a JSON document), as upstream reads them.
func (v *Verifier) fetchNotaryAttestations(ctx context.Context, req engine.ImageVerifyRequest) ([]map[string]any, error) {
	ref, err := parseReference(req.Image, req.Credentials)
	if err != nil {
		return nil, err
	}
	d, ok := ref.(name.Digest)
	if !ok {
		return nil, fmt.Errorf("attestations of %s: a reference by digest is required", req.Image)
	}
	opts, err := v.remoteOptions(ctx, req.Credentials, req.PullSecrets)
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
	var out []map[string]any
	var errs []error
	for _, desc := range list.Manifests {
		if desc.ArtifactType != req.PredicateType {
			continue
		}
		artifact := d.Context().Digest(desc.Digest.String())
		if err := v.notaryVerify(ctx, req, artifact.String()); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", desc.Digest, err))
			continue
		}
		img, err := remote.Image(artifact, opts...)
		if err != nil {
			return nil, registryError(err)
		}
		layers, err := img.Layers()
		if err != nil {
			return nil, registryError(err)
		}
		if len(layers) != 1 {
			return nil, fmt.Errorf("attestation %s: want one layer, found %d", desc.Digest, len(layers))
		}
		rc, err := layers[0].Compressed()
		if err != nil {
			return nil, registryError(err)
		}
		raw, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, registryError(err)
		}
		var predicate map[string]any
		if err := json.Unmarshal(raw, &predicate); err != nil {
			return nil, fmt.Errorf("attestation %s: the predicate is not a JSON object: %w", desc.Digest, err)
		}
		out = append(out, map[string]any{"type": req.PredicateType, "predicateType": req.PredicateType, "predicate": predicate})
	}
	if len(out) == 0 {
		if len(errs) > 0 {
			return nil, fmt.Errorf("no matching attestations: %w", errors.Join(errs...))
		}
		return nil, fmt.Errorf("no attestations of type %s", req.PredicateType)
	}
	return out, nil
}
