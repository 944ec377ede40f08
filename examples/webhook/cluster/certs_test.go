package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func TestCerts(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		secretNS string
		hosts    []string
	}{
		{name: "defaults", secretNS: "gavel", hosts: []string{"gavel.gavel.svc", "gavel.gavel.svc.cluster.local"}},
		{
			name: "other service", args: []string{"-namespace", "policy", "-service", "webhook"}, secretNS: "policy",
			hosts: []string{"webhook.policy.svc", "webhook.policy.svc.cluster.local"},
		},
		{
			name: "outside the cluster", args: []string{"-hosts", "127.0.0.1,localhost, ::1"}, secretNS: "gavel",
			hosts: []string{"gavel.gavel.svc", "127.0.0.1", "localhost", "::1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			if code := runCerts(append([]string{"-dir", dir}, tt.args...), &stdout, &stderr); code != 0 {
				t.Fatalf("exit code %d: %s", code, stderr.String())
			}
			var secret struct {
				Kind     string
				Type     string
				Metadata struct{ Name, Namespace string }
				Data     map[string][]byte
			}
			if err := yaml.Unmarshal(stdout.Bytes(), &secret); err != nil {
				t.Fatal(err)
			}
			if secret.Kind != "Secret" || secret.Type != "kubernetes.io/tls" || secret.Metadata.Name != "gavel-tls" || secret.Metadata.Namespace != tt.secretNS {
				t.Errorf("secret %+v", secret)
			}
			// the CA verifies the certificate for the Service's names,
			// and the key pair matches
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(secret.Data["ca.crt"]) {
				t.Fatal("no CA in the Secret")
			}
			pair, err := tls.X509KeyPair(secret.Data["tls.crt"], secret.Data["tls.key"])
			if err != nil {
				t.Fatal(err)
			}
			leaf, err := x509.ParseCertificate(pair.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			for _, host := range tt.hosts {
				if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool, CurrentTime: time.Now().Add(364 * 24 * time.Hour)}); err != nil {
					t.Errorf("%s: %v", host, err)
				}
			}
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "gavel.other.svc", Roots: pool}); err == nil {
				t.Error("the certificate is valid for another namespace")
			}
			// the files of -dir are the Secret's
			for name, want := range map[string][]byte{"ca.crt": secret.Data["ca.crt"], "tls.crt": secret.Data["tls.crt"], "tls.key": secret.Data["tls.key"]} {
				got, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s: %v, differs from the Secret", name, err)
				}
			}
			if b, _ := pem.Decode(secret.Data["tls.key"]); b == nil || b.Type != "PRIVATE KEY" {
				t.Error("tls.key is not a PKCS #8 PEM key")
			}
		})
	}
}

func TestCertsErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-no-such-flag"}, 2, "usage: cluster certs"},
		{[]string{"-validity", "-1h"}, 1, "validity must be positive"},
		{[]string{"-service", ""}, 1, "service and the namespace are required"},
		{[]string{"-dir", filepath.Join(t.TempDir(), "missing")}, 1, "no such file"},
	} {
		var stdout, stderr bytes.Buffer
		if code := runCerts(tt.args, &stdout, &stderr); code != tt.code || !strings.Contains(stderr.String(), tt.msg) || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, %d bytes out; want %d and %q", tt.args, code, stderr.String(), stdout.Len(), tt.code, tt.msg)
		}
	}
}

// The chart's default image is the one the Dockerfile's documented build
// command tags, and the Dockerfile builds this command.
func TestChartNamesTheDockerfilesImage(t *testing.T) {
	docker, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`docker build -f examples/webhook/cluster/Dockerfile -t (\S+):(\S+) \.`).FindSubmatch(docker)
	if m == nil {
		t.Fatal("the Dockerfile documents no build command")
	}
	if !strings.Contains(string(docker), "go build") || !strings.Contains(string(docker), "./examples/webhook/cluster") ||
		!strings.Contains(string(docker), "CGO_ENABLED=0") {
		t.Error("the Dockerfile does not build this command statically")
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "charts", "gavel", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Image struct{ Repository, Tag string }
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	if values.Image.Repository != string(m[1]) || values.Image.Tag != string(m[2]) {
		t.Errorf("the chart's image %s:%s, want %s:%s", values.Image.Repository, values.Image.Tag, m[1], m[2])
	}
}
