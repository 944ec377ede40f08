package engine

import (
	"context"
	"errors"
	"fmt"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
)

// imagePolicyState is what the ImageValidatingPolicies of one request
// share (reqState.images): which images a verification checked, the
// payloads of the attestations verified, and the results whose
// validationConfigurations.required waits for every policy.
type imagePolicyState struct {
	// verified is, by image (as the expression gave it), whether a
	// signature or attestation check passed; absent: none was made
	verified map[string]bool
	// payloads are the verified attestations' payloads by image, kind
	// and type (payloadKey)
	payloads map[string]any
	pending  []pendingRequired
	// refs are the images by digest, by image and credentials
	// (digestRef)
	refs map[string]string
}

// pendingRequired is a passing result (at, in the request's results)
// whose images must have been verified.
type pendingRequired struct {
	at     int
	images []string
}

func (rs *reqState) imageState() *imagePolicyState {
	if rs.images == nil {
		rs.images = &imagePolicyState{verified: map[string]bool{}, payloads: map[string]any{}, refs: map[string]string{}}
	}
	return rs.images
}

// record notes a verification's outcome for an image; a success is kept.
func (st *imagePolicyState) record(image string, ok bool) {
	st.verified[image] = st.verified[image] || ok
}

func payloadKey(image string, a policiesv1alpha1.Attestation) string {
	if a.InToto != nil {
		return image + "\x00intoto\x00" + a.InToto.Type
	}
	if a.Referrer != nil {
		return image + "\x00referrer\x00" + a.Referrer.Type
	}
	return image + "\x00"
}

// finishImagePolicies settles validationConfigurations.required once every
// policy of the request was evaluated, as upstream: a passing result
// fails when one of the images its policy selected was not verified by
// any policy of the request.
func (s *PolicySet) finishImagePolicies(rs *reqState, resp *Response) {
	st := rs.images
	if st == nil || len(st.pending) == 0 {
		return
	}
	for _, pr := range st.pending {
		var msg string
		for _, image := range pr.images {
			ok, tried := st.verified[image]
			if ok {
				continue
			}
			if tried {
				msg = fmt.Sprintf("image %s failed signature or attestation verification", image)
			} else {
				msg = fmt.Sprintf("image %s is not verified: no policy performed a signature or attestation check on it", image)
			}
			break
		}
		if msg == "" {
			continue
		}
		r := &rs.results[pr.at]
		if r.Status != StatusPass || r.Type != ImageVerify {
			continue // a panic replaced the results (runBody)
		}
		r.Status, r.Message = StatusFail, msg
		// the response's policies may hold an earlier copy of the
		// request's results (see noteResults): their rules follow one
		// another in the request's order
		off := 0
		for i := range resp.Policies {
			rules := resp.Policies[i].Rules
			if pr.at >= off && pr.at < off+len(rules) {
				rules[pr.at-off] = *r
				break
			}
			off += len(rules)
		}
	}
}

// imageCached returns the cached outcome of key (the engine's
// verification cache: successes only, by image digest and attestor, one
// call for concurrent callers) or runs verify, bounded by the Limits'
// HostCallTimeout.
func (e *Engine) imageCached(ctx context.Context, key string, verify func(context.Context) (verifyOutcome, error)) (verifyOutcome, error) {
	return e.vcache.Do(ctx, key, true, func(ctx context.Context) (verifyOutcome, error) {
		if d := e.cfg.limits.HostCallTimeout; d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		return verify(ctx)
	})
}

// imageHost answers the image verification functions of one evaluation
// of an ImageValidatingPolicy (cel.ImageVerifier).
type imageHost struct {
	rs   *reqState
	b    *imagePolicy
	body *celpolicy.ImageValidating
}

var _ cel.ImageVerifier = (*imageHost)(nil)

// stops reports an error a verification cannot get past: the registry or
// a host is unavailable, a host is missing, the request is cancelled.
func (h *imageHost) stops(ctx context.Context, err error) bool {
	return errors.Is(err, ErrRegistryUnavailable) || errors.Is(err, ErrNotConfigured) || ctx.Err() != nil || h.rs.ctx.Err() != nil
}

// verifier returns the host's ImagePolicyVerifier.
func (h *imageHost) verifier() (ImagePolicyVerifier, error) {
	iv := h.rs.e.cfg.imageVerifier
	if iv == nil {
		return nil, fmt.Errorf("no image verifier (engine.WithImageVerifier): %w", ErrNotConfigured)
	}
	v, ok := iv.(ImagePolicyVerifier)
	if !ok {
		return nil, fmt.Errorf("the image verifier does not verify ImageValidatingPolicy attestors (engine.ImagePolicyVerifier): %w", ErrNotConfigured)
	}
	return v, nil
}

// digestRef returns the image by digest: as given, or its tag resolved
// (cached as verifyImages resolutions are), once per request.
func (h *imageHost) digestRef(ctx context.Context, image string) (string, error) {
	st := h.rs.imageState()
	key := image + "\x00" + h.b.credKey
	if r, ok := st.refs[key]; ok {
		return r, nil
	}
	r, err := h.resolveRef(ctx, image)
	if err == nil {
		st.refs[key] = r
	}
	return r, err
}

func (h *imageHost) resolveRef(ctx context.Context, image string) (string, error) {
	var opts []name.Option
	if h.b.creds != nil && h.b.creds.AllowInsecureRegistry {
		opts = append(opts, name.Insecure)
	}
	ref, err := celpolicy.ParseImageReference(image, opts...)
	if err != nil {
		return "", fmt.Errorf("failed to parse image reference %s: %w", image, err)
	}
	if d, ok := ref.(name.Digest); ok {
		return d.Name(), nil
	}
	e := h.rs.e
	out, err := e.imageCached(ctx, "d\x00"+ref.Name()+"\x00"+h.b.credKey, func(ctx context.Context) (verifyOutcome, error) {
		d, err := e.cfg.imageVerifier.ResolveDigest(ctx, ImageVerifyRequest{Image: ref.Name(), Credentials: h.b.classic})
		if err != nil {
			return verifyOutcome{}, err
		}
		if !strings.Contains(d, ":") {
			return verifyOutcome{}, fmt.Errorf("registry returned an invalid digest %q for %s", d, image)
		}
		return verifyOutcome{statements: []map[string]any{{"digest": d}}}, nil
	})
	if err != nil {
		return "", err
	}
	return ref.Context().Digest(out.statements[0]["digest"].(string)).Name(), nil
}

// prepare is what the verification functions share: whether
// matchImageReferences select the image, the verifier and the image by
// digest.
func (h *imageHost) prepare(ctx context.Context, image string) (ImagePolicyVerifier, string, bool, error) {
	ok, err := h.body.MatchImage(ctx, image)
	if err != nil || !ok {
		return nil, "", false, err
	}
	v, err := h.verifier()
	if err != nil {
		return nil, "", false, err
	}
	byDigest, err := h.digestRef(ctx, image)
	if err != nil {
		return nil, "", false, fmt.Errorf("failed to get imagedata: %w", err)
	}
	return v, byDigest, true, nil
}

// VerifyImageSignatures implements cel.ImageVerifier.
func (h *imageHost) VerifyImageSignatures(ctx context.Context, image string, attestors []*cel.ImageAttestor) (int, error) {
	v, byDigest, ok, err := h.prepare(ctx, image)
	if err != nil || !ok {
		return 0, err
	}
	count := 0
	for _, a := range attestors {
		_, err := h.rs.e.imageCached(ctx, "ivs\x00"+byDigest+"\x00"+a.Key+"\x00"+h.b.credKey, func(ctx context.Context) (verifyOutcome, error) {
			return verifyOutcome{}, v.VerifyImagePolicySignature(ctx, ImagePolicyRequest{Image: byDigest, Attestor: a.Spec, Credentials: h.b.creds})
		})
		switch {
		case err == nil:
			count++
		case h.stops(ctx, err):
			return 0, fmt.Errorf("attestor %s: %w", a.Name, err)
		}
	}
	if len(attestors) > 0 {
		h.rs.imageState().record(image, count > 0)
	}
	return count, nil
}

// VerifyAttestationSignatures implements cel.ImageVerifier.
func (h *imageHost) VerifyAttestationSignatures(ctx context.Context, image, attestation string, attestors []*cel.ImageAttestor) (int, error) {
	v, byDigest, ok, err := h.prepare(ctx, image)
	if err != nil || !ok {
		return 0, err
	}
	att, found := h.body.Attestation(attestation)
	if !found {
		return 0, fmt.Errorf("attestation not found in policy: %s", attestation)
	}
	st := h.rs.imageState()
	count := 0
	for _, a := range attestors {
		if a.Spec.Notary != nil && att.Referrer == nil {
			return 0, errors.New("notary verifier only supports oci 1.1 referrers as attestations")
		}
		if a.Spec.Cosign != nil && att.InToto == nil {
			// upstream's cosign verifier refuses referrers: not verified
			continue
		}
		out, err := h.rs.e.imageCached(ctx, "iva\x00"+byDigest+"\x00"+a.Key+"\x00"+payloadKey("", att)+"\x00"+h.b.credKey, func(ctx context.Context) (verifyOutcome, error) {
			p, err := v.VerifyImagePolicyAttestation(ctx, ImagePolicyRequest{Image: byDigest, Attestor: a.Spec, Attestation: &att, Credentials: h.b.creds})
			if err != nil {
				return verifyOutcome{}, err
			}
			// payloads are shared by the cache: normalized once, read only
			return verifyOutcome{statements: []map[string]any{{"payload": normalize(p)}}}, nil
		})
		switch {
		case err == nil:
			count++
			st.payloads[payloadKey(image, att)] = out.statements[0]["payload"]
		case h.stops(ctx, err):
			return 0, fmt.Errorf("attestor %s: %w", a.Name, err)
		}
	}
	if len(attestors) > 0 {
		st.record(image, count > 0)
	}
	return count, nil
}

// ExtractPayload implements cel.ImageVerifier: the payload of an
// attestation verified for the image in this request.
func (h *imageHost) ExtractPayload(_ context.Context, image, attestation string) (any, error) {
	att, found := h.body.Attestation(attestation)
	if !found {
		return nil, fmt.Errorf("attestation not found in policy: %s", attestation)
	}
	if st := h.rs.images; st != nil {
		if p, ok := st.payloads[payloadKey(image, att)]; ok {
			return p, nil
		}
	}
	if att.InToto != nil {
		return nil, errors.New("failed to get payload: intoto attestation payload cannot be fetch before verifying intoto attestation")
	}
	return nil, errors.New("failed to get payload: referrer attestation payload cannot be fetched before verifying the referrer attestation")
}

// ImageData implements cel.ImageVerifier with the image data host of the
// CEL libraries (the RegistryClient's, see WithCELLibraries).
func (h *imageHost) ImageData(ctx context.Context, image string) (map[string]any, error) {
	return h.rs.e.celLibs.ImageData.ImageMetadata(ctx, image)
}
