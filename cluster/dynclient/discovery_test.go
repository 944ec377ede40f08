package dynclient

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/gavelpolicy/gavel/engine"
)

// discoveryServer serves discovery documents: the core group with a
// cluster-scoped kind and a subresource, apps whose preferred version is
// not the first one listed (and whose older version alone serves
// "oldthings"), and a group whose version answers 404. It records the
// paths read.
type discoveryServer struct {
	mu    sync.Mutex
	paths []string
}

func (s *discoveryServer) read() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.paths)
}

func res(name, kind string, namespaced bool) metav1.APIResource {
	return metav1.APIResource{Name: name, Kind: kind, Namespaced: namespaced, Verbs: metav1.Verbs{"get", "list"}}
}

func newDiscoveryServer(t *testing.T) (*discoveryServer, rest.Interface) {
	t.Helper()
	gv := func(g, v string) metav1.GroupVersionForDiscovery {
		return metav1.GroupVersionForDiscovery{GroupVersion: g + "/" + v, Version: v}
	}
	docs := map[string]any{
		"/api": metav1.APIVersions{Versions: []string{"v1"}},
		"/apis": metav1.APIGroupList{Groups: []metav1.APIGroup{
			{Name: "apps", Versions: []metav1.GroupVersionForDiscovery{gv("apps", "v1beta1"), gv("apps", "v1")}, PreferredVersion: gv("apps", "v1")},
			{Name: "broken.example.com", Versions: []metav1.GroupVersionForDiscovery{gv("broken.example.com", "v1")}, PreferredVersion: gv("broken.example.com", "v1")},
		}},
		"/api/v1": metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{
			res("pods", "Pod", true), res("pods/status", "Pod", true), res("namespaces", "Namespace", false),
		}},
		"/apis/apps/v1": metav1.APIResourceList{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			res("deployments", "Deployment", true), res("deployments/scale", "Scale", true),
		}},
		"/apis/apps/v1beta1": metav1.APIResourceList{GroupVersion: "apps/v1beta1", APIResources: []metav1.APIResource{
			res("deployments", "Deployment", true), res("oldthings", "OldThing", true),
		}},
	}
	ds := &discoveryServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ds.mu.Lock()
		ds.paths = append(ds.paths, r.URL.Path)
		ds.mu.Unlock()
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(srv.Close)
	rc, err := NewRESTClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return ds, rc
}

func summary(lists []*metav1.APIResourceList) []string {
	var out []string
	for _, l := range lists {
		for _, r := range l.APIResources {
			out = append(out, l.GroupVersion+" "+r.Name)
		}
	}
	return out
}

func TestPreferredResources(t *testing.T) {
	_, rc := newDiscoveryServer(t)
	d := NewDiscovery(rc)
	lists, err := d.PreferredResources(t.Context(), nil)
	if err == nil || !strings.Contains(err.Error(), "broken.example.com/v1") {
		t.Errorf("err = %v, want the 404 group named", err)
	}
	want := []string{"v1 pods", "v1 namespaces", "apps/v1 deployments", "apps/v1beta1 oldthings"}
	if got := summary(lists); !slices.Equal(got, want) {
		t.Errorf("resources = %v, want %v", got, want)
	}
}

func TestPreferredResourcesLazy(t *testing.T) {
	ds, rc := newDiscoveryServer(t)
	d := NewDiscovery(rc)
	lists, err := d.PreferredResources(t.Context(), func(g string) bool { return g == "apps" })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summary(lists), []string{"apps/v1 deployments", "apps/v1beta1 oldthings"}; !slices.Equal(got, want) {
		t.Errorf("resources = %v, want %v", got, want)
	}
	// again: nothing is read twice
	if _, err := d.PreferredResources(t.Context(), func(g string) bool { return g == "apps" }); err != nil {
		t.Fatal(err)
	}
	if got, want := ds.read(), []string{"/api", "/apis", "/apis/apps/v1", "/apis/apps/v1beta1"}; !slices.Equal(got, want) {
		t.Errorf("read %v, want %v", got, want)
	}
}

func TestMapper(t *testing.T) {
	ds, rc := newDiscoveryServer(t)
	m := NewMapper(t.Context(), NewDiscovery(rc))
	for _, tt := range []struct {
		gk       schema.GroupKind
		versions []string
		resource string
		scope    meta.RESTScopeName
	}{
		{schema.GroupKind{Kind: "Pod"}, []string{"v1"}, "/v1, Resource=pods", meta.RESTScopeNameNamespace},
		{schema.GroupKind{Kind: "Namespace"}, nil, "/v1, Resource=namespaces", meta.RESTScopeNameRoot},
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, nil, "apps/v1, Resource=deployments", meta.RESTScopeNameNamespace},
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, []string{"v1beta1"}, "apps/v1beta1, Resource=deployments", meta.RESTScopeNameNamespace},
		{schema.GroupKind{Group: "apps", Kind: "OldThing"}, nil, "apps/v1beta1, Resource=oldthings", meta.RESTScopeNameNamespace},
	} {
		rm, err := m.RESTMapping(tt.gk, tt.versions...)
		if err != nil {
			t.Errorf("RESTMapping(%v, %v): %v", tt.gk, tt.versions, err)
			continue
		}
		if rm.Resource.String() != tt.resource || rm.Scope.Name() != tt.scope {
			t.Errorf("RESTMapping(%v, %v) = %v %v, want %v %v", tt.gk, tt.versions, rm.Resource, rm.Scope.Name(), tt.resource, tt.scope)
		}
	}
	if _, err := m.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Scale"}); !meta.IsNoMatchError(err) {
		t.Errorf("subresource kind: err = %v, want no match", err)
	}
	if _, err := m.RESTMapping(schema.GroupKind{Group: "broken.example.com", Kind: "Thing"}, "v1"); !meta.IsNoMatchError(err) {
		t.Errorf("404 group: err = %v, want no match", err)
	}
	want := []string{"/api", "/apis", "/api/v1", "/apis/apps/v1", "/apis/apps/v1beta1", "/apis/broken.example.com/v1"}
	if got := ds.read(); !slices.Equal(got, want) {
		t.Errorf("read %v, want %v (each group once, when asked about)", got, want)
	}
	m.Reset()
	if _, err := m.RESTMapping(schema.GroupKind{Kind: "Pod"}); err != nil {
		t.Fatal(err)
	}
	if got := ds.read(); len(got) != len(want)+3 {
		t.Errorf("after Reset read %v, want /api, /apis and /api/v1 again", got[len(want):])
	}
	if r, err := m.ResourceFor(schema.GroupVersionResource{Resource: "oldthings"}); err != nil || r.String() != "apps/v1beta1, Resource=oldthings" {
		t.Errorf("ResourceFor(oldthings) = %v, %v", r, err)
	}
}

// TestAPIClientOnRESTClient checks apiCall reads through NewRESTClient:
// the raw body of a GET, a POST's body and content type, and a 404 as
// engine.ErrNotFound (DoRaw does not decode the Status: the message is
// client-go's generic one, as with the discovery client's REST client).
func TestAPIClientOnRESTClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/namespaces/team/configmaps":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"kind":"ConfigMapList","items":[]}`))
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"method":"` + r.Method + `","type":"` + r.Header.Get("Content-Type") + `","body":` + string(body) + `}`))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"not there"}`))
		}
	}))
	defer srv.Close()
	rc, err := NewRESTClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	a := NewAPIClient(rc)
	out, err := a.RawAbsPath(t.Context(), "/api/v1/namespaces/team/configmaps", "GET", nil)
	if err != nil || string(out) != `{"kind":"ConfigMapList","items":[]}` {
		t.Errorf("GET = %s, %v", out, err)
	}
	out, err = a.RawAbsPath(t.Context(), "/apis/authorization.k8s.io/v1/subjectaccessreviews", "POST", []byte(`{"a":1}`))
	if want := `{"method":"POST","type":"application/json","body":{"a":1}}`; err != nil || string(out) != want {
		t.Errorf("POST = %s, %v; want %s", out, err, want)
	}
	_, err = a.RawAbsPath(t.Context(), "/api/v1/nothing", "GET", nil)
	if !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("404: err = %v, want engine.ErrNotFound", err)
	}
}
