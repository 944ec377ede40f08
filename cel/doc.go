// Package cel holds the host side of Kyverno's CEL libraries, the
// functions the CEL policy kinds (ValidatingPolicy, MutatingPolicy,
// ImageValidatingPolicy, GeneratingPolicy, DeletingPolicy) call to reach
// the world: resource.Get/List/Post read and create cluster objects
// (ResourceClient), http.Get/Post send requests (HTTPClient),
// image.GetMetadata reads registries (ImageDataClient) and
// globalContext.Get reads GlobalContextEntries (GlobalContextReader).
//
// A host gives the engine its implementations in a Libraries
// (engine.WithCELLibraries); inmem has in-memory ones for tests, remote
// the network's, the cluster module the API server's. A library whose host
// is missing fails the calls with an error that matches ErrNotConfigured.
//
// The CEL compiler and evaluator are the engine's (internal); policies
// reach them through engine.Engine.Compile.
package cel
