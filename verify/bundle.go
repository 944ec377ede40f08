package verify

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/gavelpolicy/gavel/engine"
)

// rootsMaterial is the trusted material of an attestor's own roots: its
// certificates as the Fulcio certificate authorities, no logs.
type rootsMaterial struct {
	root.BaseTrustedMaterial
	cas []root.CertificateAuthority
}

func (m *rootsMaterial) FulcioCertificateAuthorities() []root.CertificateAuthority { return m.cas }

// bundleOpts prepares cosign's options for Sigstore bundles (type
// SigstoreBundle): keys verify through cosign's key material, keyless and
// certificates through the attestor's roots.
func (v *Verifier) bundleOpts(ctx context.Context, req engine.ImageVerifyRequest) (name.Reference, *cosign.CheckOpts, error) {
	ref, co, a, err := v.checkOpts(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	co.NewBundleFormat = true
	if co.TrustedMaterial != nil {
		return ref, co, nil // the Sigstore trusted root serves what the policy leaves out
	}
	if co.SigVerifier != nil {
		co.TrustedMaterial = &root.BaseTrustedMaterial{}
		return ref, co, nil
	}
	if co.RootCerts == nil {
		return nil, nil, errors.New("Sigstore bundles are verified with keys, or certificates and keyless attestors with roots")
	}
	if len(a.bundleCAs) == 0 {
		return nil, nil, errors.New("no root certificate among the attestor's certificates")
	}
	co.TrustedMaterial = &rootsMaterial{cas: a.bundleCAs}
	return ref, co, nil
}

// verifyBundleSignature checks the image's Sigstore bundles that sign its
// digest (message signatures): one verifying is enough.
func (v *Verifier) verifyBundleSignature(ctx context.Context, req engine.ImageVerifyRequest) error {
	ref, co, err := v.bundleOpts(ctx, req)
	if err != nil {
		return err
	}
	bundles, hash, err := cosign.GetBundles(ctx, ref, co)
	if err != nil {
		return registryError(err)
	}
	digest, err := hex.DecodeString(hash.Hex)
	if err != nil {
		return err
	}
	var errs []error
	for _, b := range bundles {
		if b.GetMessageSignature() == nil {
			continue // an attestation (DSSE), not a signature of the image
		}
		if _, err := cosign.VerifyNewBundle(ctx, co, sgverify.WithArtifactDigest(hash.Algorithm, digest), b); err != nil {
			errs = append(errs, err)
			continue
		}
		return nil
	}
	if len(errs) == 0 {
		return errors.New("no Sigstore bundle signs the image")
	}
	return fmt.Errorf("no matching signatures: %w", errors.Join(errs...))
}
