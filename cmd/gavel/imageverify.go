//go:build verifyimages

package main

import (
	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/verify"
	// keys.kms: cosign's KMS providers (AWS, GCP, Azure, Vault), as the
	// upstream CLI has them
	_ "github.com/gavelpolicy/gavel/verify/kmsproviders"
	"github.com/gavelpolicy/gavel/verify/registryauth"
)

// imageVerifierOption gives apply's verifyImages rules the verify
// package: they read the registries the images name, with the docker
// config's credentials and upstream's imageRegistryCredentials.providers
// (registryauth), and keys.kms reaches cosign's KMS providers. It links
// the signing stack (cosign, notation) and the clouds' SDKs, which
// doubles the binary: hence the build tag.
func imageVerifierOption() engine.Option {
	return engine.WithImageVerifier(verify.New(verify.WithKeychain(authn.DefaultKeychain),
		verify.WithCredentialProviders(registryauth.Keychains())))
}
