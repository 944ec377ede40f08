package cluster

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/gavelpolicy/gavel/cluster/dynclient"
)

// Client is the engine.Client of generate rules, mutate-existing targets
// and CEL parameter objects on a dynamic client (see dynclient.Client).
type Client = dynclient.Client

// NewClient returns a Client on dyn that resolves kinds with mapper.
func NewClient(dyn dynamic.Interface, mapper meta.RESTMapper) *Client {
	return dynclient.New(dyn, mapper)
}

// APIClient is the engine.APIClient of apiCall context entries on a REST
// client (see dynclient.APIClient).
type APIClient = dynclient.APIClient

// NewAPIClient returns an APIClient on rc.
func NewAPIClient(rc rest.Interface) *APIClient { return dynclient.NewAPIClient(rc) }

func wrap(err error) error { return dynclient.WrapNotFound(err) }

func splitKind(s string) (group, version, kind string) { return dynclient.SplitKind(s) }
