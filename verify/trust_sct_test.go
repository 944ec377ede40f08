package verify_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"math/big"
	"testing"
	"time"

	ct "github.com/google/certificate-transparency-go"
	"github.com/google/certificate-transparency-go/tls"
	"github.com/google/certificate-transparency-go/x509util"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/gavelpolicy/gavel/verify"
)

// oidSCTList is RFC 6962's extension of embedded SCTs.
var oidSCTList = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11129, 2, 4, 2}

// issueLogged returns a signer for a new leaf certificate of email from
// issuer with an SCT of the CT log embedded, timestamped at, as Fulcio
// issues them; with the leaf's PEM.
func (ca *testCA) issueLogged(t testing.TB, email, issuer string, ctLog *testLog, at time.Time) (signature.SignerVerifier, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(30 * time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		EmailAddresses:  []string{email},
		ExtraExtensions: []pkix.Extension{{Id: oidIssuer, Value: []byte(issuer)}}}
	// the certificate without its SCT list stands for the precertificate
	// the log signed
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	pre, _ := x509.ParseCertificate(der)
	id, _ := hex.DecodeString(ctLog.id)
	sct := ct.SignedCertificateTimestamp{SCTVersion: ct.V1, Timestamp: uint64(at.UnixMilli())}
	copy(sct.LogID.KeyID[:], id)
	leaf := ct.MerkleTreeLeaf{Version: ct.V1, LeafType: ct.TimestampedEntryLeafType, TimestampedEntry: &ct.TimestampedEntry{
		EntryType: ct.PrecertLogEntryType, Timestamp: sct.Timestamp,
		PrecertEntry: &ct.PreCert{IssuerKeyHash: sha256.Sum256(ca.cert.RawSubjectPublicKeyInfo), TBSCertificate: pre.RawTBSCertificate}}}
	input, err := ct.SerializeSCTSignatureInput(sct, ct.LogEntry{Leaf: leaf})
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(input)
	sig, err := ecdsa.SignASN1(rand.Reader, ctLog.key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	sct.Signature = ct.DigitallySigned{Algorithm: tls.SignatureAndHashAlgorithm{Hash: tls.SHA256, Signature: tls.ECDSA}, Signature: sig}
	list, err := x509util.MarshalSCTsIntoSCTList([]*ct.SignedCertificateTimestamp{&sct})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := tls.Marshal(*list)
	if err != nil {
		t.Fatal(err)
	}
	value, err := asn1.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.ExtraExtensions = append(tmpl.ExtraExtensions, pkix.Extension{Id: oidSCTList, Value: value})
	if der, err = x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key); err != nil {
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

// trustedRootCT is a trusted root of the Fulcio CA and the CT log, its
// key valid from start until end (zero: no end).
func trustedRootCT(t testing.TB, ca *testCA, ctLog *testLog, start, end time.Time) *verify.Verifier {
	t.Helper()
	id, _ := hex.DecodeString(ctLog.id)
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01,
		[]root.CertificateAuthority{&root.FulcioCertificateAuthority{Root: ca.cert, ValidityPeriodStart: time.Now().Add(-time.Hour), URI: "https://fulcio.test"}},
		map[string]*root.TransparencyLog{ctLog.id: {BaseURL: "https://ctfe.test", ID: id, PublicKey: &ctLog.key.PublicKey,
			HashFunc: crypto.SHA256, SignatureHashFunc: crypto.SHA256, ValidityPeriodStart: start, ValidityPeriodEnd: end}},
		nil, map[string]*root.TransparencyLog{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return verify.New(verify.WithTrustedRoot(loadTrustedRoot(t, raw)))
}

// TestTrustedRootCTValidity: the CT log keys of the trusted root verify
// the SCTs embedded in certificates only within their validity periods
// (at the SCT's time), for certificates attestors with their chain and
// keyless attestors with or without roots that leave ctlog.pubkey out.
func TestTrustedRootCTValidity(t *testing.T) {
	reg := newRegistry(t)
	ca, ctLog, otherLog := newCA(t), newLog(t), newLog(t)
	now := time.Now()
	signer, leaf := ca.issueLogged(t, "dev@example.com", "https://issuer.test", ctLog, now)
	img, d := reg.push(t, "app:keyless")
	sign(t, d, signer, nil, static.WithCertChain(leaf, []byte(ca.pem)))
	noTlog := "            rekor:\n              ignoreTlog: true\n"
	certificates := "      attestors:\n      - entries:\n        - certificates:\n            cert: |-\n" + indent(string(leaf), "              ") +
		"\n            certChain: |-\n" + indent(ca.pem, "              ") + "\n" + noTlog
	keyless := "      attestors:\n      - entries:\n        - keyless:\n            subject: dev@example.com\n            issuer: https://issuer.test\n" + noTlog
	keylessRoots := keyless + "            roots: |-\n" + indent(ca.pem, "              ") + "\n"

	valid := trustedRootCT(t, ca, ctLog, now.Add(-2*time.Hour), time.Time{})
	expired := trustedRootCT(t, ca, ctLog, now.Add(-2*time.Hour), now.Add(-time.Hour))
	other := trustedRootCT(t, ca, otherLog, now.Add(-2*time.Hour), time.Time{})
	const unverified = "only able to verify 0 SCT entries; unable to meet threshold of 1"
	prefix := "fail: failed to verify image " + img + ": .attestors[0].entries[0]."
	tests := []struct {
		name  string
		v     *verify.Verifier
		entry string
		want  string
	}{
		{"certificates, valid", valid, certificates, "pass: verified image signatures for " + img},
		{"certificates, expired", expired, certificates, prefix + "certificates: failed to verify certificate: " + unverified},
		{"certificates, another log", other, certificates, prefix + "certificates: failed to verify certificate: " + unverified},
		{"keyless, valid", valid, keyless, "pass: verified image signatures for " + img},
		{"keyless, expired", expired, keyless, prefix + "keyless: no matching signatures: " + unverified},
		{"keyless with roots, valid", valid, keylessRoots, "pass: verified image signatures for " + img},
		{"keyless with roots, expired", expired, keylessRoots, prefix + "keyless: no matching signatures: " + unverified},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, tt.v, policy("", tt.entry))
			if _, got := run(t, set, pod(img)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
