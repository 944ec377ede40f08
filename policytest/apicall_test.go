package policytest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/engine"
)

func TestMockCallsValidation(t *testing.T) {
	ok := APICallMockBody{StatusCode: 200, Body: json.RawMessage(`{}`)}
	tests := []struct {
		name    string
		entries []APICallResponse
		err     string
	}{
		{"valid", []APICallResponse{{URL: "https://a", Response: ok}, {URL: "https://a", Method: "POST", Response: ok}}, ""},
		{"no url", []APICallResponse{{Response: ok}}, "url is required"},
		{"status", []APICallResponse{{URL: "https://a", Response: APICallMockBody{StatusCode: 600}}}, "invalid status code 600"},
		{"body", []APICallResponse{{URL: "https://a", Response: APICallMockBody{StatusCode: 200, Body: json.RawMessage(`{`)}}}, "not valid JSON"},
		{"duplicate", []APICallResponse{{URL: "https://a", Method: "get", Response: ok}, {URL: "https://a", Method: "GET", Response: ok}}, "duplicate mock"},
	}
	for _, tt := range tests {
		_, err := newMockCalls(tt.entries)
		if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.err)
		}
	}
}

func TestMockCallsCall(t *testing.T) {
	calls, err := newMockCalls([]APICallResponse{
		{URL: "https://a", Response: APICallMockBody{StatusCode: 200, Body: json.RawMessage(`"any"`)}},
		{URL: "https://a", Method: "POST", Response: APICallMockBody{StatusCode: 201, Body: json.RawMessage(`"post"`)}},
		{URL: "https://b", Response: APICallMockBody{StatusCode: 500, Body: json.RawMessage(`{"e":1}`)}},
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
