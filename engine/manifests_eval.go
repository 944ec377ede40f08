package engine

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	jpcore "github.com/gavelpolicy/gavel/internal/jmespath"
	"github.com/gavelpolicy/gavel/internal/manifests"
)

// validateManifests is the handler of validate.manifests rules, with
// upstream's results: pass when every attestor set verified (each up to
// its count), fail with the first set that did not (its verified count and
// the reasons of its entries: no signature, or the differences from the
// signed manifest), error when a set had errors (a signature that does not
// verify, a malformed annotation, an unreachable registry).
func (e *Engine) validateManifests(rs *reqState, r *rule) []RuleResult {
	if rs.op == api.Delete {
		return nil
	}
	if rs.req.DryRun {
		return rs.single(r.result(StatusPass, "allowed because of DryRun request"))
	}
	ms := r.validate.manifests
	mv, _ := e.cfg.imageVerifier.(ManifestVerifier)
	if mv == nil {
		return rs.single(r.errorResult("error occurred during manifest verification",
			fmt.Errorf("no manifest verifier (an ImageVerifier that implements engine.ManifestVerifier): %w", ErrNotConfigured)))
	}
	mc := &manifestCheck{e: e, rs: rs, ms: ms, mv: mv, obj: normalizeObject(rs.obj)}
	mc.ignored = manifests.Ignored(ms.ignore, mc.obj)
	mc.annotations = objectAnnotations(mc.obj)
	var msgs []string
	for i, set := range ms.sets {
		ok, reason, err := mc.verifySet(set, fmt.Sprintf(".attestors[%d]", i))
		if err != nil {
			return rs.single(r.errorResult("error occurred during manifest verification", err))
		}
		if !ok {
			return rs.single(r.result(StatusFail, reason))
		}
		msgs = append(msgs, reason)
	}
	return rs.single(r.result(StatusPass, "verified manifest signatures; "+strings.Join(msgs, ",")))
}

func normalizeObject(obj map[string]any) map[string]any {
	m, _ := normalize(obj).(map[string]any)
	return m
}

func objectAnnotations(obj map[string]any) map[string]string {
	meta, _ := obj["metadata"].(map[string]any)
	raw, _ := meta["annotations"].(map[string]any)
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// manifestCheck is the verification of one resource by one rule.
type manifestCheck struct {
	e           *Engine
	rs          *reqState
	ms          *manifestSpec
	mv          ManifestVerifier
	obj         map[string]any
	annotations map[string]string
	ignored     []*regexp.Regexp
}

// verifySet verifies the entries of a set in order until set.required
// verified: ok with upstream's success reason; else the failure reason,
// or the errors of the entries when there were some.
func (mc *manifestCheck) verifySet(set *manifestSet, path string) (bool, string, error) {
	verified := 0
	var errs []error
	var verifiedMsgs, failedMsgs []string
	for i, n := range set.entries {
		ep := fmt.Sprintf("%s.entries[%d]", path, i)
		var ok bool
		var reason string
		var err error
		if n.nested != nil {
			ep += ".attestor"
			ok, reason, err = mc.verifySet(n.nested, ep)
			if err != nil {
				err = fmt.Errorf("failed to verify signature; %s: %w", ep, err)
			}
		} else {
			ok, reason, err = mc.verifyEntry(n, ep+n.path)
		}
		switch {
		case err != nil:
			if mc.rs.ctx.Err() != nil {
				return false, "", err
			}
			errs = append(errs, err)
		case ok:
			verified++
			verifiedMsgs = append(verifiedMsgs, reason)
		default:
			failedMsgs = append(failedMsgs, reason)
		}
		if verified >= set.required {
			return true, fmt.Sprintf("manifest verification succeeded; verifiedCount %d; requiredCount %d; message %s",
				verified, set.required, strings.Join(verifiedMsgs, ",")), nil
		}
	}
	if len(errs) > 0 {
		return false, "", joinedErrors(errs)
	}
	return false, fmt.Sprintf("manifest verification failed; verifiedCount %d; requiredCount %d; message %s",
		verified, set.required, strings.Join(failedMsgs, ",")), nil
}

// joinedErrors joins errors as upstream's multierr prints them ("a; b"),
// keeping them for errors.Is.
type joinedErrors []error

func (j joinedErrors) Error() string   { return joinErrors(j) }
func (j joinedErrors) Unwrap() []error { return j }

// verifyEntry verifies the resource with one attestor; path names it
// (".attestors[0].entries[1].keys").
func (mc *manifestCheck) verifyEntry(n manifestNode, path string) (bool, string, error) {
	a := n.attestor
	for k, want := range a.Annotations {
		if got := mc.annotations[k]; got != want {
			return false, "", fmt.Errorf("annotations mismatch: %s does not match expected value %s for key %s", got, want, k)
		}
	}
	req := ManifestVerifyRequest{Annotations: mc.annotations, AnnotationDomain: mc.ms.domain, Attestor: a, Repository: mc.ms.repository}
	if a.Repository != "" {
		req.Repository = a.Repository
	}
	if ref, ok := mc.annotations[mc.ms.domain+"/resourceBundleRef"]; ok {
		req.Repository = ref
	}
	ctx, done := mc.rs.hostContext()
	signed, err := mc.mv.VerifyManifest(ctx, req)
	err = done(err)
	if err != nil {
		if errors.Is(err, ErrManifestNotSigned) {
			return false, fmt.Sprintf("%s: %s", path, err.Error()), nil
		}
		return false, "", fmt.Errorf("%s: failed to verify signature: %w", path, err)
	}
	if signed == nil {
		return false, "", fmt.Errorf("%s: failed to verify signature: the verifier returned no manifest", path)
	}
	docs := make([]map[string]any, 0, len(signed.Manifests))
	for i, d := range signed.Manifests {
		m, err := jpcore.Canonical(d)
		if err != nil {
			return false, "", fmt.Errorf("%s: signed manifest %d: %w", path, i, err)
		}
		if m, ok := m.(map[string]any); ok {
			docs = append(docs, m)
		}
	}
	candidates := manifests.Find(docs, mc.obj, mc.ignored)
	if len(candidates) == 0 {
		kind, _ := mc.obj["kind"].(string)
		return false, fmt.Sprintf("%s: YAML manifest not found for this resource: no signed manifest of kind %s", path, kind), nil
	}
	var first []manifests.Diff
	for i, c := range candidates {
		diffs, err := mc.match(c)
		if err != nil {
			return false, "", fmt.Errorf("%s: %w", path, err)
		}
		if len(diffs) == 0 {
			return true, "singed by a valid signer: " + signed.Signer, nil
		}
		if i == 0 {
			first = diffs
		}
	}
	return false, fmt.Sprintf("%s: failed to verify signature. diff found; %s", path, manifests.DiffJSON(first)), nil
}

// match compares the resource with a signed manifest: directly, then, with
// dryRun, with the manifest as the API server creates it. It returns the
// remaining differences (none: it matches).
func (mc *manifestCheck) match(manifest map[string]any) ([]manifests.Diff, error) {
	diffs := manifests.Compare(manifest, mc.obj, mc.ignored)
	if len(diffs) == 0 || !mc.ms.dryRun {
		return diffs, nil
	}
	dr, ok := mc.e.cfg.client.(DryRunCreator)
	if !ok {
		return nil, fmt.Errorf("error occurred during dryrun create match: dryRun needs a Client that implements engine.DryRunCreator: %w", ErrNotConfigured)
	}
	ctx, done := mc.rs.hostContext()
	created, err := dr.DryRunCreate(ctx, manifests.DryRunObject(manifest, mc.obj, mc.ms.dryNS))
	if err = done(err); err != nil {
		return nil, fmt.Errorf("error occurred during dryrun create match: failed to dryrun with the found YAML: %w", err)
	}
	return manifests.CompareDryRun(normalizeObject(created), mc.obj, mc.ignored), nil
}
