package registryauth_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/gavelpolicy/gavel/verify/registryauth"
)

// TestKeychains: the five providers, and the two whose credentials come
// from the environment without a cloud (docker config, GITHUB_TOKEN)
// resolve them for their registries only.
func TestKeychains(t *testing.T) {
	dir := t.TempDir()
	cfg := `{"auths":{"registry.example":{"username":"docker","password":"pw"}}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("GITHUB_TOKEN", "gh-token")
	kcs := registryauth.Keychains()
	for _, p := range []string{registryauth.Default, registryauth.Google, registryauth.Amazon, registryauth.Azure, registryauth.GitHub} {
		if kcs[p] == nil {
			t.Errorf("no keychain for %s", p)
		}
	}
	tests := []struct {
		provider, registry string
		want               authn.AuthConfig
	}{
		{registryauth.Default, "registry.example", authn.AuthConfig{Username: "docker", Password: "pw"}},
		{registryauth.Default, "other.example", authn.AuthConfig{}},
		{registryauth.GitHub, "ghcr.io", authn.AuthConfig{Username: "unset", Password: "gh-token"}},
		{registryauth.GitHub, "registry.example", authn.AuthConfig{}},
	}
	for _, tt := range tests {
		reg, err := name.NewRegistry(tt.registry)
		if err != nil {
			t.Fatal(err)
		}
		a, err := kcs[tt.provider].Resolve(reg)
		if err != nil {
			t.Fatalf("%s %s: %v", tt.provider, tt.registry, err)
		}
		got, err := a.Authorization()
		if err != nil {
			t.Fatal(err)
		}
		if *got != tt.want {
			t.Errorf("%s %s: got %+v, want %+v", tt.provider, tt.registry, *got, tt.want)
		}
	}
}
