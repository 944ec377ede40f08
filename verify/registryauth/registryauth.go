// Package registryauth builds the registry keychains of upstream's
// imageRegistryCredentials.providers, for verify.WithCredentialProviders:
//
//	v := verify.New(verify.WithCredentialProviders(registryauth.Keychains()))
//
// The providers:
//   - default: the docker config (authn.DefaultKeychain: $DOCKER_CONFIG or
//     ~/.docker/config.json and its credential helpers);
//   - google: GCR and Artifact Registry (go-containerregistry's google
//     keychain: application default credentials, gcloud);
//   - amazon: ECR (the Amazon ECR credential helper: the AWS SDK's
//     credential chain);
//   - azure: ACR (the ACR environment helper: AZURE_* variables, workload
//     identity);
//   - github: ghcr.io (GITHUB_TOKEN).
//
// Each reads the process environment and the usual files of its cloud, as
// upstream's do, which is why package verify leaves them to this opt-in
// package: it also links the AWS and Azure SDKs, which a program that
// verifies images in other registries does not need.
package registryauth

import (
	"io"

	ecr "github.com/awslabs/amazon-ecr-credential-helper/ecr-login"
	"github.com/chrismellard/docker-credential-acr-env/pkg/credhelper"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/authn/github"
	"github.com/google/go-containerregistry/pkg/v1/google"
)

// Provider names, as imageRegistryCredentials.providers spells them.
const (
	Default = "default"
	Google  = "google"
	Amazon  = "amazon"
	Azure   = "azure"
	GitHub  = "github"
)

// Keychains returns a new map of upstream's five providers' keychains.
func Keychains() map[string]authn.Keychain {
	return map[string]authn.Keychain{
		Default: authn.DefaultKeychain,
		Google:  google.Keychain,
		Amazon:  authn.NewKeychainFromHelper(ecr.NewECRHelper(ecr.WithLogger(io.Discard))),
		Azure:   authn.NewKeychainFromHelper(credhelper.NewACRCredentialsHelper()),
		GitHub:  github.Keychain,
	}
}
