package policytest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/engine"
)

func TestMockCallsValidation(t *testing.T) {
	ok := apiCallMockBody{StatusCode: 200, Body: json.RawMessage(`{}`)}
	tests := []struct {
		name    string
		entries []apiCallResponse
		err     string
	}{
		{"valid", []apiCallResponse{{URL: "https://a", Response: ok}, {URL: "https://a", Method: "POST", Response: ok}}, ""},
		{"path", []apiCallResponse{{URLPath: "/api/v1/namespaces", Response: ok}, {URL: "https://a", Response: apiCallMockBody{Body: json.RawMessage(`[1]`)}}}, ""},
		{"no url", []apiCallResponse{{Response: ok}}, "either url or urlPath is required"},
		{"both", []apiCallResponse{{URL: "https://a", URLPath: "/a", Response: ok}}, "mutually exclusive"},
		{"relative url", []apiCallResponse{{URL: "/api/v1", Response: ok}}, "absolute https/http URL"},
		{"relative path", []apiCallResponse{{URLPath: "api/v1", Response: ok}}, "absolute path"},
		{"method", []apiCallResponse{{URL: "https://a", Method: "PUT", Response: ok}}, "GET or POST"},
		{"status", []apiCallResponse{{URL: "https://a", Response: apiCallMockBody{StatusCode: 600}}}, "invalid status code 600"},
		{"body", []apiCallResponse{{URL: "https://a", Response: apiCallMockBody{StatusCode: 200, Body: json.RawMessage(`{`)}}}, "not valid JSON"},
		{"duplicate", []apiCallResponse{{URL: "https://a", Method: "get", Response: ok}, {URL: "https://a", Method: "GET", Response: ok}}, "duplicate mock"},
	}
	for _, tt := range tests {
		_, err := newMockCalls(tt.entries)
		if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.err)
		}
	}
}

func TestMockCallsCall(t *testing.T) {
	calls, err := newMockCalls([]apiCallResponse{
		{URL: "https://a", Response: apiCallMockBody{StatusCode: 200, Body: json.RawMessage(`"any"`)}},
		{URL: "https://a", Method: "POST", Response: apiCallMockBody{StatusCode: 201, Body: json.RawMessage(`"post"`)}},
		{URL: "https://b", Response: apiCallMockBody{StatusCode: 500, Body: json.RawMessage(`{"e":1}`)}},
		{URLPath: "/api/v1/x", Response: apiCallMockBody{Body: json.RawMessage(`{"k":1}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		url, method, body, err string
	}{
		{"https://a", "GET", `"any"`, ""},
		{"https://a", "", `"any"`, ""},
		{"https://a", "POST", `"post"`, ""},
		{"https://b", "GET", "", `HTTP 500 Internal Server Error: {"e":1}`},
		{"https://c", "GET", "", "no apiCallResponses entry for GET https://c"},
		// a urlPath entry answers Kubernetes API calls only
		{"/api/v1/x", "GET", "", "no apiCallResponses entry for GET /api/v1/x"},
	}
	for _, tt := range tests {
		got, err := calls.Call(context.Background(), engine.ServiceRequest{URL: tt.url, Method: tt.method})
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%s %s: error %v, want %q", tt.method, tt.url, err, tt.err)
			}
			continue
		}
		if err != nil || string(got) != tt.body {
			t.Errorf("%s %s: %s, %v; want %s", tt.method, tt.url, got, err, tt.body)
		}
	}
}

func TestMockCallsPath(t *testing.T) {
	calls, err := newMockCalls([]apiCallResponse{
		{URLPath: "/api/v1/x", Response: apiCallMockBody{Body: json.RawMessage(`{"k":1}`)}},
		{URL: "https://a/api/v1/y", Response: apiCallMockBody{Body: json.RawMessage(`{}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := apiCalls{mocks: calls}
	if got, err := a.RawAbsPath(context.Background(), "/api/v1/x", "GET", nil); err != nil || string(got) != `{"k":1}` {
		t.Errorf("/api/v1/x: %s, %v", got, err)
	}
	if _, err := a.RawAbsPath(context.Background(), "/api/v1/y", "GET", nil); err == nil {
		t.Error("/api/v1/y answered by a url entry")
	}
}
