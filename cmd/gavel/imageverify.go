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

// imageVerifierOption gives the verifyImages and validate.manifests rules
// of apply and test the verify package, as the upstream CLI verifies
// signatures: they read the registries the images name, with the docker
// config's credentials and upstream's imageRegistryCredentials.providers
// (registryauth); keys.kms reaches cosign's KMS providers; keyless
// attestors without roots use Sigstore's public-good trusted root through
// TUF, cached in ~/.sigstore/root as cosign keeps it. Inline keys and
// signed manifests need no network.
func imageVerifierOption() engine.Option {
	tufOpts := verify.TUFOptions{}
	if home, err := os.UserHomeDir(); err == nil {
		tufOpts.CacheDir = filepath.Join(home, ".sigstore", "root")
	}
	return engine.WithImageVerifier(verify.New(verify.WithKeychain(authn.DefaultKeychain),
		verify.WithCredentialProviders(registryauth.Keychains()),
		verify.WithTUF(tufOpts)))
}
