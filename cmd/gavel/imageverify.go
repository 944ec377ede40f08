//go:build verifyimages

package main

import (
	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/verify"
)

// imageVerifierOption gives apply's verifyImages and validate.manifests
// rules the verify package: they read the registries the images name,
// with the docker config's credentials. It links the signing stack (cosign, notation),
// which nearly triples the binary: hence the build tag.
func imageVerifierOption() engine.Option {
	return engine.WithImageVerifier(verify.New(verify.WithKeychain(authn.DefaultKeychain)))
}
