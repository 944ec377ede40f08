package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// Registry reads image data from OCI registries with go-containerregistry.
// It is safe for concurrent use.
type Registry struct {
	keychain  authn.Keychain
	transport http.RoundTripper
	maxBytes  int64
}

var _ engine.RegistryClient = (*Registry)(nil)

// RegistryOption configures a Registry.
type RegistryOption func(*Registry)

// WithKeychain sets the credentials (default: anonymous).
func WithKeychain(k authn.Keychain) RegistryOption { return func(r *Registry) { r.keychain = k } }

// WithTransport sets the HTTP transport (default: http.DefaultTransport).
func WithTransport(t http.RoundTripper) RegistryOption { return func(r *Registry) { r.transport = t } }

// WithMaxConfigBytes bounds the size of manifests and configs read.
func WithMaxConfigBytes(n int64) RegistryOption { return func(r *Registry) { r.maxBytes = n } }

// NewRegistry returns a registry client.
func NewRegistry(opts ...RegistryOption) *Registry {
	r := &Registry{keychain: authn.NewMultiKeychain(), transport: http.DefaultTransport, maxBytes: 4 << 20}
	for _, o := range opts {
		o(r)
	}
	return r
}

// ImageData implements engine.RegistryClient: it resolves the reference and
// returns upstream's ImageData shape (image, resolvedImage, registry,
// repository, identifier, manifest, configData).
func (r *Registry) ImageData(ctx context.Context, reference string, creds *api.ImageRegistryCredentials) (map[string]any, error) {
	var nameOpts []name.Option
	if creds != nil && creds.AllowInsecureRegistry {
		nameOpts = append(nameOpts, name.Insecure)
	}
	ref, err := name.ParseReference(reference, nameOpts...)
	if err != nil {
		return nil, fmt.Errorf("failed to parse image reference %s: %w", reference, err)
	}
	opts := []ggcr.Option{ggcr.WithContext(ctx), ggcr.WithAuthFromKeychain(r.keychain), ggcr.WithTransport(r.transport)}
	desc, err := ggcr.Get(ref, opts...)
	if err != nil {
		return nil, fmt.Errorf("failed to fetch image descriptor %s: %w", reference, err)
	}
	if int64(len(desc.Manifest)) > r.maxBytes {
		return nil, fmt.Errorf("manifest of %s is larger than %d bytes", reference, r.maxBytes)
	}
	var manifest any
	if err := json.Unmarshal(desc.Manifest, &manifest); err != nil {
		return nil, fmt.Errorf("failed to decode manifest of %s: %w", reference, err)
	}
	var config any
	if img, err := desc.Image(); err == nil {
		raw, err := img.RawConfigFile()
		if err != nil {
			return nil, fmt.Errorf("failed to read config of %s: %w", reference, err)
		}
		if int64(len(raw)) > r.maxBytes {
			return nil, fmt.Errorf("config of %s is larger than %d bytes", reference, r.maxBytes)
		}
		if err := json.Unmarshal(raw, &config); err != nil {
			return nil, fmt.Errorf("failed to decode config of %s: %w", reference, err)
		}
	}
	identifier := ref.Identifier()
	resolved := ref.Context().Digest(desc.Digest.String())
	return map[string]any{
		"image":         reference,
		"resolvedImage": resolved.String(),
		"registry":      ref.Context().RegistryStr(),
		"repository":    ref.Context().RepositoryStr(),
		"identifier":    identifier,
		"manifest":      manifest,
		"configData":    config,
	}, nil
}
