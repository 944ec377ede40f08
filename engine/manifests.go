package engine

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/manifests"
)

// ManifestVerifier is the host side of validate.manifests rules: it reads
// the signature of a resource's manifest (k8s-manifest-sigstore's
// annotations, or an OCI image holding the manifests) and checks it
// against one attestor. The engine decides everything else: attestor sets
// and counts, which signed manifest stands for the resource, the
// comparison with ignored fields, dry runs and the messages.
//
// There is no option of its own: an ImageVerifier given to
// WithImageVerifier that also implements ManifestVerifier verifies
// manifests (package verify's Verifier does), so that a host configures
// signature verification once.
type ManifestVerifier interface {
	// VerifyManifest returns the manifests signed for the resource when a
	// signature of theirs verifies with req.Attestor. A resource that
	// carries no signed message or no signature is an error wrapping
	// ErrManifestNotSigned; an error wrapping ErrRegistryUnavailable is an
	// image registry that could not be reached.
	VerifyManifest(ctx context.Context, req ManifestVerifyRequest) (*SignedManifests, error)
}

// ManifestVerifyRequest asks for the manifests of one resource signed for
// one attestor.
type ManifestVerifyRequest struct {
	// Annotations are the resource's annotations, which hold the message
	// (the signed manifests) and the signatures, certificates and Rekor
	// bundles.
	Annotations map[string]string
	// AnnotationDomain prefixes the annotation keys
	// ("cosign.sigstore.dev"): DOMAIN/message, DOMAIN/signature,
	// DOMAIN/signature_1, ...
	AnnotationDomain string
	// Attestor is a single attestor (keys, certificates or keyless, never
	// nested; several PEM keys are split into one attestor each).
	Attestor api.Attestor
	// Repository, when set, is the OCI image that holds the signed
	// manifests and carries their signature; the annotations are then not
	// read.
	Repository string
}

// SignedManifests are the documents of a verified signed message.
type SignedManifests struct {
	// Manifests are the YAML documents of the message, in order, each
	// decoded as a JSON-like object.
	Manifests []map[string]any
	// Signer names who signed (the certificate's subject); empty for
	// signatures made with keys.
	Signer string
}

// ErrManifestNotSigned is wrapped by ManifestVerifier errors when the
// resource carries no signed message or no signature: the rule fails
// (upstream's "message not found" and "signature not found"). Other errors
// are error results.
var ErrManifestNotSigned = errors.New("manifest not signed")

// DryRunCreator is implemented by a Client that can create an object with
// server-side dry run: the API server applies defaults and admission and
// stores nothing. Rules with validate.manifests.dryRun.enable compare the
// resource with the dry-run creation of the signed manifest; without a
// Client that implements it they give an error result.
type DryRunCreator interface {
	DryRunCreate(ctx context.Context, obj map[string]any) (map[string]any, error)
}

const (
	defaultAnnotationDomain = "cosign.sigstore.dev"
	// upstream's default dry-run namespace, and its own namespace, where
	// dry runs are not made
	defaultDryRunNamespace = "kyverno-dryrun"
	kyvernoNamespace       = "kyverno"
)

// manifestSpec is a compiled validate.manifests rule.
type manifestSpec struct {
	domain     string
	repository string
	sets       []*manifestSet
	// ignore are the policy's ignoreFields, then the defaults of
	// k8s-manifest-sigstore and upstream, then the signature annotations
	// of the domain
	ignore []manifests.IgnoreBinding
	dryRun bool
	dryNS  string
}

type manifestSet struct {
	required int
	entries  []manifestNode
}

type manifestNode struct {
	nested *manifestSet
	// attestor is a single attestor (nested unset); path its kind
	// (".keys", ".certificates", ".keyless")
	attestor api.Attestor
	path     string
}

func (e *Engine) compileManifests(m *api.Manifests, path *field.Path, errs field.ErrorList) (*manifestSpec, field.ErrorList) {
	ms := &manifestSpec{domain: m.AnnotationDomain, repository: m.Repository, dryRun: m.DryRunOption.Enable, dryNS: m.DryRunOption.Namespace}
	if ms.domain == "" {
		ms.domain = defaultAnnotationDomain
	}
	if ms.dryNS == "" {
		ms.dryNS = defaultDryRunNamespace
	}
	if ms.dryNS == kyvernoNamespace {
		// upstream never dry-runs in its own namespace
		ms.dryRun = false
	}
	if len(m.Attestors) == 0 {
		errs = append(errs, field.Required(path.Child("attestors"), "an attestor is required"))
	}
	for i, as := range m.Attestors {
		set, serrs := compileManifestSet(as, path.Child("attestors").Index(i))
		errs = append(errs, serrs...)
		ms.sets = append(ms.sets, set)
	}
	for i, b := range m.IgnoreFields {
		ib, err := manifests.CompileIgnore(b)
		if err != nil {
			errs = append(errs, field.Invalid(path.Child("ignoreFields").Index(i).Child("fields"), b.Fields, err.Error()))
		}
		ms.ignore = append(ms.ignore, ib)
	}
	defaults, err := manifests.DefaultIgnore(ms.domain)
	if err != nil {
		errs = append(errs, field.Invalid(path.Child("annotationDomain"), m.AnnotationDomain, err.Error()))
	}
	ms.ignore = append(ms.ignore, defaults...)
	return ms, errs
}

// compileManifestSet applies upstream's checks of an attestor set, splits
// several PEM keys into one attestor each (count applies across them) and
// checks the PEM texts.
func compileManifestSet(as api.AttestorSet, path *field.Path) (*manifestSet, field.ErrorList) {
	entries, required, errs := expandAttestors(as, path)
	set := &manifestSet{required: required}
	for i, a := range entries {
		ep := path.Child("entries").Index(i)
		if a.Attestor != nil {
			nested, nerrs := compileManifestSet(*a.Attestor, ep.Child("attestor"))
			errs = append(errs, nerrs...)
			set.entries = append(set.entries, manifestNode{nested: nested, path: ".attestor"})
			continue
		}
		aerrs := checkAttestor(a, ep)
		errs = append(errs, aerrs...)
		if len(aerrs) == 0 {
			errs = append(errs, checkAttestorPEM(a, ep)...)
		}
		set.entries = append(set.entries, manifestNode{attestor: a, path: attestorPath(a)})
	}
	return set, errs
}
