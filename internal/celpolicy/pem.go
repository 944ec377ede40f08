package celpolicy

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// pemKind is what a PEM field of an attestor holds.
type pemKind int

const (
	// pemPublicKeys: PKIX ("PUBLIC KEY") or PKCS #1 ("RSA PUBLIC KEY")
	// public keys, as cosign reads them.
	pemPublicKeys pemKind = iota
	// pemCertificates: X.509 certificates, possibly base64-encoded as a
	// whole (upstream decodes a certificate given so).
	pemCertificates
)

// checkPEM checks a PEM field of an attestor given as a value: one or more
// blocks of the kind, nothing else. An empty value is not checked.
func checkPEM(p *field.Path, s string, kind pemKind) field.ErrorList {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	if err := parsePEM([]byte(s), kind); err != nil {
		return field.ErrorList{field.Invalid(p, "", err.Error())}
	}
	return nil
}

func parsePEM(raw []byte, kind pemKind) error {
	if kind == pemCertificates && !bytes.Contains(raw, []byte("-----BEGIN")) {
		if dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw))); err == nil {
			raw = dec
		}
	}
	n := 0
	for {
		var b *pem.Block
		b, raw = pem.Decode(raw)
		if b == nil {
			break
		}
		n++
		if err := parseBlock(b, kind); err != nil {
			return fmt.Errorf("PEM block %d: %w", n, err)
		}
	}
	switch {
	case n == 0 && kind == pemCertificates:
		return errors.New("no PEM certificate found")
	case n == 0:
		return errors.New("no PEM public key found")
	case len(bytes.TrimSpace(raw)) > 0:
		return fmt.Errorf("unexpected data after PEM block %d", n)
	}
	return nil
}

func parseBlock(b *pem.Block, kind pemKind) error {
	switch {
	case kind == pemCertificates && b.Type == "CERTIFICATE":
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return fmt.Errorf("invalid certificate: %w", err)
		}
	case kind == pemPublicKeys && b.Type == "PUBLIC KEY":
		if _, err := x509.ParsePKIXPublicKey(b.Bytes); err != nil {
			return fmt.Errorf("invalid public key: %w", err)
		}
	case kind == pemPublicKeys && b.Type == "RSA PUBLIC KEY":
		if _, err := x509.ParsePKCS1PublicKey(b.Bytes); err != nil {
			return fmt.Errorf("invalid public key: %w", err)
		}
	default:
		return fmt.Errorf("unexpected PEM type %q", b.Type)
	}
	return nil
}
