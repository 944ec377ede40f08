package inmem_test

import (
	"context"
	"fmt"

	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/inmem"
)

// Mocked responses of the CEL http library in front of another host, as
// the upstream CLI answers http.Get from a test's apiCallResponses and
// sends the other requests to the network (remote.HTTP in a real host).
func ExampleHTTP_SetFallback() {
	network := inmem.NewHTTP()
	network.Handle("", "https://status.example.com/", func(cel.HTTPRequest) (cel.HTTPResponse, error) {
		return cel.HTTPResponse{StatusCode: 503, Body: []byte(`{"up":false}`)}, nil
	})
	mocks := inmem.NewHTTP()
	mocks.Handle("GET", "https://config.example.com/", func(cel.HTTPRequest) (cel.HTTPResponse, error) {
		return cel.HTTPResponse{StatusCode: 200, Body: []byte(`{"allowed":true}`)}, nil
	})
	mocks.SetFallback(network)
	for _, url := range []string{"https://config.example.com/", "https://status.example.com/"} {
		resp, err := mocks.Do(context.Background(), cel.HTTPRequest{Method: "GET", URL: url})
		fmt.Println(url, resp.StatusCode, string(resp.Body), err)
	}
	// Output:
	// https://config.example.com/ 200 {"allowed":true} <nil>
	// https://status.example.com/ 503 {"up":false} <nil>
}

// Image metadata for image.GetMetadata set as it is, as the upstream CLI
// gives it from a context file (loader.Context.Registry).
func ExampleRegistry_SetMetadata() {
	reg := inmem.NewRegistry()
	reg.SetMetadata("ghcr.io/acme/app:v1", map[string]any{"image": "ghcr.io/acme/app:v1", "tag": "v1"})
	md, err := reg.ImageMetadata(context.Background(), "ghcr.io/acme/app:v1")
	fmt.Println(md, err)
	_, err = reg.ImageMetadata(context.Background(), "ghcr.io/acme/app:v2")
	fmt.Println(err)
	// Output:
	// map[image:ghcr.io/acme/app:v1 tag:v1] <nil>
	// image ghcr.io/acme/app:v2: not found
}
