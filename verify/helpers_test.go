package verify_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"math/big"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/oci"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// testRegistry is an OCI registry in process (go-containerregistry's
// pkg/registry on httptest).
type testRegistry struct {
	srv  *httptest.Server
	host string
}

func newRegistry(t testing.TB) *testRegistry {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return &testRegistry{srv: srv, host: strings.TrimPrefix(srv.URL, "http://")}
}

// push writes a small random image and returns its reference by tag and
// its digest reference.
func (r *testRegistry) push(t testing.TB, repoTag string) (string, name.Digest) {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	return r.pushImage(t, repoTag, img)
}

func (r *testRegistry) pushImage(t testing.TB, repoTag string, img v1.Image) (string, name.Digest) {
	t.Helper()
	ref, err := name.ParseReference(r.host + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref.String(), ref.Context().Digest(d.String())
}

// testKey is an ECDSA P-256 key made for the test.
type testKey struct {
	priv   *ecdsa.PrivateKey
	signer signature.SignerVerifier
	pem    string
}

func newKey(t testing.TB) *testKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := signature.LoadECDSASignerVerifier(priv, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := cryptoutils.MarshalPublicKeyToPEM(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return &testKey{priv: priv, signer: sv, pem: string(pem)}
}

// attach writes a signature or attestation beside the image, as cosign
// sign and cosign attest do.
func attach(t testing.TB, d name.Digest, sig oci.Signature, attestation bool) {
	t.Helper()
	se, err := ociremote.SignedEntity(d)
	if err != nil {
		t.Fatal(err)
	}
	if attestation {
		if se, err = mutate.AttachAttestationToEntity(se, sig); err != nil {
			t.Fatal(err)
		}
		err = ociremote.WriteAttestations(d.Repository, se)
	} else {
		if se, err = mutate.AttachSignatureToEntity(se, sig); err != nil {
			t.Fatal(err)
		}
		err = ociremote.WriteSignatures(d.Repository, se)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// sign signs the image with the key, cosign's simple signing payload with
// the annotations; opts add a certificate chain.
func sign(t testing.TB, d name.Digest, signer signature.Signer, annotations map[string]any, opts ...static.Option) {
	t.Helper()
	p, err := (&payload.Cosign{Image: d, Annotations: annotations}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := signer.SignMessage(bytes.NewReader(p))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := static.NewSignature(p, base64.StdEncoding.EncodeToString(raw), opts...)
	if err != nil {
		t.Fatal(err)
	}
	attach(t, d, sig, false)
}

// attest attaches a DSSE-signed in-toto statement about the image.
func attest(t testing.TB, d name.Digest, signer signature.Signer, predicateType string, predicate any) {
	t.Helper()
	att, err := static.NewAttestation(attestation(t, d, signer, predicateType, predicate))
	if err != nil {
		t.Fatal(err)
	}
	attach(t, d, att, true)
}

// attestation returns the DSSE envelope of an in-toto statement about the
// image, signed by signer.
func attestation(t testing.TB, d name.Digest, signer signature.Signer, predicateType string, predicate any) []byte {
	t.Helper()
	h, err := v1.NewHash(d.DigestStr())
	if err != nil {
		t.Fatal(err)
	}
	statement, err := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v0.1",
		"predicateType": predicateType,
		"subject":       []any{map[string]any{"name": d.Repository.Name(), "digest": map[string]any{h.Algorithm: h.Hex}}},
		"predicate":     predicate,
	})
	if err != nil {
		t.Fatal(err)
	}
	env, err := dsse.WrapSigner(signer, "application/vnd.in-toto+json").SignMessage(bytes.NewReader(statement))
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// testCA is a root certificate authority made for the test, issuing code
// signing certificates as Fulcio does (email SAN, issuer extension).
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  string
}

func newCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gavel test root"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pem, _ := cryptoutils.MarshalCertificateToPEM(cert)
	return &testCA{cert: cert, key: key, pem: string(pem)}
}

// oidIssuer is Fulcio's OIDC issuer extension (v1: the raw string).
var oidIssuer = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}

// fulcioIssuer is the extension naming the OIDC issuer of a keyless
// certificate.
func fulcioIssuer(issuer string) []pkix.Extension {
	return []pkix.Extension{{Id: oidIssuer, Value: []byte(issuer)}}
}

// issue returns a signer for a new leaf certificate of email from issuer,
// with the leaf's PEM.
func (ca *testCA) issue(t testing.TB, email, issuer string) (signature.SignerVerifier, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(30 * time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		EmailAddresses:  []string{email},
		ExtraExtensions: []pkix.Extension{{Id: oidIssuer, Value: []byte(issuer)}}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pem, _ := cryptoutils.MarshalCertificateToPEM(cert)
	sv, err := signature.LoadECDSASignerVerifier(key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return sv, pem
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n"+prefix)
}
