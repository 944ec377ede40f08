package verify_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/verify"
)

// hostKeychain gives basic credentials for one registry host, as a cloud
// credential helper does for its registries.
type hostKeychain struct {
	host, user, password string
	calls                *atomic.Int32
}

func (k hostKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	k.calls.Add(1)
	if r.RegistryStr() != k.host {
		return authn.Anonymous, nil
	}
	return &authn.Basic{Username: k.user, Password: k.password}, nil
}

// TestCredentialProviders: imageRegistryCredentials.providers picks the
// keychains the embedder gave by provider name; a provider without one is
// "not configured".
func TestCredentialProviders(t *testing.T) {
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	var locked atomic.Bool
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("ecr:t0ken"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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

	var amazonCalls, githubCalls atomic.Int32
	v := verify.New(verify.WithCredentialProviders(map[string]authn.Keychain{
		"amazon": hostKeychain{host: reg.host, user: "ecr", password: "t0ken", calls: &amazonCalls},
		"github": hostKeychain{host: "ghcr.io", user: "gh", password: "x", calls: &githubCalls},
	}))
	creds := func(providers string) string {
		return "      imageRegistryCredentials:\n        providers: " + providers + "\n"
	}
	tests := []struct{ name, creds, want string }{
		{"provider", creds("[amazon]"), "pass: verified image signatures for " + img},
		{"providers in turn", creds("[github, amazon]"), "pass: verified image signatures for " + img},
		{"other provider", creds("[github]"), "fail: failed to verify image " + img + ": failed to fetch image descriptor " + img + ": GET " + srv.URL + "/v2/private/manifests/v1: unexpected status code 401 Unauthorized"},
		{"not configured", creds("[amazon, google]"), `error: failed to verify image ` + img + `: imageRegistryCredentials.providers: provider "google": not configured`},
		{"none", "", "fail: failed to verify image " + img + ": failed to fetch image descriptor " + img + ": GET " + srv.URL + "/v2/private/manifests/v1: unexpected status code 401 Unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, v, policy("", tt.creds+keysEntry("", key.pem)))
			if _, got := run(t, set, pod(img)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	if amazonCalls.Load() == 0 || githubCalls.Load() == 0 {
		t.Errorf("keychains asked: amazon %d, github %d", amazonCalls.Load(), githubCalls.Load())
	}
	// the typed cause, and a Verifier without providers
	req := engine.ImageVerifyRequest{Image: d.String(), Attestor: api.Attestor{Keys: &api.StaticKeyAttestor{PublicKeys: key.pem}},
		Credentials: &api.ImageRegistryCredentials{Providers: []string{"amazon"}}}
	if err := verify.New().VerifySignature(context.Background(), req); !errors.Is(err, engine.ErrNotConfigured) {
		t.Errorf("no providers: %v", err)
	}
	if err := v.VerifySignature(context.Background(), req); err != nil {
		t.Errorf("amazon: %v", err)
	}
}
