package policytest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/gavelpolicy/gavel/engine"
)

// apiCallResponse is one entry of a test's apiCallResponses: the response
// that a context.apiCall receives instead of a call, for a service call to
// URL or a Kubernetes API call to URLPath (one of them), with Method (GET
// or POST; any method when empty).
type apiCallResponse struct {
	URL      string          `json:"url,omitempty"`
	URLPath  string          `json:"urlPath,omitempty"`
	Method   string          `json:"method,omitempty"`
	Response apiCallMockBody `json:"response"`
}

// apiCallMockBody is a mocked HTTP response.
type apiCallMockBody struct {
	// StatusCode is the HTTP status, 200 when zero.
	StatusCode int `json:"statusCode,omitempty"`
	// Body is any JSON value.
	Body json.RawMessage `json:"body,omitempty"`
}

// target is the URL or path the entry answers.
func (r *apiCallResponse) target() string {
	if r.URL != "" {
		return r.URL
	}
	return r.URLPath
}

// check validates an entry as upstream does before a test runs.
func (r *apiCallResponse) check() error {
	switch {
	case r.URL == "" && r.URLPath == "":
		return fmt.Errorf("either url or urlPath is required")
	case r.URL != "" && r.URLPath != "":
		return fmt.Errorf("url and urlPath are mutually exclusive")
	case r.URL != "":
		u, err := url.Parse(r.URL)
		if err != nil {
			return fmt.Errorf("url %q is not a valid URL: %w", r.URL, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			return fmt.Errorf("url %q must be an absolute https/http URL", r.URL)
		}
	case !strings.HasPrefix(r.URLPath, "/"):
		return fmt.Errorf("urlPath %q must be an absolute path starting with '/'", r.URLPath)
	}
	if m := strings.ToUpper(r.Method); m != "" && m != http.MethodGet && m != http.MethodPost {
		return fmt.Errorf("method must be GET or POST")
	}
	if c := r.Response.StatusCode; c != 0 && (c < 100 || c > 599) {
		return fmt.Errorf("invalid status code %d: must be between 100 and 599", c)
	}
	if len(r.Response.Body) > 0 && !json.Valid(r.Response.Body) {
		return fmt.Errorf("response.body is not valid JSON")
	}
	return nil
}

// mockCalls answers apiCall requests from a test's apiCallResponses:
// service calls (engine.ServiceCaller) by URL, and Kubernetes API calls
// (engine.APIClient) by urlPath, falling back to the test's cluster for
// paths no entry names.
type mockCalls []apiCallResponse

// apiCalls is the engine.APIClient of a test with apiCallResponses.
type apiCalls struct {
	mocks    mockCalls
	fallback engine.APIClient
}

// RawAbsPath implements engine.APIClient.
func (a apiCalls) RawAbsPath(ctx context.Context, path, method string, body []byte) ([]byte, error) {
	if a.mocks.hasPath(path) || a.fallback == nil {
		return a.mocks.answer(path, true, method)
	}
	return a.fallback.RawAbsPath(ctx, path, method, body)
}

func (m mockCalls) hasPath(path string) bool {
	for i := range m {
		if m[i].URLPath == path {
			return true
		}
	}
	return false
}

// newMockCalls checks the entries before any test runs: each as
// upstream checks it, and no two with the same method and URL.
func newMockCalls(entries []apiCallResponse) (mockCalls, error) {
	seen := map[string]bool{}
	for i := range entries {
		m := &entries[i]
		if err := m.check(); err != nil {
			return nil, fmt.Errorf("apiCallResponses[%d]: %w", i, err)
		}
		key := strings.ToUpper(m.Method) + " " + m.target()
		if seen[key] {
			return nil, fmt.Errorf("apiCallResponses[%d]: duplicate mock for %s %s", i, m.Method, m.target())
		}
		seen[key] = true
	}
	return mockCalls(entries), nil
}

// Call implements engine.ServiceCaller: the entry of the request's URL.
func (m mockCalls) Call(_ context.Context, req engine.ServiceRequest) ([]byte, error) {
	return m.answer(req.URL, false, req.Method)
}

// answer returns the body of the entry for url (a urlPath when path is
// set) and method. An entry naming the method wins over one that names
// none; a status outside 2xx is an error carrying the body, as upstream's
// executor reports it.
func (m mockCalls) answer(target string, path bool, method string) ([]byte, error) {
	method = strings.ToUpper(method)
	if method == "" {
		method = http.MethodGet
	}
	var found *apiCallResponse
	for i := range m {
		e := &m[i]
		if (path && e.URLPath != target) || (!path && e.URL != target) {
			continue
		}
		if strings.EqualFold(e.Method, method) {
			found = e
			break
		}
		if e.Method == "" && found == nil {
			found = e
		}
	}
	if found == nil {
		return nil, fmt.Errorf("no apiCallResponses entry for %s %s", method, target)
	}
	body := []byte(found.Response.Body)
	if len(body) == 0 {
		body = []byte("null")
	}
	c := found.Response.StatusCode
	if c == 0 {
		c = http.StatusOK
	}
	if c < 200 || c >= 300 {
		return nil, fmt.Errorf("HTTP %d %s: %s", c, http.StatusText(c), body)
	}
	return body, nil
}
