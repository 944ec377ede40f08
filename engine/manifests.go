package engine

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
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
	ignore []ignoreBinding
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

// ignoreBinding is an ignoreFields entry: the fields, as upstream's
// patterns, that may differ on the objects it selects.
type ignoreBinding struct {
	objects []api.ManifestObjectReference
	fields  []*regexp.Regexp
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
		ib, err := compileIgnoreBinding(b)
		if err != nil {
			errs = append(errs, field.Invalid(path.Child("ignoreFields").Index(i).Child("fields"), b.Fields, err.Error()))
		}
		ms.ignore = append(ms.ignore, ib)
	}
	ms.ignore = append(ms.ignore, defaultIgnoreFields()...)
	domainFields := make([]string, 0, 5)
	for _, base := range []string{"message", "signature", "certificate", "bundle", "resourceBundleRef"} {
		domainFields = append(domainFields, "metadata.annotations."+ms.domain+"/"+base+"*")
	}
	ib, err := compileIgnoreBinding(api.ObjectFieldBinding{Fields: domainFields, Objects: []api.ManifestObjectReference{{Kind: "*"}}})
	if err != nil {
		errs = append(errs, field.Invalid(path.Child("annotationDomain"), m.AnnotationDomain, err.Error()))
	}
	ms.ignore = append(ms.ignore, ib)
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

// checkAttestorPEM checks that the keys and certificates an attestor
// gives in PEM parse.
func checkAttestorPEM(a api.Attestor, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	certs := func(p *field.Path, s string) {
		if s == "" {
			return
		}
		if _, err := parsePEMBlocks(s, "CERTIFICATE", func(b []byte) error { _, err := x509.ParseCertificate(b); return err }); err != nil {
			errs = append(errs, field.Invalid(p, "", err.Error()))
		}
	}
	switch {
	case a.Keys != nil:
		// a key reference (k8s://namespace/name, a KMS URI) is the
		// verifier's to resolve
		s := strings.TrimSpace(a.Keys.PublicKeys)
		if s != "" && !strings.Contains(s, "://") {
			if _, err := parsePEMBlocks(s, "PUBLIC KEY", func(b []byte) error {
				if _, err := x509.ParsePKIXPublicKey(b); err != nil {
					return errors.New("not a PKIX public key")
				}
				return nil
			}); err != nil {
				errs = append(errs, field.Invalid(path.Child("keys", "publicKeys"), "", err.Error()))
			}
		}
	case a.Certificates != nil:
		certs(path.Child("certificates", "cert"), a.Certificates.Certificate)
		certs(path.Child("certificates", "certChain"), a.Certificates.CertificateChain)
	case a.Keyless != nil:
		certs(path.Child("keyless", "roots"), a.Keyless.Roots)
		for name, re := range map[string]string{"issuerRegExp": a.Keyless.IssuerRegExp, "subjectRegExp": a.Keyless.SubjectRegExp} {
			if _, err := regexp.Compile(re); err != nil {
				errs = append(errs, field.Invalid(path.Child("keyless", name), re, err.Error()))
			}
		}
	}
	return errs
}

// parsePEMBlocks checks that s is one or more PEM blocks of the type,
// each accepted by parse.
func parsePEMBlocks(s, typ string, parse func([]byte) error) (int, error) {
	rest := []byte(strings.TrimSpace(s))
	n := 0
	for len(rest) > 0 {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return n, fmt.Errorf("invalid PEM: want %s blocks", typ)
		}
		if b.Type != typ {
			return n, fmt.Errorf("invalid PEM: block %s, want %s", b.Type, typ)
		}
		if err := parse(b.Bytes); err != nil {
			return n, fmt.Errorf("invalid %s: %w", strings.ToLower(typ), err)
		}
		n++
		rest = []byte(strings.TrimSpace(string(rest)))
	}
	if n == 0 {
		return 0, fmt.Errorf("invalid PEM: no %s", typ)
	}
	return n, nil
}

// compileIgnoreBinding compiles fields as upstream matches them: a field
// matches a difference's key that contains it as a regular expression, with
// "*" standing for ".*" (a prefix of the key in practice).
func compileIgnoreBinding(b api.ObjectFieldBinding) (ignoreBinding, error) {
	ib := ignoreBinding{objects: b.Objects}
	var errs []error
	for _, f := range b.Fields {
		re, err := regexp.Compile(strings.ReplaceAll(f+"*", "*", ".*"))
		if err != nil {
			errs = append(errs, fmt.Errorf("field %q: %w", f, err))
			continue
		}
		ib.fields = append(ib.fields, re)
	}
	return ib, errors.Join(errs...)
}

// ignoredFor returns the field patterns of the bindings that select the
// object.
func ignoredFor(bindings []ignoreBinding, obj map[string]any) []*regexp.Regexp {
	ref := objectRef(obj)
	var out []*regexp.Regexp
	for _, b := range bindings {
		if refsMatch(b.objects, ref) {
			out = append(out, b.fields...)
		}
	}
	return out
}

func objectRef(obj map[string]any) api.ManifestObjectReference {
	apiVersion, _ := obj["apiVersion"].(string)
	group, version := "", apiVersion
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		group, version = apiVersion[:i], apiVersion[i+1:]
	}
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	return api.ManifestObjectReference{Group: group, Version: version, Kind: kind, Name: name, Namespace: ns}
}

// refsMatch is upstream's ObjectReferenceList.Match: an empty list selects
// every object.
func refsMatch(refs []api.ManifestObjectReference, o api.ManifestObjectReference) bool {
	if len(refs) == 0 {
		return true
	}
	for _, r := range refs {
		if matchRefPattern(r.Group, o.Group) && matchRefPattern(r.Version, o.Version) && matchRefPattern(r.Kind, o.Kind) &&
			matchRefPattern(r.Name, o.Name) && matchRefPattern(r.Namespace, o.Namespace) {
			return true
		}
	}
	return false
}

// matchRefPattern is k8s-manifest-sigstore's MatchPattern: empty and "*"
// match anything, "-" an empty value, "x*" a prefix, "a,b" either.
func matchRefPattern(pattern, value string) bool {
	pattern = strings.TrimSpace(pattern)
	switch {
	case pattern == "", pattern == "*":
		return true
	case pattern == "-" && value == "":
		return true
	case strings.HasSuffix(pattern, "*"):
		return strings.HasPrefix(value, strings.TrimRight(pattern, "*"))
	case pattern == value:
		return true
	case strings.Contains(pattern, ","):
		for _, p := range strings.Split(pattern, ",") {
			if matchRefPattern(p, value) {
				return true
			}
		}
	}
	return false
}
