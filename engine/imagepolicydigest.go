package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/gavelpolicy/gavel/internal/polex"
	"sort"
	"strings"

	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/images"
)

// WithImagePolicyMutation sets whether Mutate pins the images that
// ImageValidatingPolicies select to their digests
// (validationConfigurations.mutateDigest, true by default), as upstream's
// mutating webhook does. Upstream's CLI does not: gavel apply turns it
// off, so that verifyDigest judges the images as written.
func WithImagePolicyMutation(enabled bool) Option {
	return func(c *config) error { c.ivpolNoMutation = !enabled; return nil }
}

// pinImageDigests is the mutation of ImageValidatingPolicies, after the
// mutate rules and verifyImages: each policy with mutateDigest whose
// matchConstraints and matchConditions select the request, and that no
// CEL PolicyException exempts, pins the images of the resource's
// containers that its matchImageReferences select and that have no
// digest, as upstream's HandleMutating does (no verification: that is
// Validate's). An image whose digest cannot be resolved is an error
// result named mutateDigest; the others keep their pins. A path pinned by
// an earlier policy is left alone.
func (s *PolicySet) pinImageDigests(rs *reqState, resp *Response) error {
	if rs.e.cfg.ivpolNoMutation || rs.req.Background {
		return nil
	}
	var seen map[string]bool
	for _, p := range s.policies {
		b, ok := p.body.(*imagePolicy)
		if !ok || b.json || !b.mutateDigest || !b.applies(rs, p) {
			continue
		}
		if err := rs.ctx.Err(); err != nil {
			return err
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		start := len(rs.results)
		b.pinDigests(rs, p, seen)
		if n := len(rs.results); n > start {
			pr := PolicyResult{Policy: p, Resource: rs.obj, PatchedResource: rs.obj, FailureAction: p.failureAction}
			resp.Policies = append(resp.Policies, b.finish(rs, pr, start))
		}
	}
	return nil
}

// pinDigests pins the digests of one policy (the first of its variants
// that selects the request), appending its error result if any.
func (b *imagePolicy) pinDigests(rs *reqState, p *Policy, seen map[string]bool) {
	fail := func(err error) {
		b.result(rs, RuleMutateDigest, StatusError, "failed to update digest: "+err.Error(), err, nil)
	}
	for i := range b.variants {
		v := &b.variants[i]
		ok, err := v.match.Matches(&rs.kindData().attrs)
		if err != nil {
			fail(err)
			return
		}
		if !ok {
			continue
		}
		var in cel.Input
		if _, err := b.input(rs, &in, v.body.Reads()); err != nil {
			fail(err)
			return
		}
		ok, err = v.body.Match(rs.ctx, &in, rs.celScope())
		if err == nil && ok {
			// upstream leaves an exempted resource to the validating
			// webhook, which skips it
			var excs []*polex.CELException
			excs, err = rs.imageExceptions(b.envs.env, p, v.body, &in, !b.json)
			ok = len(excs) == 0
		}
		switch {
		case err != nil:
			fail(err)
		case ok:
			if err := b.pin(rs, v, seen); err != nil {
				fail(err)
			}
		}
		return
	}
}

// pin resolves and writes the digests of the resource's images that the
// variant's matchImageReferences select.
func (b *imagePolicy) pin(rs *reqState, v *ivpolVariant, seen map[string]bool) error {
	infos, err := images.Extract(rs.obj, images.Config{DefaultRegistry: rs.e.cfg.defaultRegistry, EnableDefaultRegistryMutation: rs.e.cfg.registryMutation})
	if err != nil {
		return err
	}
	var list []images.Info
	for _, byName := range infos {
		for _, info := range byName {
			list = append(list, info)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Pointer < list[j].Pointer })
	h := &imageHost{rs: rs, b: b, body: v.body}
	obj := rs.obj
	var errs []string
	var cause error
	for _, info := range list {
		if info.Digest != "" || seen[info.Pointer] {
			continue
		}
		image := info.String()
		ok, err := v.body.MatchImage(rs.ctx, image)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		byDigest, err := h.resolve(rs.ctx, image)
		if err != nil {
			errs = append(errs, fmt.Sprintf("failed to resolve digest for image %s: %v", image, err))
			cause = errors.Join(cause, err)
			continue
		}
		if obj, err = replaceAt(obj, info.Pointer, image+"@"+byDigest); err != nil {
			return err
		}
		seen[info.Pointer] = true
	}
	if obj != nil && !sameMap(obj, rs.obj) {
		rs.setObject(obj)
	}
	if len(errs) > 0 {
		return &pinError{msg: strings.Join(errs, "; "), err: cause}
	}
	return nil
}

// pinError is the errors of the images whose digests could not be pinned.
type pinError struct {
	msg string
	err error
}

func (e *pinError) Error() string { return e.msg }
func (e *pinError) Unwrap() error { return e.err }

// resolve returns the digest of an image given by tag.
func (h *imageHost) resolve(ctx context.Context, image string) (string, error) {
	if h.rs.e.cfg.imageVerifier == nil {
		return "", fmt.Errorf("no image verifier to resolve the digest of %s: %w", image, ErrNotConfigured)
	}
	ref, err := h.digestRef(ctx, image)
	if err != nil {
		return "", err
	}
	return ref[strings.LastIndexByte(ref, '@')+1:], nil
}
