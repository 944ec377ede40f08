package main

import (
	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
	"github.com/gavelpolicy/gavel/remote"
)

// celNetwork is how Kyverno's CEL libraries reach the network in apply
// and test, where the upstream CLI's do: http.Get and http.Post to any
// URL but those of upstream's default blocklist (cloud metadata
// endpoints, loopback), image.GetMetadata from the registries with the
// local docker credentials. Which calls reach them is decided by the
// command (the context file, a test's mocks and clusterResources,
// --cluster), as upstream decides it.
type celNetwork struct {
	http   cel.HTTPClient
	images cel.ImageDataClient
}

func newCELNetwork() (celNetwork, error) {
	h, err := remote.NewHTTP()
	if err != nil {
		return celNetwork{}, err
	}
	return celNetwork{http: h, images: remote.NewRegistry(remote.WithKeychain(authn.DefaultKeychain))}, nil
}

// applyLibraries are the hosts of the CEL libraries of gavel apply, as
// upstream's apply gives them. Off a cluster the resource library reads
// the context file's objects and the mutate-existing targets only (named
// with the --crd-path CRDs), and
// image.GetMetadata its images only (an image it does not list is an
// error; --registry does not change this, as upstream); with --cluster
// they read the cluster (the engine's Client) and the registries, and the
// context file is not read. globalContext.Get is null whatever the name
// (upstream's apply gives its CEL libraries no GlobalContextEntry data),
// and http reaches the network (the calls of namespaced policies are
// refused).
func applyLibraries(live bool, ctxFile *loader.Context, crds, targets []map[string]any) (cel.Libraries, error) {
	n, err := newCELNetwork()
	if err != nil {
		return cel.Libraries{}, err
	}
	libs := cel.Libraries{HTTP: n.http, GlobalContext: inmem.NewGlobalContext()}
	if live {
		libs.ImageData = n.images
		return libs, nil
	}
	// the resource library reads the context file's objects and the
	// mutate-existing targets, as upstream's CLI gives them
	objs := append(append([]map[string]any(nil), crds...), targets...)
	reg := inmem.NewRegistry()
	if ctxFile != nil {
		objs = append(objs, ctxFile.Spec.Resources...)
		reg = ctxFile.Registry() // image.GetMetadata reads its images
	}
	libs.Resource, libs.ImageData = inmem.New(objs...), reg
	return libs, nil
}
