package policytest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
)

// The hosts of Kyverno's CEL libraries in a test, as upstream's test
// command gives them (its "context provider"):
//
//   - without clusterResources (upstream's offline provider): the resource
//     library reads the context file's objects and the mutate-existing
//     targets only, image.GetMetadata the context's images only (an image
//     it does not list is an error);
//   - with clusterResources (upstream then reads its fake cluster as a
//     real one): the resource library reads the test's cluster (resources,
//     cluster resources and their CRDs, targets, parameter objects; not
//     the context file's objects, which gavel's classic rules see), and
//     image.GetMetadata the registries (Options.ImageData);
//   - globalContext.Get reads globalContextEntries (an entry no mock names
//     is null);
//   - http.Get and http.Post are answered by the apiCallResponses entry of
//     their method and URL, else of their URL, with upstream's mocked
//     response {"body": BODY, "statusCode": CODE}, even from a namespaced
//     policy; the other requests go to Options.HTTP (upstream's network),
//     except those of namespaced policies, refused as upstream refuses
//     them.
//
// Upstream ignores the mocks once clusterResources are given (its "real"
// provider has none); gavel answers them whenever a test gives them, as
// upstream's documentation describes them.
func (e *env) celLibraries(opts Options) (cel.Libraries, error) {
	libs := cel.Libraries{
		GlobalContext: e.gctx,
		// namespaced policies' calls are refused by celHTTP unless mocked
		AllowHTTPInNamespacedPolicies: true,
	}
	h, err := e.httpMocks(opts.HTTP)
	if err != nil {
		return cel.Libraries{}, err
	}
	libs.HTTP = h
	if len(e.t.ClusterResources) > 0 {
		libs.Resource = e.libCluster
		libs.ImageData = opts.ImageData
		if libs.ImageData == nil {
			libs.ImageData = noRegistry{}
		}
		return libs, nil
	}
	libs.Resource = inmem.New(append(append([]map[string]any(nil), e.ctxObjects...), e.targetObjects...)...)
	// image.GetMetadata reads the context file's images, as upstream's
	// CLI gives them
	libs.ImageData = e.images
	if e.images == nil {
		libs.ImageData = inmem.NewRegistry()
	}
	return libs, nil
}

// httpMocks returns the host of the http library: the apiCallResponses
// entries, then next for the requests of cluster-wide policies.
func (e *env) httpMocks(next cel.HTTPClient) (*inmem.HTTP, error) {
	h := inmem.NewHTTP()
	h.SetFallback(celHTTP{next: next})
	for i := range e.t.mocks.APICallResponses {
		m := &e.t.mocks.APICallResponses[i]
		code := m.Response.StatusCode
		if code == 0 {
			code = http.StatusOK
		}
		body := json.RawMessage(m.Response.Body)
		if len(body) == 0 {
			body = json.RawMessage("null")
		}
		data, err := json.Marshal(map[string]any{"body": body, "statusCode": code})
		if err != nil {
			return nil, fmt.Errorf("apiCallResponses[%d]: %w", i, err)
		}
		resp := cel.HTTPResponse{StatusCode: code, Body: data}
		h.Handle(strings.TrimSpace(m.Method), strings.TrimSpace(m.target()), func(cel.HTTPRequest) (cel.HTTPResponse, error) {
			return resp, nil
		})
	}
	return h, nil
}

// celHTTP sends the requests no mock answers: those of namespaced
// policies are refused, as upstream refuses them by default; the others
// go to next.
type celHTTP struct{ next cel.HTTPClient }

func (c celHTTP) Do(ctx context.Context, req cel.HTTPRequest) (cel.HTTPResponse, error) {
	switch {
	case req.Namespace != "":
		return cel.HTTPResponse{}, fmt.Errorf("%w: no apiCallResponses entry for %s %s", cel.ErrHTTPInNamespacedPolicy, req.Method, req.URL)
	case c.next == nil:
		return cel.HTTPResponse{}, fmt.Errorf("no apiCallResponses entry for %s %s, and no HTTP host for the others (policytest.Options.HTTP): %w",
			req.Method, req.URL, engine.ErrNotConfigured)
	}
	return c.next.Do(ctx, req)
}

// noRegistry is the image.GetMetadata host of a test with clusterResources
// when Options give none.
type noRegistry struct{}

func (noRegistry) ImageMetadata(context.Context, string) (map[string]any, error) {
	return nil, fmt.Errorf("a test with clusterResources reads image metadata from registries, and no registry host was given (policytest.Options.ImageData): %w", engine.ErrNotConfigured)
}
