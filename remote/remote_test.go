package remote_test

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	ggcr "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/remote"
)

func TestRegistryImageData(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ref, err := name.ParseReference(host+"/team/app:1.0", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := ggcr.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	digest, _ := img.Digest()

	r := remote.NewRegistry()
	data, err := r.ImageData(context.Background(), host+"/team/app:1.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	if data["registry"] != host || data["repository"] != "team/app" || data["identifier"] != "1.0" {
		t.Errorf("unexpected image data %v", data)
	}
	if data["resolvedImage"] != host+"/team/app@"+digest.String() {
		t.Errorf("resolvedImage = %v", data["resolvedImage"])
	}
	if _, ok := data["manifest"].(map[string]any)["layers"]; !ok {
		t.Errorf("manifest has no layers: %v", data["manifest"])
	}
	if _, ok := data["configData"].(map[string]any); !ok {
		t.Errorf("configData missing: %v", data["configData"])
	}
	if _, err := r.ImageData(context.Background(), host+"/team/missing:1", nil); err == nil {
		t.Error("expected an error for a missing image")
	}
	if _, err := r.ImageData(context.Background(), "UPPER/case", nil); err == nil {
		t.Error("expected an error for an invalid reference")
	}
}

func TestServicesCall(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Token") != "t" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"method":%q}`, r.Method)
	}))
	defer srv.Close()
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	s := remote.NewServices(5*time.Second, 1024)
	out, err := s.Call(context.Background(), engine.ServiceRequest{URL: srv.URL, Method: "POST", CABundle: ca, Headers: map[string]string{"X-Token": "t"}, Body: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"method":"POST"}` {
		t.Errorf("body = %s", out)
	}
	if _, err := s.Call(context.Background(), engine.ServiceRequest{URL: srv.URL, CABundle: ca}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("want HTTP 401 error, got %v", err)
	}
	if _, err := s.Call(context.Background(), engine.ServiceRequest{URL: srv.URL}); err == nil {
		t.Error("want a TLS error without the caBundle")
	}
	small := remote.NewServices(time.Second, 4)
	if _, err := small.Call(context.Background(), engine.ServiceRequest{URL: srv.URL, CABundle: ca, Headers: map[string]string{"X-Token": "t"}}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("want a size error, got %v", err)
	}
}
