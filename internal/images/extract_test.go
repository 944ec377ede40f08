package images

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/extract")

type extractCase struct {
	Config *struct {
		DefaultRegistry               string                       `json:"defaultRegistry"`
		EnableDefaultRegistryMutation *bool                        `json:"enableDefaultRegistryMutation"`
		Extractors                    map[string][]extractorConfig `json:"extractors"`
	} `json:"config"`
	Resource map[string]any `json:"resource"`
}

type extractorConfig struct {
	Path     string `json:"path"`
	Value    string `json:"value"`
	Name     string `json:"name"`
	Key      string `json:"key"`
	JMESPath string `json:"jmesPath"`
}

// golden is what a case produces: the images variable, the pointers and pull
// secrets that the variable does not show, or the error.
type golden struct {
	Images  map[string]any      `json:"images,omitempty"`
	Details map[string][]string `json:"details,omitempty"`
	Error   string              `json:"error,omitempty"`
}

func (c extractCase) config() Config {
	cfg := DefaultConfig()
	if c.Config == nil {
		return cfg
	}
	if c.Config.DefaultRegistry != "" {
		cfg.DefaultRegistry = c.Config.DefaultRegistry
	}
	if c.Config.EnableDefaultRegistryMutation != nil {
		cfg.EnableDefaultRegistryMutation = *c.Config.EnableDefaultRegistryMutation
	}
	if c.Config.Extractors != nil {
		cfg.Extractors = map[string][]ExtractorConfig{}
		for kind, list := range c.Config.Extractors {
			out := []ExtractorConfig{}
			for _, e := range list {
				out = append(out, ExtractorConfig(e))
			}
			cfg.Extractors[kind] = out
		}
	}
	return cfg
}

// TestExtractGolden runs every testdata/extract/*.yaml case and compares the
// result with its .golden.json file (go test -update rewrites them).
func TestExtractGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/extract/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatal("no cases", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var c extractCase
			if err := yaml.UnmarshalStrict(raw, &c); err != nil {
				t.Fatal(err)
			}
			before, _ := json.Marshal(c.Resource)
			var got golden
			infos, err := Extract(c.Resource, c.config())
			if err != nil {
				got.Error = err.Error()
			} else {
				got.Images = Variable(infos)
				got.Details = map[string][]string{}
				for kind, byName := range infos {
					for key, info := range byName {
						got.Details[kind+"/"+key] = append([]string{info.Pointer}, info.ImagePullSecrets...)
					}
				}
			}
			after, _ := json.Marshal(c.Resource)
			if string(before) != string(after) {
				t.Fatal("Extract modified the resource")
			}
			out, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, '\n')
			goldenFile := strings.TrimSuffix(file, ".yaml") + ".golden.json"
			if *update {
				if err := os.WriteFile(goldenFile, out, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(goldenFile)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if string(want) != string(out) {
				t.Errorf("%s differs:\n--- got\n%s--- want\n%s", goldenFile, out, want)
			}
		})
	}
}

// TestSeedVariablesImagesInfo checks the annotations of the seed case
// variables-images-info, computed from the images variable.
func TestSeedVariablesImagesInfo(t *testing.T) {
	pod := map[string]any{
		"kind": "Pod",
		"spec": map[string]any{
			"initContainers": []any{map[string]any{"name": "vault", "image": "ghcr.io/vault:v3"}},
			"containers": []any{
				map[string]any{"name": "nginx", "image": "docker.io/library/nginx@" + digest},
				map[string]any{"name": "plain", "image": "busybox"},
			},
		},
	}
	infos, err := Extract(pod, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	v := Variable(infos)
	get := func(kind, name, field string) any {
		return v[kind].(map[string]any)[name].(map[string]any)[field]
	}
	want := map[string]string{
		"containers.nginx.registry":             "docker.io",
		"containers.nginx.path":                 "library/nginx",
		"containers.nginx.name":                 "nginx",
		"containers.nginx.digest":               digest,
		"containers.nginx.reference":            "docker.io/library/nginx@" + digest,
		"containers.nginx.referenceWithTag":     "docker.io/library/nginx:",
		"containers.plain.registry":             "docker.io",
		"containers.plain.path":                 "busybox",
		"containers.plain.tag":                  "latest",
		"containers.plain.reference":            "docker.io/busybox:latest",
		"initContainers.vault.registry":         "ghcr.io",
		"initContainers.vault.path":             "vault",
		"initContainers.vault.name":             "vault",
		"initContainers.vault.tag":              "v3",
		"initContainers.vault.reference":        "ghcr.io/vault:v3",
		"initContainers.vault.referenceWithTag": "ghcr.io/vault:v3",
	}
	for path, w := range want {
		p := strings.Split(path, ".")
		if got := get(p[0], p[1], p[2]); got != w {
			t.Errorf("images.%s = %v, want %q", path, got, w)
		}
	}
	// tag is absent for a digest-only image: `images.containers.nginx.tag || ''` is ''.
	if _, ok := v["containers"].(map[string]any)["nginx"].(map[string]any)["tag"]; ok {
		t.Error("digest-only image has a tag entry")
	}
}

func TestExtractErrors(t *testing.T) {
	pod := func(image any) map[string]any {
		return map[string]any{"kind": "Pod", "spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": image}}}}
	}
	_, err := Extract(pod("Bad Image"), DefaultConfig())
	var e *Error
	var pe *ParseError
	if !errors.As(err, &e) || e.Pointer != "/spec/containers/0/image" || e.Image != "Bad Image" || !errors.As(err, &pe) {
		t.Fatalf("err = %#v", err)
	}
	if !errors.Is(err, ErrReferenceInvalidFormat) {
		t.Errorf("err does not wrap ErrReferenceInvalidFormat: %v", err)
	}
	// A non-string image is skipped, as upstream ("image information is not present").
	infos, err := Extract(pod(5), DefaultConfig())
	if err != nil || len(infos) != 0 {
		t.Errorf("non-string image: %v, %v", infos, err)
	}
	// A path naming no field cannot be compiled.
	_, err = NewExtractor(Config{Extractors: map[string][]ExtractorConfig{"X": {{Path: " / "}}}})
	if !errors.As(err, &e) || e.Pointer != "imageExtractors.X[0].path" {
		t.Errorf("empty path: %v", err)
	}
	// The JMESPath compiler hook is used, and its errors are reported when an image is found.
	calls := 0
	cfg := Config{
		Extractors: map[string][]ExtractorConfig{"Thing": {{Path: "/spec/image", JMESPath: "custom()"}}},
		CompileJMESPath: func(expr string) (Searcher, error) {
			calls++
			return searcherFunc(func(data any) (any, error) { return "ghcr.io/" + data.(string), nil }), nil
		},
		EnableDefaultRegistryMutation: true,
	}
	x, err := NewExtractor(cfg)
	if err != nil || calls != 1 {
		t.Fatalf("NewExtractor: %v, %d calls", err, calls)
	}
	got, err := x.Extract(map[string]any{"kind": "Thing", "spec": map[string]any{"image": "acme/app"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]Info{"custom": {"/spec/image": {Registry: "ghcr.io", Path: "acme/app", Name: "app", Tag: "latest", Pointer: "/spec/image"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v", got)
	}
}

type searcherFunc func(any) (any, error)

func (f searcherFunc) Search(data any) (any, error) { return f(data) }

func TestVariableEmpty(t *testing.T) {
	if v := Variable(nil); v != nil {
		t.Errorf("Variable(nil) = %v", v)
	}
	if v := Variable(map[string]map[string]Info{"containers": {}}); v != nil {
		t.Errorf("Variable(empty kinds) = %v", v)
	}
}

func TestExtractorConcurrent(t *testing.T) {
	x, err := NewExtractor(Config{
		DefaultRegistry:               "docker.io",
		EnableDefaultRegistryMutation: true,
		Extractors: map[string][]ExtractorConfig{
			"Thing": {{Path: "/spec/image", JMESPath: "split(@, '//')[1]"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := map[string]any{"kind": "Pod", "spec": map[string]any{
		"imagePullSecrets": []any{map[string]any{"name": "s"}},
		"containers":       []any{map[string]any{"name": "a", "image": "nginx"}, map[string]any{"name": "b", "image": "ghcr.io/x/y:1"}},
	}}
	thing := map[string]any{"kind": "Thing", "spec": map[string]any{"image": "docker://quay.io/a/b"}}
	want1, _ := x.Extract(pod)
	want2, _ := x.Extract(thing)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				got1, err1 := x.Extract(pod)
				got2, err2 := x.Extract(thing)
				if err1 != nil || err2 != nil || !reflect.DeepEqual(got1, want1) || !reflect.DeepEqual(got2, want2) {
					t.Errorf("concurrent extraction differs: %v %v", err1, err2)
					return
				}
			}
		}()
	}
	wg.Wait()
}
