package testcluster

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"strings"
	"time"
)

// writeCerts writes a CA (ca.crt, ca.key), the API server's serving
// certificate (api.crt, api.key), the service account key pair (sa.pub,
// sa.key) and the token file with an admin token and the users' tokens.
func (c *Cluster) writeCerts(users []User) error {
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gavel-e2e-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	c.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := c.writePEM("ca.crt", "CERTIFICATE", caDER); err != nil {
		return err
	}
	if err := c.writePEM("ca.key", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(caKey)); err != nil {
		return err
	}
	c.caCert, c.caKey = caCert, caKey
	if err := c.writeServing("api"); err != nil {
		return err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	if err := c.writePEM("sa.pub", "PUBLIC KEY", pub); err != nil {
		return err
	}
	if err := c.writePEM("sa.key", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)); err != nil {
		return err
	}
	if c.Token, err = newToken(); err != nil {
		return err
	}
	lines := c.Token + ",admin,admin,system:masters\n"
	c.tokens = map[string]string{}
	for _, u := range users {
		tok, err := newToken()
		if err != nil {
			return err
		}
		c.tokens[u.Name] = tok
		lines += fmt.Sprintf("%s,%s,%s,%q\n", tok, u.Name, u.Name, strings.Join(u.Groups, ","))
	}
	return os.WriteFile(c.path("tokens.csv"), []byte(lines), 0o600)
}

func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// ServingCert writes <name>.crt and <name>.key into Dir, a serving
// certificate for 127.0.0.1 and localhost signed by the cluster's CA (a
// webhook the API server calls by URL), and returns their paths.
func (c *Cluster) ServingCert(name string) (certFile, keyFile string, err error) {
	if err := c.writeServing(name); err != nil {
		return "", "", err
	}
	return c.path(name + ".crt"), c.path(name + ".key"), nil
}

func (c *Cluster) writeServing(name string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.caCert, &key.PublicKey, c.caKey)
	if err != nil {
		return err
	}
	if err := c.writePEM(name+".crt", "CERTIFICATE", der); err != nil {
		return err
	}
	return c.writePEM(name+".key", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key))
}

func (c *Cluster) writePEM(name, typ string, der []byte) error {
	return os.WriteFile(c.path(name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
