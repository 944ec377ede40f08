package jmespath

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
)

// rsaPublicKey is how x509_decode renders an RSA public key: the modulus as a
// decimal string and the public exponent as a number.
type rsaPublicKey struct {
	N string
	E int
}

// jpX509Decode decodes a PEM certificate or certificate request and returns
// the JSON encoding of Go's x509.Certificate / x509.CertificateRequest (field
// names as in Go, byte slices as base64), with PublicKey replaced by {N, E}.
// Only RSA keys are accepted, as upstream.
func jpX509Decode(args []any) (any, error) {
	block, _ := pem.Decode([]byte(args[0].(string)))
	if block == nil {
		return nil, fnErr("x509_decode", 1, "failed to decode PEM block")
	}
	switch block.Type {
	case "CERTIFICATE":
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fnWrap("x509_decode", 1, err)
		}
		pk, ok := cert.PublicKey.(*rsa.PublicKey)
		if cert.PublicKeyAlgorithm != x509.RSA || !ok {
			return nil, fnErr("x509_decode", 1, "certificate should use rsa algorithm")
		}
		cert.PublicKey = rsaPublicKey{N: pk.N.String(), E: pk.E}
		return encodeObject(cert)
	case "CERTIFICATE REQUEST":
		csr, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			return nil, fnWrap("x509_decode", 1, err)
		}
		pk, ok := csr.PublicKey.(*rsa.PublicKey)
		if csr.PublicKeyAlgorithm != x509.RSA || !ok {
			return nil, fnErr("x509_decode", 1, "certificate should use rsa algorithm")
		}
		csr.PublicKey = rsaPublicKey{N: pk.N.String(), E: pk.E}
		return encodeObject(csr)
	}
	return nil, fnErr("x509_decode", 1, "PEM block neither contains a CERTIFICATE or CERTIFICATE REQUEST")
}

// encodeObject round-trips v through JSON to get a JSON-like tree.
func encodeObject(v any) (any, error) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		return nil, fnWrap("x509_decode", 1, err)
	}
	var out map[string]any
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
		return nil, fnWrap("x509_decode", 1, err)
	}
	if out == nil {
		return nil, fnWrap("x509_decode", 1, errors.New("empty encoding"))
	}
	return out, nil
}
