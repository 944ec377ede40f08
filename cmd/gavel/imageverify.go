//go:build verifyimages

package main

import (
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/verify"
	// keys.kms: cosign's KMS providers (AWS, GCP, Azure, Vault), as the
	// upstream CLI has them
	_ "github.com/gavelpolicy/gavel/verify/kmsproviders"
	"github.com/gavelpolicy/gavel/verify/registryauth"
)

// imageVerifierOption gives apply's verifyImages and validate.manifests
// rules the verify package: they read the registries the images name,
// with the docker config's credentials and upstream's
// imageRegistryCredentials.providers (registryauth); keys.kms reaches
// cosign's KMS providers; keyless attestors without roots use Sigstore's
// public-good trusted root through TUF, cached in ~/.sigstore/root as
// cosign keeps it. It links the signing stack (cosign, notation) and the
// clouds' SDKs, which doubles the binary: hence the build tag.
func imageVerifierOption() engine.Option {
	tufOpts := verify.TUFOptions{}
	if home, err := os.UserHomeDir(); err == nil {
		tufOpts.CacheDir = filepath.Join(home, ".sigstore", "root")
	}
	return engine.WithImageVerifier(verify.New(verify.WithKeychain(authn.DefaultKeychain),
		verify.WithCredentialProviders(registryauth.Keychains()),
		verify.WithTUF(tufOpts)))
}
