package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// WithSecretsNamespace sets the namespace of imageRegistryCredentials
// secrets given by name alone (upstream: Kyverno's namespace; default
// "kyverno"). Secrets given as "namespace/name" are read in their
// namespace.
func WithSecretsNamespace(ns string) Option { return func(v *Verifier) { v.secretsNS = ns } }

// WithCredentialProviders sets the keychains of the provider names that
// imageRegistryCredentials.providers lists (upstream's default, amazon,
// azure, google, github). A policy naming a provider without a keychain
// here gets an error wrapping engine.ErrNotConfigured. Package
// verify/registryauth builds upstream's set (the docker config and the
// clouds' credential helpers); the map is copied.
func WithCredentialProviders(keychains map[string]authn.Keychain) Option {
	return func(v *Verifier) {
		v.providers = make(map[string]authn.Keychain, len(keychains))
		for name, kc := range keychains {
			v.providers[name] = kc
		}
	}
}

// keychainFor returns the keychain of a request: the docker configs of
// the entry's imageRegistryCredentials.secrets (kubernetes.io/dockerconfigjson
// or dockercfg Secrets, read through the SecretReader), then the keychains
// of its providers (WithCredentialProviders), then those of the
// resource's image pull secrets (best effort: skipped without a
// SecretReader or when unreadable, as the kubelet reads them, not the
// policy), then the Verifier's keychain.
func (v *Verifier) keychainFor(ctx context.Context, creds *api.ImageRegistryCredentials, pullSecrets []string) (authn.Keychain, error) {
	var named, providers []string
	if creds != nil {
		named, providers = creds.Secrets, creds.Providers
	}
	if len(named) == 0 && len(providers) == 0 && (len(pullSecrets) == 0 || v.secrets == nil) {
		return v.keychain, nil
	}
	if len(named) > 0 && v.secrets == nil {
		return nil, fmt.Errorf("imageRegistryCredentials.secrets: %w", engine.ErrNotConfigured)
	}
	chain := make([]authn.Keychain, 0, len(named)+len(providers)+len(pullSecrets)+1)
	for _, s := range named {
		ns, name, ok := strings.Cut(s, "/")
		if !ok {
			ns, name = v.secretsNS, s
		}
		data, err := v.secrets.SecretData(ctx, ns, name)
		if err != nil {
			return nil, fmt.Errorf("failed to read registry credentials %s/%s: %w", ns, name, err)
		}
		kc, err := dockerConfigKeychain(data)
		if err != nil {
			return nil, fmt.Errorf("registry credentials %s/%s: %w", ns, name, err)
		}
		chain = append(chain, kc)
	}
	for _, p := range providers {
		kc, ok := v.providers[p]
		if !ok {
			return nil, fmt.Errorf("imageRegistryCredentials.providers: provider %q: %w", p, engine.ErrNotConfigured)
		}
		chain = append(chain, kc)
	}
	if v.secrets != nil {
		for _, s := range pullSecrets {
			ns, name, _ := strings.Cut(s, "/")
			if data, err := v.secrets.SecretData(ctx, ns, name); err == nil {
				if kc, err := dockerConfigKeychain(data); err == nil {
					chain = append(chain, kc)
				}
			}
		}
	}
	return authn.NewMultiKeychain(append(chain, v.keychain)...), nil
}

// dockerConfigKeychain reads the auths of a pull secret into the
// library's AuthConfig type.
func dockerConfigKeychain(data map[string][]byte) (authn.Keychain, error) {
	var auths map[string]authn.AuthConfig
	switch {
	case len(data[".dockerconfigjson"]) > 0:
		var cfg struct {
			Auths map[string]authn.AuthConfig `json:"auths"`
		}
		if err := json.Unmarshal(data[".dockerconfigjson"], &cfg); err != nil {
			return nil, fmt.Errorf("invalid .dockerconfigjson: %w", err)
		}
		auths = cfg.Auths
	case len(data[".dockercfg"]) > 0:
		if err := json.Unmarshal(data[".dockercfg"], &auths); err != nil {
			return nil, fmt.Errorf("invalid .dockercfg: %w", err)
		}
	default:
		return nil, fmt.Errorf("no .dockerconfigjson or .dockercfg")
	}
	kc := configKeychain{}
	for host, a := range auths {
		kc[normalizeHost(host)] = a
	}
	return kc, nil
}

type configKeychain map[string]authn.AuthConfig

// Resolve implements authn.Keychain.
func (k configKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if a, ok := k[normalizeHost(r.RegistryStr())]; ok {
		return authn.FromConfig(a), nil
	}
	return authn.Anonymous, nil
}

// normalizeHost reduces a docker config key ("https://index.docker.io/v1/",
// "ghcr.io") to its host, Docker Hub's names to one.
func normalizeHost(h string) string {
	h = strings.TrimPrefix(strings.TrimPrefix(h, "https://"), "http://")
	h, _, _ = strings.Cut(h, "/")
	switch h {
	case "docker.io", "registry-1.docker.io", "index.docker.io":
		return "index.docker.io"
	}
	return h
}
