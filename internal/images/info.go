package images

import (
	"fmt"
	"strings"
)

// DefaultRegistry is the registry of images that name none, unless
// Config.DefaultRegistry says otherwise.
const DefaultRegistry = "docker.io"

// Config holds the image settings of upstream's "kyverno" ConfigMap and the
// image extractors of a rule. A Config is read, never modified, so it may be
// shared.
type Config struct {
	// DefaultRegistry is the registry of images that name none; upstream's
	// default is "docker.io", which an empty value also means here. It may
	// carry a path ("123456789012.dkr.ecr.eu-west-3.amazonaws.com/docker"),
	// which then prefixes the image path.
	DefaultRegistry string

	// EnableDefaultRegistryMutation reports the default registry for images
	// that name none. Upstream's default is true (use DefaultConfig); when
	// false such images have an empty Registry.
	EnableDefaultRegistryMutation bool

	// Extractors are a rule's imageExtractors, by resource kind. When a kind
	// has an entry, it replaces the built-in extractors for that kind; an
	// entry with no extractors is an error, as upstream.
	Extractors map[string][]ExtractorConfig

	// CompileJMESPath compiles the JMESPath expressions of Extractors. When
	// nil, expressions are compiled with the standard JMESPath functions
	// only; pass the engine's interpreter to offer Kyverno's functions
	// (trim_prefix and the like), as upstream does.
	CompileJMESPath func(expression string) (Searcher, error)
}

// DefaultConfig returns upstream's defaults: registry docker.io, mutation on,
// built-in extractors.
func DefaultConfig() Config {
	return Config{DefaultRegistry: DefaultRegistry, EnableDefaultRegistryMutation: true}
}

func (c Config) registry() string {
	if c.DefaultRegistry == "" {
		return DefaultRegistry
	}
	return c.DefaultRegistry
}

// ExtractorConfig tells where images are in a custom resource; its fields are
// those of a rule's imageExtractors entry.
type ExtractorConfig struct {
	// Path is the slash-separated path to the image field, or to the object
	// holding it when Value is set; '*' expands every element of a list or
	// map.
	Path string
	// Value names the image field within Path's object.
	Value string
	// Name is the entry of the images variable; "custom" when empty.
	Name string
	// Key names the field that identifies each image; when empty, images are
	// keyed by their JSON pointer.
	Key string
	// JMESPath transforms the image string before parsing; it must give a
	// string.
	JMESPath string
}

// Searcher is a compiled JMESPath expression.
type Searcher interface {
	Search(data any) (any, error)
}

// Info describes one container image.
type Info struct {
	// Registry is the registry host, without scheme: "docker.io", "ghcr.io",
	// "localhost:5000". Empty when the image named none and
	// EnableDefaultRegistryMutation is off.
	Registry string
	// Path is the repository path as written: "nginx", "library/nginx",
	// "acme/app".
	Path string
	// Name is the last element of Path.
	Name string
	// Tag is the tag; "latest" when the image has neither tag nor digest,
	// empty when it has a digest only.
	Tag string
	// Digest is the digest, "sha256:...", or empty.
	Digest string
	// Pointer is the location of the image field in the resource, as
	// upstream writes it: "/spec/containers/0/image" (keys are not escaped).
	Pointer string
	// ImagePullSecrets are the names of the imagePullSecrets found on the
	// way to the image (spec.imagePullSecrets for a Pod).
	ImagePullSecrets []string
}

// String returns the reference as upstream prints it (the `reference`
// variable): registry/path followed by "@digest" when there is a digest,
// ":tag" otherwise.
func (i Info) String() string {
	var b strings.Builder
	i.writeName(&b)
	if i.Digest != "" {
		b.WriteByte('@')
		b.WriteString(i.Digest)
	} else {
		b.WriteByte(':')
		b.WriteString(i.Tag)
	}
	return b.String()
}

// ReferenceWithTag returns registry/path:tag (the `referenceWithTag`
// variable), which ends in ':' for an image given by digest only.
func (i Info) ReferenceWithTag() string {
	var b strings.Builder
	i.writeName(&b)
	b.WriteByte(':')
	b.WriteString(i.Tag)
	return b.String()
}

func (i Info) writeName(b *strings.Builder) {
	if i.Registry != "" {
		b.WriteString(i.Registry)
		b.WriteByte('/')
	}
	b.WriteString(i.Path)
}

// ParseError reports an image reference that cannot be parsed.
type ParseError struct {
	// Image is the reference as found in the resource.
	Image string
	// Full is the reference that was parsed, with the default registry.
	Full string
	// DefaultRegistry and Mutation are the settings in effect.
	DefaultRegistry string
	Mutation        bool
	// Err is one of the Err* values of this package.
	Err error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("bad image: %s, defaultRegistry: %s, enableDefaultRegistryMutation: %t: %v", e.Full, e.DefaultRegistry, e.Mutation, e.Err)
}

// Unwrap returns the underlying Err* value.
func (e *ParseError) Unwrap() error { return e.Err }

// Parse reads one image reference with the registry settings of cfg, as
// upstream does for every container image. Errors are *ParseError.
func Parse(image string, cfg Config) (Info, error) {
	registry := cfg.registry()
	full := withDefaultRegistry(image, registry)
	ref, err := parseReference(full)
	if err != nil {
		return Info{}, &ParseError{Image: image, Full: full, DefaultRegistry: registry, Mutation: cfg.EnableDefaultRegistryMutation, Err: err}
	}
	info := Info{
		Registry: ref.domain,
		Path:     ref.path,
		Name:     ref.path[strings.LastIndexByte(ref.path, '/')+1:],
		Tag:      ref.tag,
		Digest:   ref.digest,
	}
	if info.Tag == "" && info.Digest == "" {
		info.Tag = "latest"
	}
	if full != image && !cfg.EnableDefaultRegistryMutation {
		info.Registry = ""
	}
	return info, nil
}

// withDefaultRegistry prefixes the default registry unless the first path
// element already is a registry: it contains '.' or ':', is "localhost", or
// has upper-case letters.
func withDefaultRegistry(image, registry string) string {
	i := strings.IndexByte(image, '/')
	if i < 0 {
		return registry + "/" + image
	}
	first := image[:i]
	if !strings.ContainsAny(first, ".:") && first != "localhost" && strings.ToLower(first) == first {
		return registry + "/" + image
	}
	return image
}
