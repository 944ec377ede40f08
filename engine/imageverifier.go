package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gavelpolicy/gavel/api"
)

// ImageVerifier is the host side of verifyImages rules: it reads
// registries and checks signatures. The engine decides which images and
// attestors, counts, evaluates attestation conditions, caches outcomes and
// builds patches; an ImageVerifier answers one question at a time about one
// image and one attestor. Package verify implements it with
// go-containerregistry, cosign and notation.
type ImageVerifier interface {
	// ResolveDigest returns the digest ("sha256:...") of req.Image, a
	// reference by tag (req.Attestor is empty).
	ResolveDigest(ctx context.Context, req ImageVerifyRequest) (string, error)
	// VerifySignature checks that the image, given by digest
	// ("registry/path@sha256:..."), carries a signature that the request's
	// attestor accepts. A nil error means verified.
	VerifySignature(ctx context.Context, req ImageVerifyRequest) error
	// FetchAttestations returns the in-toto statements attached to the
	// image (given by digest) whose signatures the request's attestor
	// accepts and whose predicateType is req.PredicateType, each decoded as
	// a JSON-like map (with "predicateType" and "predicate").
	FetchAttestations(ctx context.Context, req ImageVerifyRequest) ([]map[string]any, error)
}

// ImageVerifyRequest asks for one image against one attestor.
type ImageVerifyRequest struct {
	// Type is the signature type: Cosign, SigstoreBundle or Notary.
	Type string
	// Image is the image by digest: "registry/path@sha256:...".
	Image string
	// Attestor is a single attestor (keys, certificates or keyless, never
	// nested; several PEM keys are split into one attestor each), after
	// variable substitution.
	Attestor api.Attestor
	// Repository is where signatures are kept when not beside the image.
	Repository string
	// Annotations must all be present in the signed payload.
	Annotations map[string]string
	// PredicateType is set for FetchAttestations.
	PredicateType string
	// Credentials are the entry's imageRegistryCredentials.
	Credentials *api.ImageRegistryCredentials
	// PullSecrets are the image pull secrets of the resource, as
	// "namespace/name" (a Pod's spec.imagePullSecrets), which upstream
	// uses as registry credentials too. Like Credentials, they are part
	// of the engine's cache key: an outcome obtained with some
	// credentials answers only requests that carry the same.
	PullSecrets []string
	// CosignOCI11 asks for signatures stored as OCI 1.1 referrers.
	CosignOCI11 bool
}

// ErrRegistryUnavailable is wrapped by ImageVerifier errors when the
// registry could not be reached (network errors, server errors): the rule
// gives an error result rather than a failure, and a policy with
// failurePolicy Ignore lets the image through.
var ErrRegistryUnavailable = errors.New("image registry unavailable")

// ImageVerifyCacheOptions size the cache of verification outcomes (see
// WithImageVerifier).
type ImageVerifyCacheOptions struct {
	// Disabled turns the cache off.
	Disabled bool
	// MaxEntries bounds the number of cached outcomes (default 1000).
	MaxEntries int
	// TTL is how long an outcome is kept (default 60 minutes).
	TTL time.Duration
}

// WithImageVerifier sets the host that verifies image signatures and
// attestations for verifyImages rules. Without one, verifyImages rules
// that check signatures give an error result wrapping ErrNotConfigured.
func WithImageVerifier(v ImageVerifier) Option {
	return func(c *config) error { c.imageVerifier = v; return nil }
}

// WithImageVerifyCache sizes the verification cache: successful
// verifications are kept by image digest, attestor and credentials (the
// entry's imageRegistryCredentials, the resource's pull secrets), so that
// many resources carrying one image cost one verification, and
// concurrent verifications of one key are made once. Each request waits
// for a shared verification on its own context: one whose context ends
// stops waiting, the verification goes on for the others (bounded by
// Limits.HostCallTimeout), and it is cancelled when no request waits.
func WithImageVerifyCache(o ImageVerifyCacheOptions) Option {
	return func(c *config) error {
		if o.MaxEntries < 0 || o.TTL < 0 {
			return fmt.Errorf("image verify cache: negative size or TTL")
		}
		c.verifyCache = o
		return nil
	}
}
