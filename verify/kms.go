package verify

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/kms"
	"github.com/sigstore/sigstore/pkg/signature/options"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// ErrKMSProviderNotRegistered is wrapped (with engine.ErrNotConfigured) by
// the error of a keys.kms reference whose scheme no KMS provider was
// registered for: the program
// imports the provider's package (verify/kmsproviders registers cosign's
// awskms, gcpkms, azurekms and hashivault) or calls sigstore's
// kms.AddProvider.
var ErrKMSProviderNotRegistered = errors.New("no KMS provider registered")

// secretKeyRef returns the Secret a k8s://namespace/name key reference
// names (upstream's form of a key kept in a Secret), ok false for other
// references.
func secretKeyRef(ref string) (s *api.SecretReference, ok bool, err error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(ref), "k8s://")
	if !ok {
		return nil, false, nil
	}
	ns, name, found := strings.Cut(rest, "/")
	if !found || ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, true, fmt.Errorf("invalid key reference %s: want k8s://namespace/name", ref)
	}
	return &api.SecretReference{Namespace: ns, Name: name}, true, nil
}

// kmsVerifier returns the verifier of a KMS key (keys.kms): that of the
// provider registered for the reference's scheme (sigstore's KMS
// registry, as cosign reads keys). Only registered providers are asked:
// sigstore's fallback of running a sigstore-kms-NAME plugin program found
// on the PATH is not taken, a library must not start programs.
func kmsVerifier(ctx context.Context, ref string, hash crypto.Hash) (signature.Verifier, error) {
	registered := false
	for _, scheme := range kms.SupportedProviders() {
		if strings.HasPrefix(ref, scheme) {
			registered = true
			break
		}
	}
	if !registered {
		return nil, fmt.Errorf("KMS key %s: %w for its scheme (import github.com/gavelpolicy/gavel/verify/kmsproviders for cosign's providers): %w", ref, ErrKMSProviderNotRegistered, engine.ErrNotConfigured)
	}
	sv, err := kms.Get(ctx, ref, hash)
	if err != nil {
		return nil, kmsError(fmt.Errorf("failed to load KMS key %s: %w", ref, err))
	}
	// the provider verifies (with its key's algorithm: RSA-PSS keys, for
	// one, are not what signature.LoadVerifier would make of the bare
	// key), as cosign verifies with it; its public key is read here so
	// that a KMS that cannot be reached is told from a bad signature
	if _, err := sv.PublicKey(options.WithContext(ctx)); err != nil {
		return nil, kmsError(fmt.Errorf("failed to read the public key of KMS key %s: %w", ref, err))
	}
	return sv, nil
}

// kmsError marks a KMS that could not be reached (network errors) as
// unavailable, like a registry: failurePolicy Ignore lets the image
// through.
func kmsError(err error) error {
	var op *net.OpError
	var dns *net.DNSError
	if errors.As(err, &op) || errors.As(err, &dns) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", engine.ErrRegistryUnavailable, err)
	}
	return err
}
