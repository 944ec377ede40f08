package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// runCerts is the certs subcommand: it makes a CA and a serving
// certificate of the webhook's Service signed by it, and prints the TLS
// Secret (tls.crt, tls.key and ca.crt, which gavel puts in the webhook
// configurations it writes), ready for kubectl apply -f -. With -dir it
// also writes ca.crt, tls.crt and tls.key there (for a webhook run
// outside the cluster). The Helm chart makes its own.
func runCerts(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cluster certs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		namespace = fs.String("namespace", "gavel", "namespace of the Service and the Secret")
		service   = fs.String("service", "gavel", "name of the webhook's Service")
		secret    = fs.String("secret", "gavel-tls", "name of the TLS Secret")
		validity  = fs.Duration("validity", 365*24*time.Hour, "validity of the certificates")
		dir       = fs.String("dir", "", "also write ca.crt, tls.crt and tls.key into this directory")
		hosts     = fs.String("hosts", "", "comma-separated extra DNS names and IP addresses of the serving certificate (a webhook run outside the cluster: 127.0.0.1,localhost)")
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: cluster certs [flags] | kubectl apply -f -")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var extra []string
	if *hosts != "" {
		extra = strings.Split(*hosts, ",")
	}
	b, err := newBundle(*service, *namespace, extra, time.Now(), *validity)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	out, err := b.secret(*secret, *namespace)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if *dir != "" {
		for name, data := range map[string][]byte{"ca.crt": b.caPEM, "tls.crt": b.certPEM, "tls.key": b.keyPEM} {
			if err := os.WriteFile(filepath.Join(*dir, name), data, 0o600); err != nil {
				fmt.Fprintln(stderr, err)
				return 1
			}
		}
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// bundle is a CA and a serving certificate it signed, PEM encoded.
type bundle struct {
	caPEM, certPEM, keyPEM []byte
}

// newBundle makes a CA and a certificate for the Service's DNS names
// (service.namespace.svc and service.namespace.svc.cluster.local) and the
// extra hosts (DNS names or IP addresses), valid from now for validity, on
// ECDSA P-256 keys.
func newBundle(service, namespace string, extra []string, now time.Time, validity time.Duration) (*bundle, error) {
	if service == "" || namespace == "" {
		return nil, errors.New("certs: the service and the namespace are required")
	}
	if validity <= 0 {
		return nil, errors.New("certs: the validity must be positive")
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	notBefore, notAfter := now.Add(-5*time.Minute), now.Add(validity)
	caSerial, err := serial()
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          caSerial,
		Subject:               pkix.Name{CommonName: service + "-ca"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("certs: CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	host := service + "." + namespace + ".svc"
	dns := []string{host, host + ".cluster.local"}
	var ips []net.IP
	for _, h := range extra {
		h = strings.TrimSpace(h)
		switch ip := net.ParseIP(h); {
		case ip != nil:
			ips = append(ips, ip)
		case h != "":
			dns = append(dns, h)
		}
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     dns,
		IPAddresses:  ips,
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("certs: serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &bundle{
		caPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// serial is a random 128-bit certificate serial number.
func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

// secret returns the TLS Secret of the bundle.
func (b *bundle) secret(name, namespace string) ([]byte, error) {
	return yaml.Marshal(map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"type":       "kubernetes.io/tls",
		"data": map[string]any{
			"tls.crt": base64.StdEncoding.EncodeToString(b.certPEM),
			"tls.key": base64.StdEncoding.EncodeToString(b.keyPEM),
			"ca.crt":  base64.StdEncoding.EncodeToString(b.caPEM),
		},
	})
}
