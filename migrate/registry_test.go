package migrate

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	ggcr "github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/remote"
)

// gavelImages is a folder's images.yaml: the images its resources name,
// with the data its policy reads, served by an in-process registry.
type gavelImages struct {
	Images []gavelImage `json:"images"`
}

// gavelImage is one image: a random layer, and the config and manifest
// fields a policy reads.
type gavelImage struct {
	// Reference is the name the resources give, served as it is (any
	// registry resolves to the test's).
	Reference string `json:"reference"`
	// Annotations are the manifest's (org.opencontainers.image.base.name).
	Annotations map[string]string `json:"annotations,omitempty"`
	// Labels and Env are the config's (config.Labels, config.Env).
	Labels       map[string]string `json:"labels,omitempty"`
	Env          []string          `json:"env,omitempty"`
	Architecture string            `json:"architecture,omitempty"`
	OS           string            `json:"os,omitempty"`
}

// testRegistry is an in-process OCI registry that every registry name
// resolves to, and the client both sides of a verification read it with.
type testRegistry struct {
	srv    *httptest.Server
	Client *remote.Registry

	mu      sync.Mutex
	serving bool            // the images are pushed
	missing map[string]bool // manifests asked for and not served
}

// loadGavelImages starts a registry serving a folder's images; nil when
// the folder has no images.yaml.
func loadGavelImages(t *testing.T, folder string) *testRegistry {
	t.Helper()
	path := filepath.Join(gavelResourcesDir, folder, "images.yaml")
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var imgs gavelImages
	if err := yaml.UnmarshalStrict(raw, &imgs); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := &testRegistry{missing: map[string]bool{}}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	tr.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		reg.ServeHTTP(rec, r)
		if rec.status == http.StatusNotFound && strings.Contains(r.URL.Path, "/manifests/") {
			tr.mu.Lock()
			if tr.serving {
				tr.missing[r.URL.Path] = true
			}
			tr.mu.Unlock()
		}
	}))
	t.Cleanup(tr.srv.Close)
	rt := redirect{host: strings.TrimPrefix(tr.srv.URL, "https://"), next: tr.srv.Client().Transport}
	for _, im := range imgs.Images {
		if err := im.push(rt); err != nil {
			t.Fatalf("%s: %s: %v", path, im.Reference, err)
		}
	}
	tr.mu.Lock()
	tr.serving = true
	tr.mu.Unlock()
	tr.Client = remote.NewRegistry(remote.WithTransport(rt))
	return tr
}

// unserved lists the images the verification asked for that the folder's
// images.yaml does not give: both sides failing on them is no proof.
func (tr *testRegistry) unserved() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []string
	for p := range tr.missing {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// push writes the image under its reference.
func (im *gavelImage) push(rt http.RoundTripper) error {
	ref, err := name.ParseReference(im.Reference)
	if err != nil {
		return err
	}
	img, err := random.Image(64, 1)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = im.Architecture, im.OS
	if cf.Architecture == "" {
		cf.Architecture = "amd64"
	}
	if cf.OS == "" {
		cf.OS = "linux"
	}
	cf.Config.Labels, cf.Config.Env = im.Labels, im.Env
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return err
	}
	if len(im.Annotations) > 0 {
		img = mutate.Annotations(img, im.Annotations).(v1.Image)
	}
	return ggcr.Write(ref, img, ggcr.WithTransport(rt))
}

// redirect sends every request, whatever registry it names, to the test
// registry.
type redirect struct {
	host string
	next http.RoundTripper
}

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.Host = "https", r.host, r.host
	return r.next.RoundTrip(out)
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
