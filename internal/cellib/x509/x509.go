// Package x509 is Kyverno's x509 library: x509.decode(pem) decodes a PEM
// certificate or certificate request (RSA keys only, as upstream) with
// crypto/x509 into upstream's JSON shape: the certificate's fields as
// encoding/json writes them, raw DER parts in base64, the validity period
// in RFC 3339, the public key as its modulus (a decimal string) and
// exponent.
package x509

import (
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/gavelpolicy/gavel/internal/cellib/call"
)

const libraryName = "kyverno.x509"

// Lib declares the library.
func Lib() cel.EnvOption { return cel.Lib(lib{}) }

type lib struct{}

func (lib) LibraryName() string { return libraryName }

func (lib) ProgramOptions() []cel.ProgramOption { return nil }

func (lib) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Function("x509.decode", cel.Overload("x509_decode_string", []*cel.Type{types.StringType}, types.DynType, cel.UnaryBinding(decode))),
	}
}

// publicKey is an RSA public key as upstream writes it.
type publicKey struct {
	N string
	E int
}

// certificate is the shape upstream gives a certificate: the fields of
// x509.Certificate it keeps, with raw parts in base64 and times in RFC
// 3339.
type certificate struct {
	Raw                         string
	RawTBSCertificate           string
	RawSubjectPublicKeyInfo     string
	RawSubject                  string
	RawIssuer                   string
	Signature                   string
	PublicKeyAlgorithm          x509.PublicKeyAlgorithm
	PublicKey                   publicKey
	SerialNumber                int64
	Issuer                      pkix.Name
	NotBefore                   string
	NotAfter                    string
	KeyUsage                    x509.KeyUsage
	Extensions                  []pkix.Extension
	ExtraExtensions             []pkix.Extension
	ExtKeyUsage                 []x509.ExtKeyUsage
	BasicConstraintsValid       bool
	IsCA                        bool
	MaxPathLen                  int
	MaxPathLenZero              bool
	AuthorityKeyId              []byte
	OCSPServer                  []string
	IssuingCertificateURL       []string
	DNSNames                    []string
	EmailAddresses              []string
	IPAddresses                 []net.IP
	PermittedDNSDomainsCritical bool
	PermittedDNSDomains         []string
	ExcludedDNSDomains          []string
	PermittedIPRanges           []*net.IPNet
	ExcludedIPRanges            []*net.IPNet
	PermittedEmailAddresses     []string
	ExcludedEmailAddresses      []string
	PermittedURIDomains         []string
	ExcludedURIDomains          []string
	CRLDistributionPoints       []string
	PolicyIdentifiers           []asn1.ObjectIdentifier
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func shapeCertificate(c *x509.Certificate, pk publicKey) certificate {
	return certificate{
		Raw: b64(c.Raw), RawTBSCertificate: b64(c.RawTBSCertificate),
		RawSubjectPublicKeyInfo: b64(c.RawSubjectPublicKeyInfo),
		RawSubject:              b64(c.RawSubject), RawIssuer: b64(c.RawIssuer), Signature: b64(c.Signature),
		PublicKeyAlgorithm: c.PublicKeyAlgorithm, PublicKey: pk,
		SerialNumber: c.SerialNumber.Int64(), Issuer: c.Issuer,
		NotBefore: c.NotBefore.Format(time.RFC3339), NotAfter: c.NotAfter.Format(time.RFC3339),
		KeyUsage: c.KeyUsage, Extensions: c.Extensions, ExtraExtensions: c.ExtraExtensions,
		ExtKeyUsage: c.ExtKeyUsage, BasicConstraintsValid: c.BasicConstraintsValid, IsCA: c.IsCA,
		MaxPathLen: c.MaxPathLen, MaxPathLenZero: c.MaxPathLenZero, AuthorityKeyId: c.AuthorityKeyId,
		OCSPServer: c.OCSPServer, IssuingCertificateURL: c.IssuingCertificateURL,
		DNSNames: c.DNSNames, EmailAddresses: c.EmailAddresses, IPAddresses: c.IPAddresses,
		PermittedDNSDomainsCritical: c.PermittedDNSDomainsCritical, PermittedDNSDomains: c.PermittedDNSDomains,
		ExcludedDNSDomains: c.ExcludedDNSDomains, PermittedIPRanges: c.PermittedIPRanges,
		ExcludedIPRanges: c.ExcludedIPRanges, PermittedEmailAddresses: c.PermittedEmailAddresses,
		ExcludedEmailAddresses: c.ExcludedEmailAddresses, PermittedURIDomains: c.PermittedURIDomains,
		ExcludedURIDomains: c.ExcludedURIDomains, CRLDistributionPoints: c.CRLDistributionPoints,
		PolicyIdentifiers: c.PolicyIdentifiers,
	}
}

var errNotRSA = errors.New("certificate should use rsa algorithm")

func rsaKey(alg x509.PublicKeyAlgorithm, key any) (publicKey, error) {
	if alg != x509.RSA {
		return publicKey{}, errNotRSA
	}
	k, ok := key.(*rsa.PublicKey)
	if !ok {
		return publicKey{}, errors.New("failed to parse subject public key info")
	}
	return publicKey{N: k.N.String(), E: k.E}, nil
}

// decode is x509.decode(pem).
func decode(arg ref.Val) ref.Val {
	input, err := call.Native[string](arg)
	if err != nil {
		return types.WrapErr(err)
	}
	block, _ := pem.Decode([]byte(input))
	if block == nil {
		return types.WrapErr(errors.New("failed to decode PEM block"))
	}
	var shaped any
	switch block.Type {
	case "CERTIFICATE":
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return types.WrapErr(err)
		}
		pk, err := rsaKey(c.PublicKeyAlgorithm, c.PublicKey)
		if err != nil {
			return types.WrapErr(err)
		}
		shaped = shapeCertificate(c, pk)
	case "CERTIFICATE REQUEST":
		csr, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			return types.WrapErr(err)
		}
		pk, err := rsaKey(csr.PublicKeyAlgorithm, csr.PublicKey)
		if err != nil {
			return types.WrapErr(err)
		}
		out := *csr
		out.PublicKey = pk
		shaped = &out
	default:
		return types.WrapErr(errors.New("PEM block neither contains a CERTIFICATE or CERTIFICATE REQUEST"))
	}
	raw, err := json.Marshal(shaped)
	if err != nil {
		return types.WrapErr(err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return types.WrapErr(err)
	}
	return types.DefaultTypeAdapter.NativeToValue(out)
}
