package engine

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gavelpolicy/gavel/internal/polex"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/images"
	"github.com/gavelpolicy/gavel/internal/wildcard"
)

// ImageVerifyAnnotation is the annotation upstream writes on resources whose
// images a verifyImages rule checked at mutation, and reads at validation
// (required): a JSON object from image (by digest when known) to "pass",
// "fail" or "skip".
const ImageVerifyAnnotation = "kyverno.io/verify-images"

// Image verification statuses in ImageVerifyAnnotation.
const (
	imagePass = "pass"
	imageFail = "fail"
	imageSkip = "skip"
)

// verifySpec is a compiled verifyImages rule.
type verifySpec struct {
	entries []*verifyEntry
	// extractor reads the images of the rule's resources (its
	// imageExtractors, or the built-in ones).
	extractor *images.Extractor
}

// verifyEntry is one verifyImages entry.
type verifyEntry struct {
	index int
	// refs and skip are imageReferences and skipImageReferences, compiled
	// (image references hold no variables)
	refs, skip []wildcard.Pattern
	// static is the plan of an entry without variables; tree the entry
	// (without attestation conditions, which are evaluated per statement)
	// when it has variables.
	static *verifyPlan
	tree   *tree
	conds  [][]*condSet // per attestation, per conditions block
	names  []string     // per attestation, its name (the predicate's variable)
	// deny and message are the entry's validate block, evaluated once the
	// attestations verified, with each named attestation's predicate as a
	// variable
	deny    *condSet
	message *template
	// hasChecks is set when the entry has attestors or attestations.
	hasChecks                                   bool
	mutateDigest, verifyDigest, required, cache bool
	creds                                       *api.ImageRegistryCredentials
	credKey                                     string // creds in the digest cache's key
}

// verifyPlan is an entry after substitution: its attestor sets and
// attestations, each attestor with its host request and cache key.
type verifyPlan struct {
	attestors    []*attestorSet
	attestations []attestationPlan
}

type attestationPlan struct {
	predicateType string
	sets          []*attestorSet
}

type attestorSet struct {
	required int
	entries  []attestorNode
}

type attestorNode struct {
	nested *attestorSet
	req    ImageVerifyRequest // Image unset
	key    string             // a hash of the request without Image
	path   string             // ".keys", ".certificates", ".keyless"
}

// convertImageVerification applies upstream's conversion of deprecated
// fields: image to imageReferences, key/roots/subject/issuer to attestors.
func convertImageVerification(iv api.ImageVerification) api.ImageVerification {
	if iv.Image != "" && len(iv.ImageReferences) == 0 {
		iv.ImageReferences = []string{iv.Image}
	}
	if len(iv.Attestors) == 0 {
		var a api.Attestor
		switch {
		case iv.Key != "":
			a.Keys = &api.StaticKeyAttestor{PublicKeys: iv.Key}
		case iv.Subject != "" || iv.Issuer != "" || iv.Roots != "" || len(iv.AdditionalExtensions) > 0:
			a.Keyless = &api.KeylessAttestor{Subject: iv.Subject, Issuer: iv.Issuer, Roots: iv.Roots, AdditionalExtensions: iv.AdditionalExtensions}
		}
		if a.Keys != nil || a.Keyless != nil {
			iv.Attestors = []api.AttestorSet{{Entries: []api.Attestor{a}}}
		}
	}
	return iv
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

func (e *Engine) compileVerifyImages(r *api.Rule, path *field.Path, errs field.ErrorList) (*verifySpec, field.ErrorList) {
	vs := &verifySpec{}
	if len(r.ImageExtractors) == 0 {
		x, err := images.NewExtractor(images.Config{DefaultRegistry: e.cfg.defaultRegistry, EnableDefaultRegistryMutation: e.cfg.registryMutation})
		if err != nil {
			errs = append(errs, field.Invalid(path, "", err.Error()))
		}
		vs.extractor = x
	} else {
		cfg := images.Config{DefaultRegistry: e.cfg.defaultRegistry, EnableDefaultRegistryMutation: e.cfg.registryMutation,
			Extractors: map[string][]images.ExtractorConfig{},
			CompileJMESPath: func(expr string) (images.Searcher, error) {
				return e.jp.Compile(expr)
			}}
		for kind, list := range r.ImageExtractors {
			for _, x := range list {
				cfg.Extractors[kind] = append(cfg.Extractors[kind], images.ExtractorConfig{Path: x.Path, Value: x.Value, Name: x.Name, Key: x.Key, JMESPath: x.JMESPath})
			}
		}
		x, err := images.NewExtractor(cfg)
		if err != nil {
			errs = append(errs, field.Invalid(path.Child("imageExtractors"), "", err.Error()))
		}
		vs.extractor = x
	}
	for i, raw := range r.VerifyImages {
		p := path.Child("verifyImages").Index(i)
		iv := convertImageVerification(raw)
		ent := &verifyEntry{index: i, refs: wildcard.CompileAll(iv.ImageReferences), skip: wildcard.CompileAll(iv.SkipImageReferences),
			mutateDigest: boolOr(iv.MutateDigest, true), verifyDigest: boolOr(iv.VerifyDigest, true),
			required: boolOr(iv.Required, true), cache: boolOr(iv.UseCache, true),
			creds:     iv.ImageRegistryCredentials,
			hasChecks: len(iv.Attestors) > 0 || len(iv.Attestations) > 0}
		if ent.creds != nil {
			b, _ := json.Marshal(ent.creds)
			ent.credKey = string(b)
		}
		if len(ent.refs) == 0 {
			errs = append(errs, field.Invalid(p, "", "An image reference is required"))
		}
		for _, refs := range []struct {
			name string
			list []string
		}{{"imageReferences", iv.ImageReferences}, {"skipImageReferences", iv.SkipImageReferences}} {
			for j, ref := range refs.list {
				if strings.Contains(ref, "{{") {
					errs = append(errs, field.Invalid(p.Child(refs.name).Index(j), ref, "variables are not allowed in image references"))
				}
			}
		}
		switch iv.Type {
		case "", "Cosign", "SigstoreBundle", "Notary":
		default:
			errs = append(errs, field.NotSupported(p.Child("type"), iv.Type, []string{"Cosign", "SigstoreBundle", "Notary"}))
		}
		if v := iv.Validation; v != nil {
			if v.Deny != nil {
				ent.deny, errs = e.compileConditions(v.Deny.Conditions, p.Child("validate", "deny", "conditions"), errs)
				if ent.deny == nil {
					ent.deny = &condSet{}
				}
			}
			if v.Message != "" {
				t, err := e.compileTemplate(v.Message)
				if err != nil {
					errs = append(errs, field.Invalid(p.Child("validate", "message"), v.Message, err.Error()))
				}
				ent.message = t
			}
			// evaluated after the attestations, not substituted with the entry
			iv.Validation = nil
		}
		// attestation conditions are evaluated per statement, with the
		// predicate's fields as variables: they are compiled apart and left
		// out of the entry's substitution, as upstream leaves them out
		for j, a := range iv.Attestations {
			var blocks []*condSet
			for k, c := range a.Conditions {
				var rawc any
				if err := remarshal(c, &rawc); err != nil {
					errs = append(errs, field.Invalid(p.Child("attestations").Index(j).Child("conditions").Index(k), "", err.Error()))
					continue
				}
				var cs *condSet
				cs, errs = e.compileConditions(rawc, p.Child("attestations").Index(j).Child("conditions").Index(k), errs)
				if cs == nil {
					cs = &condSet{}
				}
				blocks = append(blocks, cs)
			}
			ent.conds = append(ent.conds, blocks)
			ent.names = append(ent.names, a.Name)
			iv.Attestations[j].Conditions = nil
		}
		var doc any
		if err := remarshal(iv, &doc); err != nil {
			errs = append(errs, field.Invalid(p, "", err.Error()))
			continue
		}
		t, err := e.compileTree(doc, fmt.Sprintf("/verifyImages/%d", i))
		if err != nil {
			errs = append(errs, field.Invalid(p, "", err.Error()))
			continue
		}
		if t.HasVariables() {
			ent.tree = t
		} else {
			plan, perrs := buildVerifyPlan(iv, p, true)
			errs = append(errs, perrs...)
			ent.static = plan
		}
		vs.entries = append(vs.entries, ent)
	}
	return vs, errs
}

// buildVerifyPlan checks an entry's attestors as upstream validates them
// (with checkPEM, their key material too: see checkAttestorPEM) and turns
// them into host requests.
func buildVerifyPlan(iv api.ImageVerification, path *field.Path, checkPEM bool) (*verifyPlan, field.ErrorList) {
	var errs field.ErrorList
	plan := &verifyPlan{}
	base := ImageVerifyRequest{Type: iv.Type, Repository: iv.Repository, Annotations: iv.Annotations,
		Credentials: iv.ImageRegistryCredentials, CosignOCI11: iv.CosignOCI11}
	if base.Type == "" {
		base.Type = "Cosign"
	}
	for i, as := range iv.Attestors {
		set, serrs := buildAttestorSet(as, base, path.Child("attestors").Index(i), checkPEM)
		errs = append(errs, serrs...)
		plan.attestors = append(plan.attestors, set)
	}
	for i, a := range iv.Attestations {
		ap := path.Child("attestations").Index(i)
		pt := a.PredicateType
		if pt == "" {
			pt = a.Type
		}
		at := attestationPlan{predicateType: pt}
		sets := a.Attestors
		if len(sets) == 0 {
			// upstream fetches the statements with an empty attestor
			sets = []api.AttestorSet{{Entries: []api.Attestor{{}}}}
		}
		req := base
		req.PredicateType = pt
		for j, as := range sets {
			set, serrs := buildAttestorSet(as, req, ap.Child("attestors").Index(j), checkPEM)
			if len(a.Attestors) > 0 {
				errs = append(errs, serrs...)
			}
			at.sets = append(at.sets, set)
		}
		plan.attestations = append(plan.attestations, at)
	}
	return plan, errs
}

func buildAttestorSet(as api.AttestorSet, base ImageVerifyRequest, path *field.Path, checkPEM bool) (*attestorSet, field.ErrorList) {
	entries, required, errs := expandAttestors(as, path)
	set := &attestorSet{required: required}
	for i, a := range entries {
		ep := path.Child("entries").Index(i)
		n := attestorNode{}
		if a.Attestor != nil {
			nested, nerrs := buildAttestorSet(*a.Attestor, base, ep.Child("attestor"), checkPEM)
			errs = append(errs, nerrs...)
			n.nested, n.path = nested, ".attestor"
			set.entries = append(set.entries, n)
			continue
		}
		aerrs := checkAttestor(a, ep)
		if len(aerrs) == 0 && checkPEM {
			aerrs = checkAttestorPEM(a, ep)
		}
		errs = append(errs, aerrs...)
		req := base
		req.Attestor = a
		if a.Repository != "" {
			req.Repository = a.Repository
		}
		if a.Annotations != nil {
			req.Annotations = a.Annotations
		}
		n.path = attestorPath(a)
		key, err := json.Marshal(req)
		if err != nil {
			errs = append(errs, field.Invalid(ep, "", err.Error()))
		}
		// the cache key names the attestor by a hash of the whole request
		// but the image: type, attestor, repository, annotations,
		// predicate type, credentials
		sum := sha256.Sum256(key)
		n.req, n.key = req, string(sum[:16])
		set.entries = append(set.entries, n)
	}
	return set, errs
}

// ruleImages returns the images of the rule's resource in a stable order
// (by pointer).
func (vs *verifySpec) ruleImages(rs *reqState, obj map[string]any) ([]images.Info, error) {
	infos, err := vs.extractor.Extract(obj)
	if err != nil {
		return nil, err
	}
	var out []images.Info
	for _, byName := range infos {
		for _, info := range byName {
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out, nil
}

func (ent *verifyEntry) matches(image string) bool {
	return wildcard.MatchAny(ent.refs, image) && !wildcard.MatchAny(ent.skip, image)
}

// imageVariable is the `image` variable of verifyImages rules.
func imageVariable(info images.Info) map[string]any {
	return map[string]any{
		"reference":        info.String(),
		"referenceWithTag": info.ReferenceWithTag(),
		"registry":         info.Registry,
		"path":             info.Path,
		"name":             info.Name,
		"tag":              info.Tag,
		"digest":           info.Digest,
	}
}

// plan returns the entry's plan for one image: the static one, or the
// entry substituted in a scope holding the image variable.
func (ent *verifyEntry) plan(sc *scope, info images.Info) (*verifyPlan, error) {
	if ent.static != nil {
		return ent.static, nil
	}
	c := sc.child()
	c.set("image", imageVariable(info))
	doc, err := c.substitute(ent.tree)
	if err != nil {
		return nil, &substError{err}
	}
	var iv api.ImageVerification
	if err := remarshal(doc, &iv); err != nil {
		return nil, &substError{err}
	}
	// key material from variables is checked by the verifier, which fails
	// the image with its parser's message, as upstream
	plan, errs := buildVerifyPlan(iv, field.NewPath("verifyImages").Index(ent.index), false)
	if len(errs) > 0 {
		return nil, &substError{errs.ToAggregate()}
	}
	return plan, nil
}

// verification is the outcome of one image for one entry.
type verification struct {
	status Status
	msg    string
	err    error
	digest string
}

// verifyImagesRule is the handler of verifyImages rules at mutation: each
// matching image is verified, then, when mutateDigest is set, pinned to
// its digest (the digest patch joins Mutate's patch); the outcomes are
// recorded for the verify-images annotation.
func (e *Engine) verifyImagesRule(rs *reqState, p *Policy, r *rule, sc *scope, _ []*polex.Exception) []RuleResult {
	if rs.op == api.Delete {
		return nil
	}
	vs := r.verify
	infos, err := vs.ruleImages(rs, rs.obj)
	if err != nil {
		return rs.single(r.errorResult("failed to extract images", err))
	}
	var results []RuleResult
	type pin struct{ pointer, value string }
	var pins []pin
	changedAnnotation := rs.op == api.Update && annotationOf(rs.object) != annotationOf(rs.oldObject)
	for _, ent := range vs.entries {
		for _, info := range infos {
			image := info.String()
			if !ent.matches(image) {
				continue
			}
			if changedAnnotation {
				results = append(results, r.result(StatusFail, ImageVerifyAnnotation+" annotation cannot be changed"))
				continue
			}
			if rs.op == api.Update && !imageChanged(rs.obj, rs.oldObject, info.Pointer) {
				continue
			}
			v := verification{}
			hasResult := false
			if ent.hasChecks {
				v = e.verifyImage(rs, p, sc, ent, info)
				hasResult = true
			}
			if ent.mutateDigest && info.Digest == "" && (v.status == StatusPass || !ent.hasChecks) {
				digest := v.digest
				var err error
				if digest == "" {
					digest, err = e.resolveDigest(rs, ent, image, rs.pullSecrets(info))
				}
				if err != nil {
					if errors.Is(err, ErrRegistryUnavailable) && p.FailurePolicy() == "Ignore" {
						v = verification{status: StatusSkip, msg: fmt.Sprintf("image digest of %s not resolved, registry unavailable and failurePolicy is Ignore: %v", image, err)}
					} else {
						v = verification{status: StatusError, msg: "failed to update digest: " + err.Error(), err: err}
					}
					hasResult = true
				} else {
					pins = append(pins, pin{info.Pointer, info.ReferenceWithTag() + "@" + digest})
					if !hasResult {
						v = verification{status: StatusPass, msg: "mutated image digest"}
						hasResult = true
					}
					info.Digest = digest
					image = info.String()
				}
			}
			if !hasResult {
				continue
			}
			if ent.hasChecks {
				rs.noteImage(image, v.status)
			}
			res := r.result(v.status, v.msg)
			res.Err = resultErr(v.err)
			res.EmitWarning = p.emitWarning
			results = append(results, res)
		}
	}
	if len(pins) > 0 {
		obj := rs.obj
		for _, p := range pins {
			var err error
			if obj, err = replaceAt(obj, p.pointer, p.value); err != nil {
				return []RuleResult{r.errorResult("failed to apply patch", err)}
			}
		}
		rs.setObject(obj)
	}
	return results
}

// verifyImages runs the verifyImages rules of the set at mutation, after
// the mutate rules (as upstream runs them once the object is mutated), and
// writes the verify-images annotation.
func (s *PolicySet) verifyImages(rs *reqState, resp *Response) error {
	cands := s.candidates(&rs.matchRes)
	for i, p := range s.policies {
		if !p.HasRuleType(ImageVerify) {
			continue
		}
		if err := rs.ctx.Err(); err != nil {
			return err
		}
		if keyOf(&rs.matchRes) != cands.key {
			cands = s.candidates(&rs.matchRes)
		}
		pr := s.eng.runPolicy(rs, p, ImageVerify, s.eng.verifyImagesRule, cands.policy(i))
		merged := false
		for j := range resp.Policies {
			if q := &resp.Policies[j]; q.Policy == p {
				q.Rules = append(q.Rules[:len(q.Rules):len(q.Rules)], pr.Rules...)
				q.PatchedResource = pr.PatchedResource
				merged = true
				break
			}
		}
		if !merged {
			resp.Policies = append(resp.Policies, pr)
		}
	}
	rs.annotateVerified()
	return nil
}

// replaceAt returns obj with the string at pointer (an image field, as
// images.Info.Pointer gives it: unescaped keys and list indexes) replaced
// by value; the maps and lists on the way are copied, the rest is shared
// (the engine never modifies objects in place). It is the digest patch of
// upstream's RFC 6902 "replace" operation, applied without encoding the
// object.
func replaceAt(obj map[string]any, pointer, value string) (map[string]any, error) {
	parts := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	var walk func(cur any, i int) (any, error)
	walk = func(cur any, i int) (any, error) {
		if i == len(parts) {
			if _, ok := cur.(string); !ok {
				return nil, fmt.Errorf("%s is not a string", pointer)
			}
			return value, nil
		}
		switch t := cur.(type) {
		case map[string]any:
			v, ok := t[parts[i]]
			if !ok {
				return nil, fmt.Errorf("%s: no field %s", pointer, parts[i])
			}
			nv, err := walk(v, i+1)
			if err != nil {
				return nil, err
			}
			out := make(map[string]any, len(t))
			for k, x := range t {
				out[k] = x
			}
			out[parts[i]] = nv
			return out, nil
		case []any:
			n, err := strconv.Atoi(parts[i])
			if err != nil || n < 0 || n >= len(t) {
				return nil, fmt.Errorf("%s: no element %s", pointer, parts[i])
			}
			nv, err := walk(t[n], i+1)
			if err != nil {
				return nil, err
			}
			out := slices.Clone(t)
			out[n] = nv
			return out, nil
		}
		return nil, fmt.Errorf("%s: cannot descend into %T", pointer, cur)
	}
	v, err := walk(obj, 0)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// verifyImage verifies one image against an entry's attestors and
// attestations.
func (e *Engine) verifyImage(rs *reqState, p *Policy, sc *scope, ent *verifyEntry, info images.Info) verification {
	image := info.String()
	fail := func(err error) verification {
		msg := fmt.Sprintf("failed to verify image %s: %s", image, err.Error())
		if errors.Is(err, ErrRegistryUnavailable) {
			if p.FailurePolicy() == "Ignore" {
				return verification{status: StatusSkip, msg: msg + " (failurePolicy Ignore)"}
			}
			return verification{status: StatusError, msg: msg, err: err}
		}
		if errors.Is(err, ErrNotConfigured) {
			return verification{status: StatusError, msg: msg, err: err}
		}
		return verification{status: StatusFail, msg: msg, err: err}
	}
	if e.cfg.imageVerifier == nil {
		return fail(fmt.Errorf("no image verifier: %w", ErrNotConfigured))
	}
	plan, err := ent.plan(sc, info)
	if err != nil {
		return verification{status: StatusError, msg: "failed to substitute variables: " + err.Error(), err: err}
	}
	pullSecrets := rs.pullSecrets(info)
	digest := info.Digest
	if digest == "" {
		if digest, err = e.resolveDigest(rs, ent, image, pullSecrets); err != nil {
			return fail(err)
		}
	}
	byDigest := info.ReferenceWithTag()
	byDigest = byDigest[:strings.LastIndexByte(byDigest, ':')] + "@" + digest
	for i, set := range plan.attestors {
		if err := e.verifyAttestorSet(rs, ent, set, byDigest, pullSecrets, fmt.Sprintf(".attestors[%d]", i)); err != nil {
			return fail(err)
		}
	}
	if len(plan.attestations) == 0 {
		return verification{status: StatusPass, msg: "verified image signatures for " + image, digest: digest}
	}
	// the predicates of named attestations are variables of the validate
	// block
	var named map[string]any
	for i, at := range plan.attestations {
		path := fmt.Sprintf(".attestations[%d]", i)
		if at.predicateType == "" {
			return verification{status: StatusFail, msg: path + ": missing type"}
		}
		for j, set := range at.sets {
			setPath := fmt.Sprintf("%s.attestors[%d]", path, j)
			verified := 0
			var errs []error
			for k, n := range set.entries {
				entryPath := fmt.Sprintf("%s.entries[%d]%s", setPath, k, n.path)
				statements, err := e.fetchAttestations(rs, ent, n, byDigest, pullSecrets)
				if err != nil {
					if errors.Is(err, ErrRegistryUnavailable) || rs.ctx.Err() != nil {
						return fail(fmt.Errorf("%s: %w", entryPath, err))
					}
					errs = append(errs, fmt.Errorf("%s: %w", entryPath, err))
					continue
				}
				found, ok, err := e.checkStatements(sc, info, ent.conds[i], at.predicateType, statements)
				switch {
				case err != nil:
					errs = append(errs, fmt.Errorf("%s: failed to check attestations: %w", entryPath, err))
				case !found:
					errs = append(errs, fmt.Errorf("%s: attestations not found for predicate type %s", entryPath, at.predicateType))
				case !ok:
					errs = append(errs, fmt.Errorf("%s: attestation checks failed for %s and predicate %s", entryPath, image, at.predicateType))
				default:
					if name := ent.names[i]; name != "" && named[name] == nil {
						if named == nil {
							named = map[string]any{}
						}
						named[name] = firstPredicate(statements, at.predicateType)
					}
					verified++
				}
				if verified >= set.required {
					break
				}
			}
			if verified < set.required {
				msg := fmt.Sprintf("image attestations verification failed, verifiedCount: %d, requiredCount: %d", verified, set.required)
				if len(errs) > 0 {
					msg += ", error: " + joinErrors(errs)
				}
				return verification{status: StatusFail, msg: msg, err: errors.Join(errs...)}
			}
		}
	}
	if ent.deny != nil {
		c := sc.child()
		c.own()
		c.data["image"] = normalize(imageVariable(info))
		for k, v := range named {
			c.data[k] = v
		}
		c.memo = nil
		holds, held, err := c.checkConditionsMessages(ent.deny)
		if err != nil {
			// upstream's validate error is the rule's failure
			return verification{status: StatusFail, msg: "validation in verifyImages failed: failed to check deny conditions: " + err.Error(), err: err}
		}
		if holds {
			msg, ok := c.denyMessage(ent.message, held)
			if !ok {
				// upstream's default names the (empty) message: two spaces
				msg = "validation error: imageVerify  failed"
			}
			return verification{status: StatusFail, msg: "validation in verifyImages failed: " + msg}
		}
	}
	return verification{status: StatusPass, msg: "verified image attestations for " + image, digest: digest}
}

// firstPredicate returns the predicate of the first statement of the
// predicate type.
func firstPredicate(statements []map[string]any, predicateType string) any {
	for _, s := range statements {
		if pt, _ := s["predicateType"].(string); pt == predicateType {
			return s["predicate"]
		}
	}
	return nil
}

// joinErrors joins errors as upstream's multierr prints them.
func joinErrors(errs []error) string {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// verifyAttestorSet verifies until set.required entries verified; it
// returns the errors of the entries that did not.
func (e *Engine) verifyAttestorSet(rs *reqState, ent *verifyEntry, set *attestorSet, image string, pullSecrets []string, path string) error {
	var errs []error
	verified := 0
	for i, n := range set.entries {
		var err error
		if n.nested != nil {
			err = e.verifyAttestorSet(rs, ent, n.nested, image, pullSecrets, fmt.Sprintf("%s.entries[%d]%s", path, i, n.path))
		} else {
			_, err = e.vcache.Do(rs.ctx, cacheKey('s', image, n.key, pullSecrets), ent.cache, func(ctx context.Context) (verifyOutcome, error) {
				req := n.req
				req.Image, req.PullSecrets = image, pullSecrets
				ctx, done := e.hostContext(ctx)
				return verifyOutcome{}, done(e.cfg.imageVerifier.VerifySignature(ctx, req))
			})
			if err != nil {
				err = fmt.Errorf("%s.entries[%d]%s: %w", path, i, n.path, err)
			}
		}
		if err == nil {
			if verified++; verified >= set.required {
				return nil
			}
			continue
		}
		if rs.ctx.Err() != nil {
			return err
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (e *Engine) fetchAttestations(rs *reqState, ent *verifyEntry, n attestorNode, image string, pullSecrets []string) ([]map[string]any, error) {
	if n.nested != nil {
		return nil, errors.New("nested attestors are not supported in attestations")
	}
	out, err := e.vcache.Do(rs.ctx, cacheKey('a', image, n.key, pullSecrets), ent.cache, func(ctx context.Context) (verifyOutcome, error) {
		req := n.req
		req.Image, req.PullSecrets = image, pullSecrets
		ctx, done := e.hostContext(ctx)
		st, err := e.cfg.imageVerifier.FetchAttestations(ctx, req)
		err = done(err)
		if err != nil {
			return verifyOutcome{}, err
		}
		// statements are shared by the cache: normalized once, read only
		norm := make([]map[string]any, 0, len(st))
		for _, s := range st {
			if m, ok := normalize(s).(map[string]any); ok {
				norm = append(norm, m)
			}
		}
		return verifyOutcome{statements: norm}, nil
	})
	return out.statements, err
}

func (e *Engine) resolveDigest(rs *reqState, ent *verifyEntry, image string, pullSecrets []string) (string, error) {
	if e.cfg.imageVerifier == nil {
		return "", fmt.Errorf("no image verifier to resolve the digest of %s: %w", image, ErrNotConfigured)
	}
	out, err := e.vcache.Do(rs.ctx, cacheKey('d', image, ent.credKey, pullSecrets), ent.cache, func(ctx context.Context) (verifyOutcome, error) {
		ctx, done := e.hostContext(ctx)
		d, err := e.cfg.imageVerifier.ResolveDigest(ctx, ImageVerifyRequest{Image: image, Credentials: ent.creds, PullSecrets: pullSecrets})
		err = done(err)
		if err != nil {
			return verifyOutcome{}, err
		}
		if !strings.Contains(d, ":") {
			return verifyOutcome{}, fmt.Errorf("registry returned an invalid digest %q for %s", d, image)
		}
		return verifyOutcome{digest: d}, nil
	})
	if err != nil {
		return "", err
	}
	return out.digest, nil
}

// verifyOutcome is what the verification cache keeps: the verified
// statements of an attestation fetch (none for a signature), or the
// digest of a resolution.
type verifyOutcome struct {
	statements []map[string]any
	digest     string
}

// cacheKey is the key of a verification outcome: the kind of question
// (d: digest, s: signature, a: attestations), the image, the attestor
// (a hash of the request but the image, which holds the entry's
// imageRegistryCredentials; for a digest, the credentials alone) and the
// resource's pull secrets. Credentials are part of the key: an outcome
// obtained with one tenant's credentials answers no other's request.
func cacheKey(kind byte, image, attestor string, pullSecrets []string) string {
	n := 3 + len(image) + len(attestor)
	for _, s := range pullSecrets {
		n += len(s) + 1
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte(kind)
	b.WriteByte(0)
	b.WriteString(image)
	b.WriteByte(0)
	b.WriteString(attestor)
	for _, s := range pullSecrets {
		b.WriteByte(0)
		b.WriteString(s)
	}
	return b.String()
}

// checkStatements checks the statements of the predicate type: there must
// be one, and each must satisfy every conditions block, with the fields of
// its predicate as variables.
func (e *Engine) checkStatements(sc *scope, info images.Info, blocks []*condSet, predicateType string, statements []map[string]any) (found, ok bool, err error) {
	for _, s := range statements {
		if pt, _ := s["predicateType"].(string); pt != predicateType {
			continue
		}
		found = true
		if len(blocks) == 0 {
			continue
		}
		predicate, isMap := s["predicate"].(map[string]any)
		if !isMap {
			return true, false, fmt.Errorf("failed to extract predicate from statement of type %s", predicateType)
		}
		c := sc.child()
		c.own()
		c.data["image"] = normalize(imageVariable(info))
		for k, v := range predicate {
			c.data[k] = v
		}
		c.memo = nil
		holds, err := c.checkConditionsEagerly(blocks)
		if err != nil {
			return true, false, fmt.Errorf("failed to substitute variables in attestation conditions: %w", err)
		}
		if !holds {
			return true, false, nil
		}
	}
	return found, found, nil
}

// pullSecrets returns the image's pull secrets as "namespace/name", in
// the resource's namespace.
func (rs *reqState) pullSecrets(info images.Info) []string {
	if len(info.ImagePullSecrets) == 0 {
		return nil
	}
	out := make([]string, len(info.ImagePullSecrets))
	for i, s := range info.ImagePullSecrets {
		out[i] = rs.matchRes.Namespace + "/" + s
	}
	return out
}

// noteImage records an image's outcome for the verify-images annotation.
func (rs *reqState) noteImage(image string, status Status) {
	s := imageFail
	switch status {
	case StatusPass:
		s = imagePass
	case StatusSkip, StatusWarn:
		s = imageSkip
	}
	if rs.verified == nil {
		rs.verified = map[string]string{}
	}
	rs.verified[image] = s
}

// annotateVerified writes the verify-images annotation of the images the
// rules verified (merged into the one the object has), without modifying
// the object in place. It runs after every rule of a Mutate call.
func (rs *reqState) annotateVerified() {
	if len(rs.verified) == 0 {
		return
	}
	data := map[string]string{}
	if old := annotationOf(rs.obj); old != "" {
		if m, err := parseImageAnnotation(old); err == nil {
			data = m
		}
	}
	maps := rs.verified
	for k, v := range maps {
		data[k] = v
	}
	raw := annotationJSON(data)
	obj := make(map[string]any, len(rs.obj))
	for k, v := range rs.obj {
		obj[k] = v
	}
	meta := map[string]any{}
	if m, ok := obj["metadata"].(map[string]any); ok {
		for k, v := range m {
			meta[k] = v
		}
	}
	ann := map[string]any{}
	if a, ok := meta["annotations"].(map[string]any); ok {
		for k, v := range a {
			ann[k] = v
		}
	}
	ann[ImageVerifyAnnotation] = string(raw)
	meta["annotations"] = ann
	obj["metadata"] = meta
	// the last change of a Mutate call: no rule reads the object after
	// it, so what derives from it (variables, match data) is not rebuilt;
	// the new maps hold canonical values only
	rs.obj = obj
}

// annotationJSON is json.Marshal(data), written directly when every key
// and value is plain (image references are), through encoding/json
// otherwise.
func annotationJSON(data map[string]string) string {
	keys := make([]string, 0, len(data))
	n := 2
	for k, v := range data {
		if !plainJSON(k) || !plainJSON(v) {
			raw, _ := json.Marshal(data)
			return string(raw)
		}
		keys = append(keys, k)
		n += len(k) + len(v) + 6
	}
	slices.Sort(keys)
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(k)
		b.WriteString(`":"`)
		b.WriteString(data[k])
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// plainJSON reports whether encoding/json writes s as is between quotes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

func annotationOf(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	s, _ := ann[ImageVerifyAnnotation].(string)
	return s
}

// parseImageAnnotation reads the annotation: statuses by image, or, as
// older upstream versions wrote it, booleans.
func parseImageAnnotation(s string) (map[string]string, error) {
	var raw map[string]any
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		switch t := v.(type) {
		case string:
			out[k] = t
		case bool:
			out[k] = imageFail
			if t {
				out[k] = imagePass
			}
		default:
			return nil, fmt.Errorf("invalid status %v for image %s", v, k)
		}
	}
	return out, nil
}

// imageChanged reports whether the value at pointer differs between the
// new and the old object (absent in the old one counts as changed).
func imageChanged(obj, old map[string]any, pointer string) bool {
	a, okA := lookupPointer(obj, pointer)
	b, okB := lookupPointer(old, pointer)
	return !okA || !okB || a != b
}

func lookupPointer(obj map[string]any, pointer string) (string, bool) {
	var cur any = obj
	for _, part := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		switch t := cur.(type) {
		case map[string]any:
			cur = t[part]
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(t) {
				return "", false
			}
			cur = t[i]
		default:
			return "", false
		}
	}
	s, ok := cur.(string)
	return s, ok
}

// validateImagesRule is the handler of verifyImages rules at validation:
// verifyDigest requires a digest, required an image recorded as verified
// in the verify-images annotation.
func (e *Engine) validateImagesRule(rs *reqState, p *Policy, r *rule, sc *scope, _ []*polex.Exception) []RuleResult {
	if rs.op == api.Delete {
		return nil
	}
	vs := r.verify
	infos, err := vs.ruleImages(rs, rs.obj)
	if err != nil {
		return rs.single(r.errorResult("failed to extract images", err))
	}
	var failed, passed, skipped []string
	var ivm map[string]string
	var ivmErr error
	ivmRead := false
	matched := false
	for _, ent := range vs.entries {
		for _, info := range infos {
			image := info.String()
			if !ent.matches(image) {
				continue
			}
			matched = true
			if ent.verifyDigest && info.Digest == "" {
				failed = append(failed, "missing digest for "+image)
				continue
			}
			if !ent.required || !ent.hasChecks {
				continue
			}
			if !ivmRead {
				ivmRead = true
				if a := annotationOf(rs.obj); a == "" {
					ivmErr = errors.New("image is not verified")
				} else if ivm, err = parseImageAnnotation(a); err != nil {
					ivmErr = fmt.Errorf("failed to parse image metadata: %w", err)
				}
			}
			switch {
			case ivmErr != nil:
				failed = append(failed, ivmErr.Error())
			case ivm[image] == imagePass:
				passed = append(passed, image)
			case ivm[image] == imageSkip:
				skipped = append(skipped, image)
			default:
				failed = append(failed, "unverified image "+image)
			}
		}
	}
	if !matched {
		return nil
	}
	var res RuleResult
	switch {
	case len(failed) > 0:
		res = r.result(StatusFail, strings.Join(uniqueStrings(failed), "; "))
	case len(passed) > 0 || len(skipped) == 0:
		msg := "image verified"
		if len(skipped) > 0 {
			msg = strings.Join(append([]string{"image verified, skipped images:"}, skipped...), " ")
		}
		res = r.result(StatusPass, msg)
	default:
		res = r.result(StatusSkip, strings.Join(append([]string{"image skipped, skipped images:"}, skipped...), " "))
	}
	res.EmitWarning = p.emitWarning
	return rs.single(res)
}

func uniqueStrings(list []string) []string {
	seen := make(map[string]bool, len(list))
	out := list[:0:0]
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
