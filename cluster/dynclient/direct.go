package dynclient

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/gavelpolicy/gavel/engine"
)

// Client also reads ConfigMaps and namespace labels on each call, without
// informers: for one-shot hosts such as the CLI's --cluster runs, where
// starting a Host's informers would cost more than the reads.
var (
	_ engine.ConfigMapResolver = (*Client)(nil)
	_ engine.NamespaceLabeler  = (*Client)(nil)
)

// GetConfigMap implements engine.ConfigMapResolver with a GET; a missing
// ConfigMap is an error wrapping engine.ErrNotFound.
func (c *Client) GetConfigMap(ctx context.Context, namespace, name string) (map[string]any, error) {
	return c.Get(ctx, "v1", "ConfigMap", namespace, name)
}

// NamespaceLabels implements engine.NamespaceLabeler with a GET of the
// Namespace; a missing one is an error wrapping engine.ErrNotFound.
func (c *Client) NamespaceLabels(ctx context.Context, namespace string) (map[string]string, error) {
	ns, err := c.Get(ctx, "v1", "Namespace", "", namespace)
	if err != nil {
		return nil, err
	}
	md, _ := ns["metadata"].(map[string]any)
	raw, _ := md["labels"].(map[string]any)
	labels := make(map[string]string, len(raw))
	for k, v := range raw {
		if s, ok := v.(string); ok {
			labels[k] = s
		}
	}
	return labels, nil
}

// APIClient implements engine.APIClient (apiCall context entries) on a
// REST client: GET, or POST with a JSON body, on an absolute path such as
// "/api/v1/namespaces/default/pods".
type APIClient struct{ rc rest.Interface }

var _ engine.APIClient = (*APIClient)(nil)

// NewAPIClient returns an APIClient on rc (a discovery client's
// RESTClient serves every path of the API server).
func NewAPIClient(rc rest.Interface) *APIClient { return &APIClient{rc: rc} }

// RawAbsPath implements engine.APIClient.
func (a *APIClient) RawAbsPath(ctx context.Context, path, method string, body []byte) ([]byte, error) {
	if a == nil || a.rc == nil {
		return nil, fmt.Errorf("cluster: REST client %w", engine.ErrNotConfigured)
	}
	var req *rest.Request
	switch method {
	case "", "GET":
		req = a.rc.Get()
	case "POST":
		req = a.rc.Post().Body(body).SetHeader("Content-Type", "application/json")
	default:
		return nil, fmt.Errorf("cluster: method %s not supported", method)
	}
	out, err := req.AbsPath(path).DoRaw(ctx)
	if err != nil {
		return nil, WrapNotFound(err)
	}
	return out, nil
}
