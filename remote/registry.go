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
	"github.com/gavelpolicy/gavel/cel"
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

var _ cel.ImageDataClient = (*Registry)(nil)

// ImageMetadata implements cel.ImageDataClient (image.GetMetadata of the
// CEL policy types): upstream's image data of a reference, as JSON
// values: image, resolvedImage (NAME:TAG@DIGEST, or NAME@DIGEST),
// registry, repository, identifier, tag (for a tag reference), digest,
// imageIndex (the index manifest, when the reference is an index),
// manifest and config (of the image, for an index the linux/amd64 one).
func (r *Registry) ImageMetadata(ctx context.Context, reference string) (map[string]any, error) {
	ref, err := name.ParseReference(reference)
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
	out := map[string]any{
		"image":      reference,
		"registry":   ref.Context().RegistryStr(),
		"repository": ref.Context().RepositoryStr(),
		"identifier": ref.Identifier(),
	}
	digest := ref.Identifier()
	if _, isTag := ref.(name.Tag); isTag {
		out["tag"] = ref.Identifier()
		digest = desc.Digest.String()
		out["resolvedImage"] = ref.Context().Name() + ":" + ref.Identifier() + "@" + digest
	} else {
		out["resolvedImage"] = ref.Context().Name() + "@" + digest
	}
	out["digest"] = digest
	if desc.MediaType.IsIndex() {
		var index any
		if err := json.Unmarshal(desc.Manifest, &index); err != nil {
			return nil, fmt.Errorf("failed to decode image index of %s: %w", reference, err)
		}
		out["imageIndex"] = index
	}
	img, err := desc.Image()
	if err != nil {
		return nil, fmt.Errorf("failed to read image %s: %w", reference, err)
	}
	manifest, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("failed to read manifest of %s: %w", reference, err)
	}
	if raw, err := img.RawConfigFile(); err == nil && int64(len(raw)) > r.maxBytes {
		return nil, fmt.Errorf("config of %s is larger than %d bytes", reference, r.maxBytes)
	}
	config, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("failed to read config of %s: %w", reference, err)
	}
	// the JSON of go-containerregistry's types, as upstream's
	for key, v := range map[string]any{"manifest": manifest, "config": config} {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		var decoded any
		if err := json.Unmarshal(raw, &decoded); err != nil {
			return nil, err
		}
		out[key] = decoded
	}
	return out, nil
}
