package images

import (
	"strings"
	"testing"
)

// FuzzParse checks that any string either fails with a *ParseError or gives
// an Info whose reference parses back to the same Info.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"nginx", "docker.io/library/nginx:latest", "nginx@" + digest, "localhost:5000/a/b:c", "[::1]:80/x", "Nginx", "++", "a..b", "my_registry.io/app", ""} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, image string, mutation bool) {
		cfg := Config{EnableDefaultRegistryMutation: mutation}
		info, err := Parse(image, cfg)
		if err != nil {
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("Parse(%q): %T %v", image, err, err)
			}
			return
		}
		if info.Path == "" || info.Name == "" || strings.HasSuffix(info.Path, "/") || (info.Tag == "" && info.Digest == "") {
			t.Fatalf("Parse(%q) = %+v", image, info)
		}
		if !mutation {
			return
		}
		back, err := Parse(info.String(), cfg)
		if err != nil {
			t.Fatalf("reference %q of %q does not parse: %v", info.String(), image, err)
		}
		if back.Registry != info.Registry || back.Path != info.Path || back.Digest != info.Digest || (info.Digest == "" && back.Tag != info.Tag) {
			t.Fatalf("%q -> %+v -> %q -> %+v", image, info, info.String(), back)
		}
	})
}
