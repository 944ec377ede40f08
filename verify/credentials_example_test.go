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

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/verify"
)

// imageRegistryCredentials.providers names credential providers; the
// program gives their keychains (package registryauth builds upstream's:
// docker config, ECR, ACR, GCR, GitHub). Here a private registry reads
// only with the "amazon" provider's credentials.
func ExampleWithCredentialProviders() {
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	var locked atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if locked.Load() && r.Header.Get("Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte("AWS:token")) {
			w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, _ := random.Image(64, 1)
	ref, _ := name.ParseReference(host + "/private:v1")
	if err := remote.Write(ref, img); err != nil {
		panic(err)
	}
	locked.Store(true)

	v := verify.New(verify.WithCredentialProviders(map[string]authn.Keychain{
		"amazon": authn.NewMultiKeychain(staticKeychain{host: host, auth: authn.AuthConfig{Username: "AWS", Password: "token"}}),
	}))
	for _, providers := range [][]string{{"amazon"}, {"google"}} {
		req := engine.ImageVerifyRequest{Image: ref.String(), Credentials: &api.ImageRegistryCredentials{Providers: providers}}
		digest, err := v.ResolveDigest(context.Background(), req)
		d, _ := img.Digest()
		fmt.Println(providers, digest == d.String(), err)
	}
	// Output:
	// [amazon] true <nil>
	// [google] false imageRegistryCredentials.providers: provider "google": not configured
}

// staticKeychain stands for a cloud credential helper: credentials for
// one registry.
type staticKeychain struct {
	host string
	auth authn.AuthConfig
}

func (k staticKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if r.RegistryStr() == k.host {
		return authn.FromConfig(k.auth), nil
	}
	return authn.Anonymous, nil
}
