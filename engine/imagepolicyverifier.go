package engine

import (
	"context"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
)

// ImagePolicyVerifier is an optional capability of the ImageVerifier given
// to WithImageVerifier: it verifies images against the attestors of
// ImageValidatingPolicies (policies.kyverno.io), whose shape differs from
// the attestors of verifyImages rules (several keyless identities, Notary
// timestamp authorities, OCI referrers as attestations, a trusted root per
// attestor). The engine decides which images, asks one image and one
// attestor at a time, counts, caches outcomes and keeps the verified
// payloads for extractPayload; package verify implements it. Without it,
// the image verification functions of these policies fail with an error
// wrapping ErrNotConfigured.
type ImagePolicyVerifier interface {
	// VerifyImagePolicySignature checks that the image (by digest)
	// carries a signature that the attestor accepts. A nil error means
	// verified; an error wrapping ErrRegistryUnavailable or
	// ErrNotConfigured stops the verification (the policy's result is an
	// error), any other one is a signature that does not verify.
	VerifyImagePolicySignature(ctx context.Context, req ImagePolicyRequest) error
	// VerifyImagePolicyAttestation checks that the image (by digest) has
	// an attestation of req.Attestation's kind and type that the
	// attestor accepts, and returns its payload as JSON values: the
	// in-toto statement (intoto), or the document of the referrer
	// (referrer). Errors are as VerifyImagePolicySignature's.
	VerifyImagePolicyAttestation(ctx context.Context, req ImagePolicyRequest) (any, error)
}

// ImagePolicyRequest asks about one image and one attestor of an
// ImageValidatingPolicy.
type ImagePolicyRequest struct {
	// Image is the image by digest: "registry/path@sha256:...".
	Image string
	// Attestor is the attestor, its expression fields replaced by their
	// values (the expressions are empty).
	Attestor policiesv1alpha1.Attestor
	// Attestation is the attestation to verify (nil for signatures).
	Attestation *policiesv1alpha1.Attestation
	// Credentials are the policy's spec.credentials (nil when it has
	// none).
	Credentials *policiesv1alpha1.Credentials
}
