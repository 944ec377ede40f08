package policytest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/gavelpolicy/gavel/engine"
)

// APICallResponse is one entry of a test's apiCallResponses: the response
// that a context.apiCall service call to URL (with Method, or any method
// when empty) receives instead of a network call.
type APICallResponse struct {
	URL      string          `json:"url"`
	Method   string          `json:"method,omitempty"`
	Response APICallMockBody `json:"response"`
}

// APICallMockBody is a mocked HTTP response.
type APICallMockBody struct {
	StatusCode int `json:"statusCode"`
	// Body is any JSON value.
	Body json.RawMessage `json:"body,omitempty"`
}

// mockCalls answers apiCall requests from a test's apiCallResponses:
// service calls (engine.ServiceCaller) by URL, and Kubernetes API calls
// (engine.APIClient) by urlPath, falling back to the test's cluster for
// paths no entry names.
type mockCalls []APICallResponse

// apiCalls is the engine.APIClient of a test with apiCallResponses.
type apiCalls struct {
	mocks    mockCalls
	fallback engine.APIClient
}

// RawAbsPath implements engine.APIClient.
func (a apiCalls) RawAbsPath(ctx context.Context, path, method string, body []byte) ([]byte, error) {
	if a.mocks.has(path) || a.fallback == nil {
		return a.mocks.Call(ctx, engine.ServiceRequest{URL: path, Method: method, Body: body})
	}
	return a.fallback.RawAbsPath(ctx, path, method, body)
}

func (m mockCalls) has(url string) bool {
	for i := range m {
		if m[i].URL == url {
			return true
		}
	}
	return false
}

// newMockCalls checks the entries as upstream does before any test runs:
// a URL, a status code between 100 and 599, a JSON body, and no two
// entries with the same method and URL.
func newMockCalls(entries []APICallResponse) (mockCalls, error) {
	seen := map[string]bool{}
	for i, m := range entries {
		if m.URL == "" {
			return nil, fmt.Errorf("apiCallResponses[%d]: url is required", i)
		}
		if c := m.Response.StatusCode; c < 100 || c > 599 {
			return nil, fmt.Errorf("apiCallResponses[%d]: invalid status code %d", i, c)
		}
		if len(m.Response.Body) > 0 && !json.Valid(m.Response.Body) {
			return nil, fmt.Errorf("apiCallResponses[%d]: body is not valid JSON", i)
		}
		key := strings.ToUpper(m.Method) + " " + m.URL
		if seen[key] {
			return nil, fmt.Errorf("apiCallResponses[%d]: duplicate mock for %s %s", i, m.Method, m.URL)
		}
		seen[key] = true
	}
	return mockCalls(entries), nil
}

// Call implements engine.ServiceCaller. An entry naming the request's
// method wins over one that names none; a status outside 2xx is an error
// carrying the body, as upstream's executor reports it.
func (m mockCalls) Call(_ context.Context, req engine.ServiceRequest) ([]byte, error) {
	method := strings.ToUpper(req.Method)
	if method == "" {
		method = http.MethodGet
	}
	var found *APICallResponse
	for i := range m {
		e := &m[i]
		if e.URL != req.URL {
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
		return nil, fmt.Errorf("no apiCallResponses entry for %s %s", method, req.URL)
	}
	body := []byte(found.Response.Body)
	if len(body) == 0 {
		body = []byte("null")
	}
	if c := found.Response.StatusCode; c < 200 || c >= 300 {
		return nil, fmt.Errorf("HTTP %d %s: %s", c, http.StatusText(c), body)
	}
	return body, nil
}
