package policytest_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/policytest"
)

// TestFeatures runs the test files under testdata/features, one folder
// per feature of the upstream CLI's test format (values, foreachValues,
// operations, mocked API calls, mutate-existing targets, generated custom
// kinds): every row must pass in strict mode, and each file must produce
// at least a row per resource it lists.
func TestFeatures(t *testing.T) {
	files, err := policytest.Discover("", "testdata/features")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no test files")
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			tcs, err := policytest.LoadAll(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range tcs {
				rows, err := policytest.Run(context.Background(), tc, featureOptions(t))
				if err != nil {
					t.Fatal(err)
				}
				want := 0
				for _, r := range tc.Results {
					want += max(len(r.Resources), 1)
				}
				// a trigger gives a row per result of the rule (one per
				// mutate-existing target), so a resource may give several
				if len(rows) < want {
					t.Errorf("%s: %d rows, want at least %d", tc.TestName(), len(rows), want)
				}
				for _, r := range rows {
					if !r.Passed {
						t.Errorf("%s %s %s/%s: want %s, got %s: %s (%s)", r.Policy, r.Rule, r.Kind, r.Resource, r.Expected, r.Got, r.Reason, r.Message)
					}
				}
			}
		})
	}
}

// featureOptions run the features with a fake network: the CEL http
// library's host answers https://network.test/status, the registries
// ghcr.io/acme/net:1.
func featureOptions(t *testing.T) policytest.Options {
	net := inmem.NewHTTP()
	net.Handle("GET", "https://network.test/status", func(cel.HTTPRequest) (cel.HTTPResponse, error) {
		return cel.HTTPResponse{StatusCode: 200, Body: []byte(`{"up": true}`)}, nil
	})
	reg := inmem.NewRegistry()
	reg.SetMetadata("ghcr.io/acme/net:1", map[string]any{"image": "ghcr.io/acme/net:1", "config": map[string]any{"os": "linux"}})
	return policytest.Options{Strict: true, HTTP: net, ImageData: reg}
}
