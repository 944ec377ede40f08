package engine

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
)

// Attestors (of verifyImages and validate.manifests rules) as upstream
// validates and expands them, and the compile-time check of their key
// material.

// attestorPath is the part of an attestor entry's path in upstream's
// messages: ".keys", ".certificates" or ".keyless".
func attestorPath(a api.Attestor) string {
	switch {
	case a.Keys != nil:
		return ".keys"
	case a.Certificates != nil:
		return ".certificates"
	case a.Keyless != nil:
		return ".keyless"
	}
	return ""
}

// expandAttestors returns the entries of an attestor set, several PEM
// keys in one entry split into one attestor each (upstream's
// ExpandStaticKeys: count applies across them), and how many must
// verify, with upstream's checks of count and entries.
func expandAttestors(as api.AttestorSet, path *field.Path) ([]api.Attestor, int, field.ErrorList) {
	var errs field.ErrorList
	var entries []api.Attestor
	for _, a := range as.Entries {
		if a.Keys != nil {
			if keys := splitPEMKeys(a.Keys.PublicKeys); len(keys) > 1 {
				for _, k := range keys {
					c, kc := a, *a.Keys
					kc.PublicKeys = k
					c.Keys = &kc
					entries = append(entries, c)
				}
				continue
			}
		}
		entries = append(entries, a)
	}
	required := len(entries)
	if as.Count != nil && *as.Count > 0 {
		required = *as.Count
		if *as.Count > len(entries) {
			errs = append(errs, field.Invalid(path.Child("count"), *as.Count, "Count cannot exceed length of entries"))
		}
	}
	if len(entries) == 0 {
		errs = append(errs, field.Invalid(path, "", "An entry is required"))
	}
	return entries, required, errs
}

// checkAttestor applies upstream's validation of one attestor.
func checkAttestor(a api.Attestor, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	for _, set := range []bool{a.Keys != nil, a.Certificates != nil, a.Keyless != nil, a.Attestor != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return append(errs, field.Invalid(path, "", "keys, certificates, keyless, or a nested attestor is required"))
	}
	switch {
	case a.Keys != nil:
		k := a.Keys
		if k.PublicKeys == "" && k.KMS == "" && k.Secret == nil {
			errs = append(errs, field.Invalid(path.Child("keys"), "", "A public key, kms key or secret is required"))
		}
		if k.SignatureAlgorithm != "" && k.SignatureAlgorithm != "sha256" && k.SignatureAlgorithm != "sha512" {
			errs = append(errs, field.Invalid(path.Child("keys", "signatureAlgorithm"), k.SignatureAlgorithm, "Invalid signature algorithm provided"))
		}
	case a.Certificates != nil:
		if a.Certificates.Certificate == "" && a.Certificates.CertificateChain == "" {
			errs = append(errs, field.Invalid(path.Child("certificates"), "", "cert or certChain required"))
		}
	case a.Keyless != nil:
		if a.Keyless.Rekor == nil && a.Keyless.Roots == "" {
			errs = append(errs, field.Invalid(path.Child("keyless"), "", "Either Rekor URL or roots are required"))
		}
	}
	return errs
}

// splitPEMKeys splits several PEM public keys; a text with one key (or
// none) gives itself.
func splitPEMKeys(s string) []string {
	const end = "-----END PUBLIC KEY-----"
	if strings.Count(s, end) < 2 {
		return []string{s}
	}
	parts := strings.SplitAfter(s, end)
	return parts[:len(parts)-1]
}

// checkAttestorPEM checks the key material an attestor gives in PEM
// (keys, certificates, chains, roots, log keys, a TSA chain) as the
// verifier will parse it, and its regular expressions: a compile error
// then names the field, where a verification would fail every image.
func checkAttestorPEM(a api.Attestor, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(p *field.Path, s string, parse func(string) error) {
		if s == "" {
			return
		}
		if err := parse(s); err != nil {
			errs = append(errs, field.Invalid(p, "", err.Error()))
		}
	}
	var rekor *api.Rekor
	var ctlog *api.CTLog
	var p *field.Path
	switch {
	case a.Keys != nil:
		p, rekor, ctlog = path.Child("keys"), a.Keys.Rekor, a.Keys.CTLog
		// a key reference (k8s://namespace/name, a KMS URI) is the
		// verifier's to resolve
		if s := strings.TrimSpace(a.Keys.PublicKeys); !strings.Contains(s, "://") {
			check(p.Child("publicKeys"), s, parsePublicKeys)
		}
	case a.Certificates != nil:
		p, rekor, ctlog = path.Child("certificates"), a.Certificates.Rekor, a.Certificates.CTLog
		check(p.Child("cert"), a.Certificates.Certificate, parseCertificates)
		check(p.Child("certChain"), a.Certificates.CertificateChain, parseCertificates)
	case a.Keyless != nil:
		p, rekor, ctlog = path.Child("keyless"), a.Keyless.Rekor, a.Keyless.CTLog
		check(p.Child("roots"), a.Keyless.Roots, parseCertificates)
		for _, re := range []struct{ name, expr string }{{"issuerRegExp", a.Keyless.IssuerRegExp}, {"subjectRegExp", a.Keyless.SubjectRegExp}} {
			if _, err := regexp.Compile(re.expr); err != nil {
				errs = append(errs, field.Invalid(p.Child(re.name), re.expr, err.Error()))
			}
		}
	default:
		return nil
	}
	if rekor != nil && !rekor.IgnoreTlog {
		check(p.Child("rekor", "pubkey"), strings.TrimSpace(rekor.PubKey), parsePublicKeys)
	}
	if ctlog != nil {
		check(p.Child("ctlog", "pubkey"), strings.TrimSpace(ctlog.PubKey), parsePublicKeys)
		check(p.Child("ctlog", "tsaCertChain"), ctlog.TSACertChain, parseCertificates)
	}
	return errs
}

// parsePublicKeys checks PEM public keys: PKIX ("PUBLIC KEY") or PKCS #1
// ("RSA PUBLIC KEY"), as cosign reads them.
func parsePublicKeys(s string) error {
	_, err := parsePEMBlocks(s, []string{"PUBLIC KEY", "RSA PUBLIC KEY"}, func(typ string, b []byte) error {
		if typ == "RSA PUBLIC KEY" {
			if _, err := x509.ParsePKCS1PublicKey(b); err != nil {
				return errors.New("not a PKCS #1 public key")
			}
			return nil
		}
		if _, err := x509.ParsePKIXPublicKey(b); err != nil {
			return errors.New("not a PKIX public key")
		}
		return nil
	})
	return err
}

// parseCertificates checks PEM certificates.
func parseCertificates(s string) error {
	_, err := parsePEMBlocks(s, []string{"CERTIFICATE"}, func(_ string, b []byte) error {
		_, err := x509.ParseCertificate(b)
		return err
	})
	return err
}

// parsePEMBlocks checks that s is one or more PEM blocks of the types,
// each accepted by parse.
func parsePEMBlocks(s string, types []string, parse func(typ string, der []byte) error) (int, error) {
	want := strings.Join(types, " or ")
	rest := []byte(strings.TrimSpace(s))
	n := 0
	for len(rest) > 0 {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return n, fmt.Errorf("invalid PEM: want %s blocks", want)
		}
		if !slices.Contains(types, b.Type) {
			return n, fmt.Errorf("invalid PEM: block %s, want %s", b.Type, want)
		}
		if err := parse(b.Type, b.Bytes); err != nil {
			return n, fmt.Errorf("invalid %s: %w", strings.ToLower(b.Type), err)
		}
		n++
		rest = []byte(strings.TrimSpace(string(rest)))
	}
	if n == 0 {
		return 0, fmt.Errorf("invalid PEM: no %s", want)
	}
	return n, nil
}
