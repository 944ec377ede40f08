package images

import (
	"errors"
	"strings"
	"testing"
)

const digest = "sha256:5f44022eab9198d75939d9eaa5341bc077eca16fa51d4ef32d33f1bd4c8cbe7d"

func TestParse(t *testing.T) {
	def := DefaultConfig()
	noMutation := Config{DefaultRegistry: "gcr.io"}
	gcr := Config{DefaultRegistry: "gcr.io", EnableDefaultRegistryMutation: true}
	ecr := Config{DefaultRegistry: "123456789012.dkr.ecr.eu-west-3.amazonaws.com/docker", EnableDefaultRegistryMutation: true}
	tests := []struct {
		name, image string
		cfg         Config
		want        Info
		ref, refTag string
	}{
		// seed variables-images-defaults and variables-images-info
		{name: "name only", image: "nginx", cfg: def,
			want: Info{Registry: "docker.io", Path: "nginx", Name: "nginx", Tag: "latest"},
			ref:  "docker.io/nginx:latest", refTag: "docker.io/nginx:latest"},
		{name: "busybox", image: "busybox", cfg: def,
			want: Info{Registry: "docker.io", Path: "busybox", Name: "busybox", Tag: "latest"},
			ref:  "docker.io/busybox:latest", refTag: "docker.io/busybox:latest"},
		{name: "explicit library latest", image: "docker.io/library/nginx:latest", cfg: def,
			want: Info{Registry: "docker.io", Path: "library/nginx", Name: "nginx", Tag: "latest"},
			ref:  "docker.io/library/nginx:latest", refTag: "docker.io/library/nginx:latest"},
		{name: "tagged", image: "nginx:1.25", cfg: def,
			want: Info{Registry: "docker.io", Path: "nginx", Name: "nginx", Tag: "1.25"},
			ref:  "docker.io/nginx:1.25", refTag: "docker.io/nginx:1.25"},
		{name: "other registry", image: "ghcr.io/acme/app:1.0", cfg: def,
			want: Info{Registry: "ghcr.io", Path: "acme/app", Name: "app", Tag: "1.0"},
			ref:  "ghcr.io/acme/app:1.0", refTag: "ghcr.io/acme/app:1.0"},
		{name: "ghcr single path", image: "ghcr.io/vault:v3", cfg: def,
			want: Info{Registry: "ghcr.io", Path: "vault", Name: "vault", Tag: "v3"},
			ref:  "ghcr.io/vault:v3", refTag: "ghcr.io/vault:v3"},
		{name: "digest only", image: "nginx@" + digest, cfg: def,
			want: Info{Registry: "docker.io", Path: "nginx", Name: "nginx", Digest: digest},
			ref:  "docker.io/nginx@" + digest, refTag: "docker.io/nginx:"},
		{name: "library digest", image: "docker.io/library/nginx@" + digest, cfg: def,
			want: Info{Registry: "docker.io", Path: "library/nginx", Name: "nginx", Digest: digest},
			ref:  "docker.io/library/nginx@" + digest, refTag: "docker.io/library/nginx:"},
		{name: "tag and digest", image: "nginx:1.25@" + digest, cfg: def,
			want: Info{Registry: "docker.io", Path: "nginx", Name: "nginx", Tag: "1.25", Digest: digest},
			ref:  "docker.io/nginx@" + digest, refTag: "docker.io/nginx:1.25"},
		// upstream unit tests
		{name: "versioned", image: "nginx:v10.3", cfg: def,
			want: Info{Registry: "docker.io", Path: "nginx", Name: "nginx", Tag: "v10.3"},
			ref:  "docker.io/nginx:v10.3", refTag: "docker.io/nginx:v10.3"},
		{name: "docker.io org", image: "docker.io/test/nginx:v10.3", cfg: def,
			want: Info{Registry: "docker.io", Path: "test/nginx", Name: "nginx", Tag: "v10.3"},
			ref:  "docker.io/test/nginx:v10.3", refTag: "docker.io/test/nginx:v10.3"},
		{name: "org without registry", image: "test/nginx", cfg: def,
			want: Info{Registry: "docker.io", Path: "test/nginx", Name: "nginx", Tag: "latest"},
			ref:  "docker.io/test/nginx:latest", refTag: "docker.io/test/nginx:latest"},
		{name: "localhost port", image: "localhost:4443/test/nginx", cfg: def,
			want: Info{Registry: "localhost:4443", Path: "test/nginx", Name: "nginx", Tag: "latest"},
			ref:  "localhost:4443/test/nginx:latest", refTag: "localhost:4443/test/nginx:latest"},
		{name: "localhost", image: "localhost/netd:v0.4.4-gke.0", cfg: def,
			want: Info{Registry: "localhost", Path: "netd", Name: "netd", Tag: "v0.4.4-gke.0"},
			ref:  "localhost/netd:v0.4.4-gke.0", refTag: "localhost/netd:v0.4.4-gke.0"},
		{name: "centos digest", image: "docker.io/test/centos@sha256:dead07b4d8ed7e29e98de0f4504d87e8880d4347859d839686a31da35a3b532f", cfg: def,
			want: Info{Registry: "docker.io", Path: "test/centos", Name: "centos", Digest: "sha256:dead07b4d8ed7e29e98de0f4504d87e8880d4347859d839686a31da35a3b532f"},
			ref:  "docker.io/test/centos@sha256:dead07b4d8ed7e29e98de0f4504d87e8880d4347859d839686a31da35a3b532f", refTag: "docker.io/test/centos:"},
		{name: "other default registry", image: "test/nginx", cfg: gcr,
			want: Info{Registry: "gcr.io", Path: "test/nginx", Name: "nginx", Tag: "latest"},
			ref:  "gcr.io/test/nginx:latest", refTag: "gcr.io/test/nginx:latest"},
		{name: "mutation off", image: "test/nginx", cfg: noMutation,
			want: Info{Path: "test/nginx", Name: "nginx", Tag: "latest"},
			ref:  "test/nginx:latest", refTag: "test/nginx:latest"},
		{name: "mutation off keeps explicit registry", image: "myregistry.org/test/nginx:v10.3", cfg: noMutation,
			want: Info{Registry: "myregistry.org", Path: "test/nginx", Name: "nginx", Tag: "v10.3"},
			ref:  "myregistry.org/test/nginx:v10.3", refTag: "myregistry.org/test/nginx:v10.3"},
		{name: "default registry with path", image: "test/nginx:v10.3", cfg: ecr,
			want: Info{Registry: "123456789012.dkr.ecr.eu-west-3.amazonaws.com", Path: "docker/test/nginx", Name: "nginx", Tag: "v10.3"},
			ref:  "123456789012.dkr.ecr.eu-west-3.amazonaws.com/docker/test/nginx:v10.3", refTag: "123456789012.dkr.ecr.eu-west-3.amazonaws.com/docker/test/nginx:v10.3"},
		{name: "zero config means docker.io without mutation", image: "nginx", cfg: Config{},
			want: Info{Path: "nginx", Name: "nginx", Tag: "latest"},
			ref:  "nginx:latest", refTag: "nginx:latest"},
		// grammar corners
		{name: "upper-case first element is a registry", image: "MyRegistry/app", cfg: def,
			want: Info{Registry: "MyRegistry", Path: "app", Name: "app", Tag: "latest"},
			ref:  "MyRegistry/app:latest", refTag: "MyRegistry/app:latest"},
		{name: "underscore host is a path", image: "my_registry.io/app", cfg: def,
			want: Info{Path: "my_registry.io/app", Name: "app", Tag: "latest"},
			ref:  "my_registry.io/app:latest", refTag: "my_registry.io/app:latest"},
		{name: "ipv6 registry", image: "[::1]:5000/app:1", cfg: def,
			want: Info{Registry: "[::1]:5000", Path: "app", Name: "app", Tag: "1"},
			ref:  "[::1]:5000/app:1", refTag: "[::1]:5000/app:1"},
		{name: "registry port without tag", image: "registry.k8s.io:443/pause", cfg: def,
			want: Info{Registry: "registry.k8s.io:443", Path: "pause", Name: "pause", Tag: "latest"},
			ref:  "registry.k8s.io:443/pause:latest", refTag: "registry.k8s.io:443/pause:latest"},
		{name: "deep path and separators", image: "quay.io/a__b/c-d.e/f---g:TAG_1.x", cfg: def,
			want: Info{Registry: "quay.io", Path: "a__b/c-d.e/f---g", Name: "f---g", Tag: "TAG_1.x"},
			ref:  "quay.io/a__b/c-d.e/f---g:TAG_1.x", refTag: "quay.io/a__b/c-d.e/f---g:TAG_1.x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.image, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got.Registry != tc.want.Registry || got.Path != tc.want.Path || got.Name != tc.want.Name || got.Tag != tc.want.Tag || got.Digest != tc.want.Digest {
				t.Errorf("Parse(%q) = %+v, want %+v", tc.image, got, tc.want)
			}
			if s := got.String(); s != tc.ref {
				t.Errorf("String() = %q, want %q", s, tc.ref)
			}
			if s := got.ReferenceWithTag(); s != tc.refTag {
				t.Errorf("ReferenceWithTag() = %q, want %q", s, tc.refTag)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		image string
		want  error
	}{
		{"++", ErrReferenceInvalidFormat}, // upstream unit test
		{"", ErrReferenceInvalidFormat},   // "docker.io/" after the default registry
		{"nginx:", ErrReferenceInvalidFormat},
		{"nginx:-tag", ErrReferenceInvalidFormat},
		{"nginx:" + strings.Repeat("a", 129), ErrReferenceInvalidFormat},
		{"Nginx", ErrNameContainsUppercase},
		{"acme/Nginx:1", ErrNameContainsUppercase},
		{"ghcr.io/Acme/app", ErrNameContainsUppercase},
		{"a..b", ErrReferenceInvalidFormat},
		{"a_", ErrReferenceInvalidFormat},
		{"a___b", ErrReferenceInvalidFormat},
		{"-a", ErrReferenceInvalidFormat},
		{"a//b", ErrReferenceInvalidFormat},
		{"https://docker.io/nginx", ErrReferenceInvalidFormat},
		{"nginx@sha256:abc", ErrReferenceInvalidFormat},
		{"nginx@sha256:" + strings.Repeat("a", 63), ErrDigestInvalidLength},
		{"nginx@sha256:" + strings.ToUpper(digest[7:]), ErrDigestInvalidFormat},
		{"nginx@md5:" + strings.Repeat("a", 32), ErrDigestUnsupported},
		{"nginx@SHA256:" + digest[7:], ErrDigestInvalidFormat},
		{"ghcr.io/" + strings.Repeat("a", 256), ErrNameTooLong},
	}
	for _, tc := range tests {
		t.Run(tc.image, func(t *testing.T) {
			info, err := Parse(tc.image, DefaultConfig())
			if !errors.Is(err, tc.want) {
				t.Fatalf("Parse(%q) = %+v, %v; want %v", tc.image, info, err, tc.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Image != tc.image || pe.DefaultRegistry != "docker.io" || !pe.Mutation {
				t.Fatalf("error is not a complete *ParseError: %#v", err)
			}
			if !strings.HasPrefix(err.Error(), "bad image: ") || !strings.HasSuffix(err.Error(), ": "+tc.want.Error()) {
				t.Errorf("message %q", err.Error())
			}
		})
	}
	// The longest path is accepted: the limit counts the path, not the registry.
	if _, err := Parse("ghcr.io/"+strings.Repeat("a", 255), DefaultConfig()); err != nil {
		t.Errorf("255-character path: %v", err)
	}
}
