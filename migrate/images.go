package migrate

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
)

// ivEnv is the environment the ImageValidatingPolicy's matchConditions
// and variables are checked on (its own functions, verifyImageSignatures
// and the like, are the engine's to check).
var ivEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(append(celpolicy.EnvOptions(), cel.WithLibraries(cel.ImageValidatingPolicyLibraries))...)
})

// allImages are the images of every container of the resource, as the
// ImageValidatingPolicy's images variable lists them.
const allImages = "images.?containers.orValue([]) + images.?initContainers.orValue([]) + images.?ephemeralContainers.orValue([])"

// ivOut is what the verifyImages rules of a policy make.
type ivOut struct {
	refs         []policiesv1alpha1.MatchImageReference
	attestors    []policiesv1alpha1.Attestor
	attestations []policiesv1alpha1.Attestation
	validations  []admissionregistrationv1.Validation
	config       policiesv1alpha1.ValidationConfiguration
	credentials  *policiesv1alpha1.Credentials
	action       string
	notes        []string
}

// convertImageRules converts the verifyImages rules at idx into one
// ImageValidatingPolicy: their image references, attestors (one per
// entry), attestations, and the validations that count the attestors
// that verify each image.
func convertImageRules(p api.ClassicPolicy, name string, idx []int, outcomes []RuleOutcome) *Output {
	spec := p.GetSpec()
	var rules []*vrule
	out := &ivOut{}
	pv := &policyVars{}
	var converted []int
	for _, i := range idx {
		r := &spec.Rules[i]
		path := fmt.Sprintf("spec.rules[%d]", i)
		c := &jp{sc: newScope()}
		mc, conds, err := ruleBase(c, r, path, pv)
		if err == nil {
			err = c.imageRule(r, path, out, spec.ValidationFailureAction)
		}
		if err != nil {
			outcomes[i].Problems = append(outcomes[i].Problems, problemOf(path, err))
			continue
		}
		rules = append(rules, &vrule{name: r.Name, path: path, mc: mc, conds: conds})
		converted = append(converted, i)
	}
	if len(rules) == 0 {
		return nil
	}
	if len(rules) > 1 && !(sameKinds(rules) && sameConds(rules)) {
		for _, i := range converted {
			outcomes[i].Problems = append(outcomes[i].Problems, Problem{Path: fmt.Sprintf("spec.rules[%d]", i), Construct: "verifyImages rules",
				Detail: "with different matches: an ImageValidatingPolicy verifies its images for one set of resources"})
		}
		return nil
	}
	iv := &api.ImageValidatingPolicy{}
	iv.APIVersion = api.GroupPolicies + "/v1"
	iv.Kind = api.KindImageValidatingPolicy
	if api.IsNamespaced(p) {
		iv.Kind = api.KindNamespacedImageValidatingPolicy
	}
	iv.ObjectMeta = metav1.ObjectMeta{Name: name, Labels: labelsOf(p), Annotations: outputAnnotations(p.GetAnnotations())}
	if api.IsNamespaced(p) {
		iv.Namespace = p.GetNamespace()
	}
	s := &iv.Spec
	var kinds []kindRef
	for _, r := range rules {
		kinds = append(kinds, r.mc.kinds...)
	}
	s.MatchConstraints = matchConstraints(kinds, operationsOf(rules))
	liftSelectors(rules, s.MatchConstraints)
	used := map[string]bool{}
	comments := map[string]string{"spec.matchConstraints": "the kinds and operations the rules match",
		"spec.attestors": "one per entry of the rules' attestor sets"}
	for _, c := range rules[0].applies(false) {
		s.MatchConditions = append(s.MatchConditions, matchCondition(condName(c.name, used), pv.bindVariables(c.e)))
		comments[fmt.Sprintf("spec.matchConditions[%d]", len(s.MatchConditions)-1)] = condComment(c.name)
	}
	for _, v := range pv.list {
		s.Variables = append(s.Variables, varOut(v))
	}
	s.MatchImageReferences, s.Attestors, s.Attestations = out.refs, out.attestors, out.attestations
	s.Validations, s.ValidationConfigurations, s.Credentials = out.validations, out.config, out.credentials
	s.ValidationAction = validationActions(out.action, p.GetSpec())
	s.FailurePolicy = failurePolicy(p.GetSpec())
	if eval := evaluation(p.GetSpec()); eval != nil {
		s.EvaluationConfiguration = eval
	}
	if t := timeout(p.GetSpec()); t != nil {
		s.WebhookConfiguration = &policiesv1alpha1.WebhookConfiguration{TimeoutSeconds: t}
	}
	if len(out.notes) > 0 {
		comments["spec.validationConfigurations"] = strings.Join(out.notes, "; ")
	}
	set := &exprSet{namespace: iv.Namespace, conditions: s.MatchConditions, condPath: "spec.matchConditions", variables: s.Variables, varPath: "spec.variables"}
	if errs, err := set.checkOn(ivEnv); err == nil && len(errs) > 0 {
		for _, i := range converted {
			outcomes[i].Problems = append(outcomes[i].Problems, Problem{Path: fmt.Sprintf("spec.rules[%d]", i), Construct: "CEL of the conversion",
				Detail: fmt.Sprintf("%s does not compile: %v", errs[0].path, errs[0].err)})
		}
		return nil
	}
	o := &Output{Object: iv, Type: TypeVerifyImages, comments: comments}
	for _, i := range converted {
		outcomes[i].Policy = name
		o.Rules = append(o.Rules, outcomes[i].Rule)
	}
	return o
}

// imageRule converts the verifyImages entries of a rule.
func (c *jp) imageRule(r *api.Rule, path string, out *ivOut, policyAction api.ValidationFailureAction) error {
	for i := range r.VerifyImages {
		v := &r.VerifyImages[i]
		vpath := fmt.Sprintf("%s.verifyImages[%d]", path, i)
		if err := c.imageVerification(v, vpath, out, policyAction); err != nil {
			return err
		}
	}
	return nil
}

// imageVerification converts one verifyImages entry.
func (c *jp) imageVerification(v *api.ImageVerification, path string, out *ivOut, policyAction api.ValidationFailureAction) error {
	notary := strings.EqualFold(v.Type, "Notary")
	if v.Type != "" && !notary && !strings.EqualFold(v.Type, "Cosign") {
		return unsupportedf("verifyImages type "+v.Type, "at %s.type", path)
	}
	if len(v.SkipImageReferences) > 0 {
		return unsupportedf("skipImageReferences", "at %s.skipImageReferences: matchImageReferences only include", path)
	}
	if v.Key != "" || v.Subject != "" || v.Roots != "" || v.Image != "" {
		return unsupportedf("verifyImages key, subject, roots, image", "at %s: the deprecated fields (use attestors and imageReferences)", path)
	}
	if v.Validation != nil && v.Validation.Deny != nil {
		return unsupportedf("verifyImages validate", "at %s.validate: deny conditions on the image", path)
	}
	refs := v.ImageReferences
	for _, ref := range refs {
		out.refs = append(out.refs, policiesv1alpha1.MatchImageReference{Glob: ref})
	}
	action := "Audit"
	if v.FailureAction != nil && v.FailureAction.IsEnforce() || v.FailureAction == nil && policyAction.IsEnforce() {
		action = "Enforce"
	}
	switch out.action {
	case "":
		out.action = action
	case action:
	default:
		return unsupportedf("failureAction "+action, "at %s.failureAction: differs from the other entries': an ImageValidatingPolicy has one set of validationActions", path)
	}
	setBool := func(dst **bool, b *bool) {
		if b != nil {
			x := *b
			*dst = &x
		}
	}
	setBool(&out.config.MutateDigest, v.MutateDigest)
	setBool(&out.config.VerifyDigest, v.VerifyDigest)
	setBool(&out.config.Required, v.Required)
	if cr := v.ImageRegistryCredentials; cr != nil {
		out.credentials = &policiesv1alpha1.Credentials{AllowInsecureRegistry: cr.AllowInsecureRegistry, Secrets: cr.Secrets}
		for _, p := range cr.Providers {
			out.credentials.Providers = append(out.credentials.Providers, policiesv1alpha1.CredentialsProvidersType(p))
		}
	}
	if v.UseCache != nil || v.CosignOCI11 || len(v.Annotations) > 0 {
		out.notes = append(out.notes, "useCache, cosignOCI11 and annotations are not kept")
	}
	for i, set := range v.Attestors {
		names, err := c.attestorSet(set, notary, v.Repository, fmt.Sprintf("%s.attestors[%d]", path, i), out)
		if err != nil {
			return err
		}
		out.validations = append(out.validations, admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("(%s).all(image, verifyImageSignatures(image, [%s]) >= %d)", allImages, strings.Join(names, ", "), required(set)),
			Message:    "failed to verify image signatures of " + strings.Join(refs, ", "),
		})
	}
	for i, a := range v.Attestations {
		if err := c.attestation(a, notary, v.Repository, fmt.Sprintf("%s.attestations[%d]", path, i), refs, out); err != nil {
			return err
		}
	}
	return nil
}

// required is the number of attestors of a set that must verify: count, else
// all of them.
func required(set api.AttestorSet) int {
	if set.Count != nil && *set.Count > 0 {
		return *set.Count
	}
	return len(set.Entries)
}

// attestorSet converts the entries of an attestor set into attestors and
// returns the references to them (attestors.<name>).
func (c *jp) attestorSet(set api.AttestorSet, notary bool, repository, path string, out *ivOut) ([]string, error) {
	var names []string
	for i, e := range set.Entries {
		epath := fmt.Sprintf("%s.entries[%d]", path, i)
		a, err := attestor(e, notary, repository, epath)
		if err != nil {
			return nil, err
		}
		a.Name = "attestor" + strconv.Itoa(len(out.attestors))
		out.attestors = append(out.attestors, a)
		names = append(names, "attestors."+a.Name)
	}
	if len(names) == 0 {
		return nil, unsupportedf("attestors", "at %s: no entries", path)
	}
	return names, nil
}

// attestor converts one attestor entry.
func attestor(e api.Attestor, notary bool, repository, path string) (policiesv1alpha1.Attestor, error) {
	var a policiesv1alpha1.Attestor
	if e.Attestor != nil {
		return a, unsupportedf("nested attestor set", "at %s.attestor", path)
	}
	if e.Repository != "" {
		repository = e.Repository
	}
	if notary {
		if e.Certificates == nil || e.Certificates.Certificate == "" {
			return a, unsupportedf("notary attestor", "at %s: only certificates", path)
		}
		a.Notary = &policiesv1alpha1.Notary{Certs: &policiesv1alpha1.StringOrExpression{Value: e.Certificates.Certificate}}
		if e.Certificates.CertificateChain != "" {
			return a, unsupportedf("notary certChain", "at %s.certificates.certChain", path)
		}
		return a, nil
	}
	cs := &policiesv1alpha1.Cosign{}
	var rekor *api.Rekor
	var ct *api.CTLog
	switch {
	case e.Keys != nil:
		k := e.Keys
		if k.Secret != nil {
			return a, unsupportedf("keys.secret", "at %s.keys.secret: a key in a Secret (give it inline or through a variable)", path)
		}
		cs.Key = &policiesv1alpha1.Key{Data: k.PublicKeys, KMS: k.KMS, HashAlgorithm: k.SignatureAlgorithm}
		rekor, ct = k.Rekor, k.CTLog
	case e.Keyless != nil:
		k := e.Keyless
		cs.Keyless = &policiesv1alpha1.Keyless{Roots: k.Roots, AdditionalExtensions: k.AdditionalExtensions,
			Identities: []policiesv1alpha1.Identity{{Issuer: k.Issuer, Subject: k.Subject, IssuerRegExp: k.IssuerRegExp, SubjectRegExp: k.SubjectRegExp}}}
		rekor, ct = k.Rekor, k.CTLog
	case e.Certificates != nil:
		k := e.Certificates
		cs.Certificate = &policiesv1alpha1.Certificate{Certificate: &policiesv1alpha1.StringOrExpression{Value: k.Certificate}}
		if k.CertificateChain != "" {
			cs.Certificate.CertificateChain = &policiesv1alpha1.StringOrExpression{Value: k.CertificateChain}
		}
		rekor, ct = k.Rekor, k.CTLog
	default:
		return a, unsupportedf("attestor", "at %s: no keys, keyless or certificates", path)
	}
	if rekor != nil || ct != nil {
		cs.CTLog = &policiesv1alpha1.CTLog{}
		if rekor != nil {
			cs.CTLog.URL, cs.CTLog.RekorPubKey, cs.CTLog.InsecureIgnoreTlog = rekor.URL, rekor.PubKey, rekor.IgnoreTlog
		}
		if ct != nil {
			cs.CTLog.CTLogPubKey, cs.CTLog.InsecureIgnoreSCT, cs.CTLog.TSACertChain = ct.PubKey, ct.IgnoreSCT, ct.TSACertChain
		}
	}
	if repository != "" {
		cs.Source = &policiesv1alpha1.Source{Repository: repository}
	}
	a.Cosign = cs
	return a, nil
}

// attestation converts an attestation check: its attestors and its
// conditions on the statement's predicate.
func (c *jp) attestation(a api.Attestation, notary bool, repository, path string, refs []string, out *ivOut) error {
	typ := a.PredicateType
	if typ == "" {
		typ = a.Type
	}
	if typ == "" {
		return unsupportedf("attestation", "at %s: no predicateType", path)
	}
	name := "attestation" + strconv.Itoa(len(out.attestations))
	at := policiesv1alpha1.Attestation{Name: name}
	if notary {
		at.Referrer = &policiesv1alpha1.Referrer{Type: typ}
	} else {
		at.InToto = &policiesv1alpha1.InToto{Type: typ}
	}
	out.attestations = append(out.attestations, at)
	for i, set := range a.Attestors {
		names, err := c.attestorSet(set, notary, repository, fmt.Sprintf("%s.attestors[%d]", path, i), out)
		if err != nil {
			return err
		}
		out.validations = append(out.validations, admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("(%s).all(image, verifyAttestationSignatures(image, attestations.%s, [%s]) >= %d)", allImages, name, strings.Join(names, ", "), required(set)),
			Message:    "failed to verify the " + typ + " attestation of " + strings.Join(refs, ", "),
		})
	}
	if len(a.Conditions) == 0 {
		return nil
	}
	// the conditions read the statement's predicate at their root
	saved := c.sc
	c.sc = saved.child()
	defer func() { c.sc = saved }()
	c.sc.root = &jv{e: ident("payload"), t: tMap}
	var holds []ex
	for i, block := range a.Conditions {
		b := block
		e, err := c.block(blockOf(&b), fmt.Sprintf("%s.conditions[%d]", path, i))
		if err != nil {
			return err
		}
		holds = append(holds, e)
	}
	out.validations = append(out.validations, admissionregistrationv1.Validation{
		Expression: fmt.Sprintf("(%s).all(image, cel.bind(payload, extractPayload(image, attestations.%s), %s))", allImages, name, and(holds...).s),
		Message:    "the " + typ + " attestation of " + strings.Join(refs, ", ") + " does not satisfy the conditions",
	})
	return nil
}
