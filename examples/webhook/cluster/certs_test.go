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
		name          string
		args          []string
		secretNS      string
		hosts         []string
		serviceInHook string
	}{
		{
			name: "defaults", secretNS: "gavel",
			hosts:         []string{"gavel.gavel.svc", "gavel.gavel.svc.cluster.local"},
			serviceInHook: "service: {name: gavel, namespace: gavel, path: /mutate}",
		},
		{
			name: "other service", args: []string{"-namespace", "policy", "-service", "webhook"}, secretNS: "policy",
			hosts:         []string{"webhook.policy.svc", "webhook.policy.svc.cluster.local"},
			serviceInHook: "service: {name: webhook, namespace: policy, path: /mutate}",
		},
		{
			name: "outside the cluster", args: []string{"-hosts", "127.0.0.1,localhost, ::1"}, secretNS: "gavel",
			hosts:         []string{"gavel.gavel.svc", "127.0.0.1", "localhost", "::1"},
			serviceInHook: "service: {name: gavel, namespace: gavel, path: /mutate}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			if code := runCerts(append([]string{"-dir", dir}, tt.args...), &stdout, &stderr); code != 0 {
				t.Fatalf("exit code %d: %s", code, stderr.String())
			}
			docs := strings.Split(stdout.String(), "\n---\n")
			if len(docs) != 3 {
				t.Fatalf("%d documents, want the Secret and two webhook configurations", len(docs))
			}
			var secret struct {
				Kind     string
				Type     string
				Metadata struct{ Name, Namespace string }
				Data     map[string][]byte
			}
			if err := yaml.Unmarshal([]byte(docs[0]), &secret); err != nil {
				t.Fatal(err)
			}
			if secret.Kind != "Secret" || secret.Type != "kubernetes.io/tls" || secret.Metadata.Name != "gavel-tls" || secret.Metadata.Namespace != tt.secretNS {
				t.Errorf("secret %+v", secret)
			}
			if strings.Contains(stdout.String(), "CA_BUNDLE") {
				t.Error("a CA_BUNDLE is left")
			}
			if !strings.Contains(docs[1], tt.serviceInHook) {
				t.Errorf("mutating webhook does not name %q:\n%s", tt.serviceInHook, docs[1])
			}
			var caBundles [][]byte
			for _, doc := range docs[1:] {
				var wh struct {
					Kind     string
					Webhooks []struct {
						ClientConfig struct{ CABundle []byte } `json:"clientConfig"`
					}
				}
				if err := yaml.Unmarshal([]byte(doc), &wh); err != nil {
					t.Fatal(err)
				}
				for _, w := range wh.Webhooks {
					caBundles = append(caBundles, w.ClientConfig.CABundle)
				}
			}
			// mutate, validate, and the downstream and clone source
			// webhooks (one configuration)
			if len(caBundles) != 4 {
				t.Fatalf("%d webhooks, want 4", len(caBundles))
			}
			for _, b := range caBundles[1:] {
				if !bytes.Equal(b, caBundles[0]) {
					t.Fatal("the webhooks' caBundles differ")
				}
			}
			if want := strings.Replace(tt.serviceInHook, "/mutate", "/downstream", 1); strings.Count(docs[2], want) != 2 {
				t.Errorf("the downstream webhooks do not name %q:\n%s", want, docs[2])
			}
			// the webhooks' CA verifies the Secret's certificate for the
			// Service's names, and the key pair matches
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(caBundles[0]) || !bytes.Equal(caBundles[0], caBundles[1]) || !bytes.Equal(caBundles[0], secret.Data["ca.crt"]) {
				t.Fatal("the webhooks' caBundles are not the Secret's CA")
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
	noBundle := filepath.Join(t.TempDir(), "webhooks.yaml")
	if err := os.WriteFile(noBundle, []byte("kind: ValidatingWebhookConfiguration\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-no-such-flag"}, 2, "usage: cluster certs"},
		{[]string{"-validity", "-1h"}, 1, "validity must be positive"},
		{[]string{"-service", ""}, 1, "service and the namespace are required"},
		{[]string{"-webhooks", noBundle}, 1, "no CA_BUNDLE"},
		{[]string{"-webhooks", filepath.Join(t.TempDir(), "missing.yaml")}, 1, "no such file"},
	} {
		var stdout, stderr bytes.Buffer
		if code := runCerts(tt.args, &stdout, &stderr); code != tt.code || !strings.Contains(stderr.String(), tt.msg) || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, %d bytes out; want %d and %q", tt.args, code, stderr.String(), stdout.Len(), tt.code, tt.msg)
		}
	}
}

// The Deployment names the image that the Dockerfile's documented build
// command tags, and the Dockerfile builds this command.
func TestDeploymentNamesTheDockerfilesImage(t *testing.T) {
	docker, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`docker build -f examples/webhook/cluster/Dockerfile -t (\S+) \.`).FindSubmatch(docker)
	if m == nil {
		t.Fatal("the Dockerfile documents no build command")
	}
	if !strings.Contains(string(docker), "go build") || !strings.Contains(string(docker), "./examples/webhook/cluster") ||
		!strings.Contains(string(docker), "CGO_ENABLED=0") {
		t.Error("the Dockerfile does not build this command statically")
	}
	deploy, err := os.ReadFile(filepath.Join("manifests", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, doc := range strings.Split(string(deploy), "\n---\n") {
		var d struct {
			Kind string
			Spec struct {
				Template struct {
					Spec struct{ Containers []struct{ Image string } }
				}
			}
		}
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
			t.Fatal(err)
		}
		if d.Kind != "Deployment" {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
		}
	}
	if len(images) != 1 || images[0] != string(m[1]) {
		t.Errorf("the Deployment's images %v, want [%s]", images, m[1])
	}
}
