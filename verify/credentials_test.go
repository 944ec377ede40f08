package verify_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/gavelpolicy/gavel/verify"
)

type secrets map[string]map[string][]byte

func (s secrets) SecretData(_ context.Context, ns, name string) (map[string][]byte, error) {
	d, ok := s[ns+"/"+name]
	if !ok {
		return nil, fmt.Errorf("secret %s/%s not found", ns, name)
	}
	return d, nil
}

// TestRegistryCredentials: a registry that reads only with credentials;
// imageRegistryCredentials.secrets names a pull secret holding them.
func TestRegistryCredentials(t *testing.T) {
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	var locked atomic.Bool
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("reader:s3cret"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// open while the test pushes, then closed without the credentials
		if locked.Load() && r.Header.Get("Authorization") != want {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()
	reg := &testRegistry{srv: srv, host: strings.TrimPrefix(srv.URL, "http://")}
	key := newKey(t)
	img, d := reg.push(t, "private:v1")
	sign(t, d, key.signer, nil)
	locked.Store(true)
	pull := []byte(`{"auths":{"` + reg.host + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("reader:s3cret")) + `"}}}`)
	v := verify.New(verify.WithSecrets(secrets{"kyverno/pull": {".dockerconfigjson": pull}, "team/pull": {".dockerconfigjson": pull}}))
	tests := []struct{ name, creds, want string }{
		{"secret by name", "      imageRegistryCredentials:\n        secrets: [pull]\n", "pass: verified image signatures for " + img},
		{"secret by namespace/name", "      imageRegistryCredentials:\n        secrets: [team/pull]\n", "pass: verified image signatures for " + img},
		{"no credentials", "", "fail: failed to verify image " + img + ": failed to fetch image descriptor " + img + ": GET " + srv.URL + "/v2/private/manifests/v1: unexpected status code 401 Unauthorized"},
		{"missing secret", "      imageRegistryCredentials:\n        secrets: [other]\n", "fail: failed to verify image " + img + ": failed to read registry credentials kyverno/other: secret kyverno/other not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, v, policy("", tt.creds+keysEntry("", key.pem)))
			_, got := run(t, set, pod(img))
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	// a Pod's own imagePullSecrets, read in its namespace
	withPull := pod(img)
	withPull["metadata"].(map[string]any)["namespace"] = "team"
	withPull["spec"].(map[string]any)["imagePullSecrets"] = []any{map[string]any{"name": "pull"}}
	set := compile(t, v, policy("", keysEntry("", key.pem)))
	if _, got := run(t, set, withPull); got != "pass: verified image signatures for "+img {
		t.Errorf("imagePullSecrets: got %s", got)
	}
	withPull["metadata"].(map[string]any)["namespace"] = "elsewhere"
	set = compile(t, v, policy("", keysEntry("", key.pem)))
	if _, got := run(t, set, withPull); !strings.Contains(got, "401 Unauthorized") {
		t.Errorf("imagePullSecrets of another namespace: got %s", got)
	}
}

// TestKeySecrets: a public key read from a Secret's cosign.pub, given as
// keys.secret or as upstream's k8s://namespace/name.
func TestKeySecrets(t *testing.T) {
	reg := newRegistry(t)
	key := newKey(t)
	img, d := reg.push(t, "app:v1")
	sign(t, d, key.signer, nil)
	v := verify.New(verify.WithSecrets(secrets{"keys/signer": {"cosign.pub": []byte(key.pem)}, "keys/other": {"cosign.pub": []byte(newKey(t).pem)}}))
	tests := []struct{ name, keys, want string }{
		{"secret", "            secret:\n              namespace: keys\n              name: signer\n", "pass: verified image signatures for " + img},
		{"k8s://", "            publicKeys: k8s://keys/signer\n", "pass: verified image signatures for " + img},
		{"other key", "            publicKeys: k8s://keys/other\n", "fail: failed to verify image " + img + ": .attestors[0].entries[0].keys: no matching signatures: invalid signature when validating ASN.1 encoded signature"},
		{"missing", "            publicKeys: k8s://keys/none\n", "fail: failed to verify image " + img + ": .attestors[0].entries[0].keys: failed to read secret keys/none: secret keys/none not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, v, policy("", "      attestors:\n      - entries:\n        - keys:\n"+tt.keys))
			if _, got := run(t, set, pod(img)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	// without a SecretReader the key cannot be read: an error, not a failure
	set := compile(t, verify.New(), policy("", "      attestors:\n      - entries:\n        - keys:\n            publicKeys: k8s://keys/signer\n"))
	if _, got := run(t, set, pod(img)); got != "error: failed to verify image "+img+": .attestors[0].entries[0].keys: key from secret keys/signer: not configured" {
		t.Errorf("no SecretReader: got %s", got)
	}
}
