package dynclient

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/engine"
)

var _ engine.DryRunCreator = (*Client)(nil)

// DryRunCreate implements engine.DryRunCreator: the API server creates
// the object with dryRun=All (defaults and admission applied, nothing
// stored) and returns it, for validate.manifests rules with dryRun.
func (c *Client) DryRunCreate(ctx context.Context, obj map[string]any) (map[string]any, error) {
	u, ri, err := c.objectResource(obj)
	if err != nil {
		return nil, err
	}
	out, err := ri.Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return nil, err
	}
	return out.Object, nil
}
